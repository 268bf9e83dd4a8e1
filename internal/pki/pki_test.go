package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// TestSignRequest: a node's certificate request is signed into a chain that
// verifies against the CA, names the requested hosts, serves and dials TLS, and
// the node key never leaves the node (the chain matches the requester's key).
func TestSignRequest(t *testing.T) {
	ca := newCA(t)
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	csrPEM, err := NewCSR(key, []string{"node-2.example", "10.0.0.2", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	csr, err := ParseCSR(csrPEM)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	chainPEM, err := ca.Sign(csr, now)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := ParseCertificates(chainPEM)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != 2 || FingerprintOf(chain[1]) != ca.Fingerprint() {
		t.Fatalf("chain has %d certificates, want the node's and the CA's", len(chain))
	}
	leaf := chain[0]
	if err := ca.Verify(chain, now); err != nil {
		t.Fatalf("node certificate does not verify against the CA: %v", err)
	}
	if leaf.Subject.CommonName != NodeCommonName || leaf.IsCA {
		t.Errorf("subject %q, CA %v", leaf.Subject, leaf.IsCA)
	}
	if r := NeedsRenewal(leaf, []string{"node-2.example", "10.0.0.2"}, now); r != "" {
		t.Errorf("a fresh certificate needs renewal: %s", r)
	}
	if r := NeedsRenewal(leaf, []string{"node-3.example"}, now); !strings.Contains(r, "node-3.example") {
		t.Errorf("renewal reason for a missing host: %q", r)
	}
	if r := NeedsRenewal(leaf, nil, now.Add(NodeValidity*3/4)); !strings.Contains(r, "expires") {
		t.Errorf("renewal reason late in the certificate's life: %q", r)
	}
	if _, err := tls.X509KeyPair(chainPEM, KeyPEM(key)); err != nil {
		t.Fatalf("chain and the requester's key are no TLS pair: %v", err)
	}

	// Another CA does not verify it.
	if err := newCA(t).Verify(chain, now); err == nil {
		t.Error("a node certificate verified against another CA")
	}
	// A request whose signature is broken is refused.
	csr.Signature[len(csr.Signature)-1] ^= 1
	if _, err := ca.Sign(csr, now); err == nil {
		t.Error("signed a request with a broken signature")
	}
}

func TestParseCARefusesMismatch(t *testing.T) {
	a, b := newCA(t), newCA(t)
	if _, err := ParseCA(a.CertPEM(), a.KeyPEM()); err != nil {
		t.Fatalf("a CA's own files: %v", err)
	}
	if _, err := ParseCA(a.CertPEM(), b.KeyPEM()); err == nil {
		t.Error("accepted another CA's key")
	}
	chain, err := a.Issue(b.Key, []string{"localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseCA(chain, b.KeyPEM()); err == nil {
		t.Error("accepted a node certificate as a CA")
	}
}

func TestTokenText(t *testing.T) {
	ca := newCA(t)
	tok := NewToken(ca.Fingerprint())
	got, err := ParseToken("  " + tok.String() + "\n")
	if err != nil {
		t.Fatalf("parse %q: %v", tok, err)
	}
	if got != tok {
		t.Fatalf("round trip: %+v, want %+v", got, tok)
	}
	if other := NewToken(ca.Fingerprint()); other.ID == tok.ID || other.Secret == tok.Secret {
		t.Error("two tokens share an id or a secret")
	}
	if !SecretMatches(tok.Secret, SecretHash(tok.Secret)) || SecretMatches(tok.Secret+"x", SecretHash(tok.Secret)) {
		t.Error("SecretMatches")
	}
	s := tok.String()
	parts := strings.Split(s, ".")
	for _, bad := range []string{
		"", "skiff1", s + ".x", strings.Replace(s, "skiff1", "skiff2", 1),
		strings.Join([]string{parts[0], parts[1][1:], parts[2], parts[3]}, "."),
		strings.Join([]string{parts[0], parts[1], strings.ToUpper(parts[2]) + "A", parts[3]}, "."),
		strings.Join([]string{parts[0], parts[1], parts[2], parts[3] + "AA"}, "."),
	} {
		if _, err := ParseToken(bad); err == nil {
			t.Errorf("ParseToken(%q) accepted", bad)
		}
	}
}

// FuzzParseToken: any text either fails to parse, or parses into a token whose
// text form parses into the same token.
func FuzzParseToken(f *testing.F) {
	f.Add(Token{ID: "0011223344556677", Secret: "AAAAAAAAAAAAAAAAAAAAAA"}.String())
	f.Add("skiff1...")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseToken(s)
		if err != nil {
			return
		}
		again, err := ParseToken(tok.String())
		if err != nil || again != tok {
			t.Fatalf("%q parsed into %+v, whose text %q does not parse back (%v)", s, tok, tok.String(), err)
		}
	})
}

// TestSaveLoad: the secure folder is written 0700 with files 0600, read back
// whole, and not seen until its CA certificate is written.
func TestSaveLoad(t *testing.T) {
	data := t.TempDir()
	p := PathsOf(data)
	if ok, err := p.Exists(); ok || err != nil {
		t.Fatalf("Exists on an empty data directory: %v %v", ok, err)
	}
	ca := newCA(t)
	key, _ := NewKey()
	chain, err := ca.Issue(key, []string{"localhost", "127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	m := &Material{CA: ca, NodeCert: chain, NodeKey: key, InterBrokerPassword: NewPassword()}
	if err := p.Save(m); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Exists(); !ok || err != nil {
		t.Fatalf("Exists after Save: %v %v", ok, err)
	}
	fi, err := os.Stat(p.Dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("folder mode %v (%v), want 0700", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(p.Dir)
	if len(entries) != 5 {
		t.Errorf("%d files in %s, want 5", len(entries), p.Dir)
	}
	for _, e := range entries {
		fi, _ := e.Info()
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	got, err := p.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.CA.Fingerprint() != ca.Fingerprint() || !got.NodeKey.Equal(key) || got.InterBrokerPassword != m.InterBrokerPassword {
		t.Fatal("Load did not read what Save wrote")
	}
	leaf, err := got.Leaf()
	if err != nil || !leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("leaf: %v", err)
	}

	// A renewal replaces the certificate, keeping the key.
	renewed, err := ca.Issue(key, []string{"localhost", "127.0.0.1", "node-1.example"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SaveNodeCert(renewed); err != nil {
		t.Fatal(err)
	}
	if got, err = p.Load(); err != nil || NeedsRenewal(mustLeaf(t, got), []string{"node-1.example"}, time.Now()) != "" {
		t.Fatalf("after renewal: %v", err)
	}

	// A node certificate of another key is refused.
	other, _ := NewKey()
	chain2, _ := ca.Issue(other, []string{"localhost"}, time.Now())
	if err := os.WriteFile(p.NodeCert, chain2, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Load(); err == nil || !strings.Contains(err.Error(), filepath.Base(p.NodeCert)) {
		t.Errorf("Load with a certificate of another key: %v", err)
	}
}

func mustLeaf(t *testing.T, m *Material) *x509.Certificate {
	t.Helper()
	leaf, err := m.Leaf()
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func TestPinned(t *testing.T) {
	a, b := newCA(t), newCA(t)
	key, _ := NewKey()
	chainPEM, _ := a.Issue(key, []string{"localhost"}, time.Now())
	chain, _ := ParseCertificates(chainPEM)
	if got := Pinned(chain, a.Fingerprint()); got == nil || !got.Equal(a.Cert) {
		t.Error("the CA of the chain is not found by its fingerprint")
	}
	if Pinned(chain, b.Fingerprint()) != nil {
		t.Error("another CA's fingerprint matched")
	}
	if f, err := ParseFingerprint(a.Fingerprint().String()); err != nil || f != a.Fingerprint() {
		t.Errorf("fingerprint round trip: %v", err)
	}
	if h := a.Fingerprint().Hex(); len(h) != 32*3-1 {
		t.Errorf("hex fingerprint %q", h)
	}
}
