// Package testcerts makes certificate authorities and certificates for tests:
// ECDSA P-256 keys, PEM files in a test's temporary directory.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority.
type CA struct {
	Cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	CertPEM []byte
	// File is the CA certificate's PEM file.
	File string
	dir  string
}

// Pair is a certificate and its key, as PEM files.
type Pair struct {
	Cert     *x509.Certificate
	CertFile string
	KeyFile  string
	CertPEM  []byte
	KeyPEM   []byte
}

var serial = time.Now().UnixNano()

func nextSerial() *big.Int { serial++; return big.NewInt(serial) }

// NewCA makes a CA named cn, with its certificate in dir/<cn>-ca.pem.
func NewCA(t testing.TB, dir, cn string) *CA {
	t.Helper()
	tmpl := template(pkix.Name{CommonName: cn, Organization: []string{"Skiff tests"}})
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	cert, key, der := create(t, tmpl, nil, nil)
	ca := &CA{Cert: cert, key: key, CertPEM: pemBlock("CERTIFICATE", der), dir: dir}
	ca.File = filepath.Join(dir, cn+"-ca.pem")
	write(t, ca.File, ca.CertPEM)
	return ca
}

// Issue makes a certificate for subject, valid as a server for 127.0.0.1 and
// localhost and as a client, signed by the CA; its files are dir/<name>.pem and
// dir/<name>-key.pem.
func (ca *CA) Issue(t testing.TB, name string, subject pkix.Name) *Pair {
	t.Helper()
	tmpl := template(subject)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	tmpl.DNSNames, tmpl.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
	cert, key, der := create(t, tmpl, ca.Cert, ca.key)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := &Pair{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", kder)}
	p.CertFile = filepath.Join(ca.dir, name+".pem")
	p.KeyFile = filepath.Join(ca.dir, name+"-key.pem")
	write(t, p.CertFile, p.CertPEM)
	write(t, p.KeyFile, p.KeyPEM)
	return p
}

// template is a certificate for subject, valid from an hour ago for a day.
func template(subject pkix.Name) *x509.Certificate {
	return &x509.Certificate{SerialNumber: nextSerial(), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
}

// create makes a new key and the certificate of tmpl for it, signed by parent
// and its key (nil: self-signed).
func create(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, der
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
