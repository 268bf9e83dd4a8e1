package tlsconf

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"skiff/internal/syncbuf"
	"skiff/internal/testcerts"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer serves TLS with cfg on loopback, echoing what it reads, until the
// test ends.
func echoServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// dial connects with cfg and returns the server's certificate.
func dial(t *testing.T, addr string, cfg *tls.Config) (*tls.Conn, *x509.Certificate, error) {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, nil, err
	}
	// A TLS 1.3 server checks the client's certificate after the client's
	// handshake returns: a refusal shows on the first read.
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := echo(c); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, c.ConnectionState().PeerCertificates[0], nil
}

func echo(c net.Conn) error {
	msg := []byte("ping")
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, msg) {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// TestRotation: replacing the certificate files changes the certificate of new
// connections; open connections keep working; a half-replaced pair keeps the
// previous certificate until the pair is whole again.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	first := ca.Issue(t, "first", pkix.Name{CommonName: "first"})
	second := ca.Issue(t, "second", pkix.Name{CommonName: "second"})
	files := Files{Cert: dir + "/node.pem", Key: dir + "/node-key.pem"}
	install := func(p *testcerts.Pair) {
		t.Helper()
		for path, b := range map[string][]byte{files.Cert: p.CertPEM, files.Key: p.KeyPEM} {
			if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".tmp", path); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(first)
	logs := &syncbuf.Buffer{}
	l, err := New(files, time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, l.ServerConfig(tls.RequireAndVerifyClientCert))
	client := &tls.Config{RootCAs: pool(ca), ServerName: "127.0.0.1"}
	old, cert, err := dial(t, addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if cert.Subject.CommonName != "first" {
		t.Fatalf("server certificate %s, want first", cert.Subject)
	}

	serves := func(cn string) bool {
		c, cert, err := dial(t, addr, client)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		return cert.Subject.CommonName == cn
	}
	// Only the certificate replaced: it does not match the key, so the first
	// pair stays in use.
	if err := os.WriteFile(files.Cert, second.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a failed reload logged", func() bool {
		if !serves("first") {
			t.Fatal("a half-replaced pair was used")
		}
		return strings.Contains(logs.String(), "cannot be read")
	})
	install(second)
	waitFor(t, "new connections get the new certificate", func() bool { return serves("second") })
	if err := echo(old); err != nil {
		t.Fatalf("a connection made before the rotation: %v", err)
	}
}

// TestMutualTLS: with a CA file the server requires a client certificate signed
// by it.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	other := testcerts.NewCA(t, dir, "other")
	server := ca.Issue(t, "server", pkix.Name{CommonName: "server"})
	l, err := New(Files{Cert: server.CertFile, Key: server.KeyFile, CA: ca.File}, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, l.ServerConfig(tls.RequireAndVerifyClientCert))
	pairConfig := func(p *testcerts.Pair) *tls.Config {
		c, err := New(Files{Cert: p.CertFile, Key: p.KeyFile, CA: ca.File}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.ClientConfig("127.0.0.1")
	}
	if c, _, err := dial(t, addr, pairConfig(ca.Issue(t, "client", pkix.Name{CommonName: "client"}))); err != nil {
		t.Fatalf("client with a certificate of the CA: %v", err)
	} else {
		c.Close()
	}
	if c, _, err := dial(t, addr, pairConfig(other.Issue(t, "stranger", pkix.Name{CommonName: "stranger"}))); err == nil {
		c.Close()
		t.Fatal("a certificate of another CA was accepted")
	}
	if c, _, err := dial(t, addr, &tls.Config{RootCAs: pool(ca), ServerName: "127.0.0.1"}); err == nil {
		c.Close()
		t.Fatal("a client without a certificate was accepted")
	}
	if c, _, err := dial(t, addr, &tls.Config{RootCAs: pool(other), ServerName: "127.0.0.1"}); err == nil {
		c.Close()
		t.Fatal("the client trusted a server of another CA")
	}
}

func TestNewRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	p := ca.Issue(t, "p", pkix.Name{CommonName: "p"})
	for name, f := range map[string]Files{
		"cert without key": {Cert: p.CertFile},
		"missing file":     {Cert: dir + "/none.pem", Key: p.KeyFile},
		"CA not PEM":       {CA: p.KeyFile + ".none"},
		"key as CA":        {CA: p.KeyFile},
	} {
		if _, err := New(f, 0, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func pool(ca *testcerts.CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
