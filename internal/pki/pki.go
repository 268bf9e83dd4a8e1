// Package pki is the certificate authority of a cluster formed with --secure: an
// ECDSA P-256 CA made when the cluster is bootstrapped, the node certificates it
// signs (from a certificate request, so that a node's key never leaves it), the
// CA's fingerprint that join tokens carry, and the files of <data>/secure
// (docs/format/secure.md). It knows nothing of etcd or the network.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"
)

// Validity of what the CA signs. A node renews its own certificate when less than
// a third of its validity is left (NeedsRenewal), at start and once a day.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	NodeValidity = 2 * 365 * 24 * time.Hour
)

// NodeCommonName is the subject of every node certificate (CN=skiff-node): the
// SANs tell the nodes apart, the CA that they belong to the cluster.
const NodeCommonName = "skiff-node"

// clockSkew backdates NotBefore, so that a machine whose clock is a little behind
// the signer's accepts a certificate at once.
const clockSkew = time.Hour

// CA is the cluster's certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a CA, valid from now for CAValidity.
func NewCA(now time.Time) (*CA, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serialNumber(),
		Subject:               pkix.Name{CommonName: "Skiff cluster CA", Organization: []string{"Skiff"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// ParseCA reads a CA from its certificate and key in PEM, checking that they
// belong together and that the certificate is a CA's.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, err
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	cert := certs[0]
	if !cert.IsCA {
		return nil, errors.New("pki: the CA certificate is not a CA's")
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New("pki: the CA key does not belong to the CA certificate")
	}
	return &CA{Cert: cert, Key: key}, nil
}

// CertPEM is the CA certificate in PEM.
func (ca *CA) CertPEM() []byte { return pemBlock("CERTIFICATE", ca.Cert.Raw) }

// KeyPEM is the CA key in PEM (PKCS #8).
func (ca *CA) KeyPEM() []byte { return keyPEM(ca.Key) }

// Fingerprint is the CA's fingerprint, which join tokens carry.
func (ca *CA) Fingerprint() Fingerprint { return FingerprintOf(ca.Cert) }

// Sign issues a node certificate for the public key and host names (DNS names or
// IP addresses) of csr, whose signature must be valid: a node that joins. It
// returns the chain in PEM: the node certificate, then the CA's.
func (ca *CA) Sign(csr *x509.CertificateRequest, now time.Time) ([]byte, error) {
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	pub, ok := csr.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return nil, errors.New("pki: certificate request: want an ECDSA key")
	}
	return ca.issue(pub, csr.DNSNames, csr.IPAddresses, now)
}

// Issue issues a node certificate for key's public key naming hosts (DNS names
// or IP addresses): a new node's first certificate, or a renewal that keeps
// the key. It returns the chain in PEM, as Sign.
func (ca *CA) Issue(key *ecdsa.PrivateKey, hosts []string, now time.Time) ([]byte, error) {
	dns, ips := splitHosts(hosts)
	return ca.issue(&key.PublicKey, dns, ips, now)
}

func (ca *CA) issue(pub *ecdsa.PublicKey, dns []string, ips []net.IP, now time.Time) ([]byte, error) {
	if len(dns)+len(ips) == 0 {
		return nil, errors.New("pki: a node certificate must name a host")
	}
	notAfter := now.Add(NodeValidity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serialNumber(),
		Subject:      pkix.Name{CommonName: NodeCommonName},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Server and client: each node serves etcd, Kafka and HTTP, and dials
		// the others' etcd peer and Kafka ports with the same certificate.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    dns,
		IPAddresses: ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("pki: sign node certificate: %w", err)
	}
	return append(pemBlock("CERTIFICATE", der), ca.CertPEM()...), nil
}

// splitHosts sorts host names into DNS names and IP addresses.
func splitHosts(hosts []string) (dns []string, ips []net.IP) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

// Verify checks that the first certificate of chain is a node certificate signed
// by the CA, valid at now.
func (ca *CA) Verify(chain []*x509.Certificate, now time.Time) error {
	if len(chain) == 0 {
		return errors.New("pki: no certificate")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err
}

// NewKey makes a node's private key (ECDSA P-256).
func NewKey() (*ecdsa.PrivateKey, error) { return newKey() }

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate key: %w", err)
	}
	return key, nil
}

// KeyPEM is key in PEM (PKCS #8).
func KeyPEM(key *ecdsa.PrivateKey) []byte { return keyPEM(key) }

func keyPEM(key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(err) // an ECDSA P-256 key always marshals
	}
	return pemBlock("PRIVATE KEY", der)
}

// NewCSR is a certificate request for key, naming hosts (DNS names or IP
// addresses), in PEM.
func NewCSR(key *ecdsa.PrivateKey, hosts []string) ([]byte, error) {
	dns, ips := splitHosts(hosts)
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: NodeCommonName}, DNSNames: dns, IPAddresses: ips}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	return pemBlock("CERTIFICATE REQUEST", der), nil
}

// ParseCSR reads a certificate request in PEM and checks its signature.
func ParseCSR(b []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("pki: no PEM certificate request")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	return csr, nil
}

// ParseCertificates reads every certificate of a PEM file; there must be one.
func ParseCertificates(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("pki: certificate: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("pki: no PEM certificate")
	}
	return out, nil
}

// ParseKey reads an ECDSA private key in PEM (PKCS #8 or SEC 1).
func ParseKey(b []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("pki: no PEM private key")
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: private key: %w", err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("pki: private key: want ECDSA, not %T", k)
	}
	return ek, nil
}

// NeedsRenewal reports why the node certificate cert should be issued again:
// a host it does not name, or less than a third of its validity left (also
// once expired). "" when it is fine.
func NeedsRenewal(cert *x509.Certificate, hosts []string, now time.Time) string {
	for _, h := range hosts {
		if !names(cert, h) {
			return "it does not name " + h
		}
	}
	life := cert.NotAfter.Sub(cert.NotBefore)
	if left := cert.NotAfter.Sub(now); left < life/3 {
		return fmt.Sprintf("it expires at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ""
}

// names reports whether cert names host as a SAN (exactly: no wildcards).
func names(cert *x509.Certificate, host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return slices.ContainsFunc(cert.IPAddresses, ip.Equal)
	}
	return slices.ContainsFunc(cert.DNSNames, func(d string) bool { return strings.EqualFold(d, host) })
}

// Fingerprint is the SHA-256 of a CA certificate (its DER bytes).
type Fingerprint [sha256.Size]byte

// FingerprintOf is cert's fingerprint.
func FingerprintOf(cert *x509.Certificate) Fingerprint { return sha256.Sum256(cert.Raw) }

// String is the fingerprint as join tokens write it: unpadded base64url.
func (f Fingerprint) String() string { return base64.RawURLEncoding.EncodeToString(f[:]) }

// Hex is the fingerprint as openssl x509 -fingerprint -sha256 prints it, for logs.
func (f Fingerprint) Hex() string {
	var b strings.Builder
	for i, c := range f {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02X", c)
	}
	return b.String()
}

// ParseFingerprint reads the String form.
func ParseFingerprint(s string) (Fingerprint, error) {
	var f Fingerprint
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(f) {
		return f, errors.New("pki: not a CA fingerprint")
	}
	copy(f[:], b)
	return f, nil
}

// Pinned finds the certificate whose fingerprint is f among certs (a TLS
// server's chain), or nil.
func Pinned(certs []*x509.Certificate, f Fingerprint) *x509.Certificate {
	for _, c := range certs {
		if FingerprintOf(c) == f {
			return c
		}
	}
	return nil
}

func serialNumber() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n.Add(n, big.NewInt(1))
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
