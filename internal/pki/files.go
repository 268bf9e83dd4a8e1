package pki

// The files of <data>/secure (docs/format/secure.md): the CA's certificate and
// key, the node's certificate chain and key, and the password followers log in
// with. The folder is 0700, every file 0600; each is written atomically.

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"skiff/internal/fileutil"
)

// Paths are the files of a data directory's secure folder. Names must not change.
type Paths struct {
	Dir string // <data>/secure
	// CACert and CAKey are the cluster CA; NodeCert the node's chain (its
	// certificate, then the CA's) and NodeKey its key; InterBrokerPassword the
	// password of InterBrokerUser.
	CACert, CAKey, NodeCert, NodeKey, InterBrokerPassword string
}

// PathsOf are the secure files of dataDir.
func PathsOf(dataDir string) Paths {
	dir := filepath.Join(dataDir, "secure")
	return Paths{Dir: dir,
		CACert: filepath.Join(dir, "ca.pem"), CAKey: filepath.Join(dir, "ca-key.pem"),
		NodeCert: filepath.Join(dir, "node.pem"), NodeKey: filepath.Join(dir, "node-key.pem"),
		InterBrokerPassword: filepath.Join(dir, "inter-broker-password"),
	}
}

// InterBrokerUser is the SCRAM user followers of a secure cluster log in as.
const InterBrokerUser = "skiff-broker"

// Material is the content of the secure folder.
type Material struct {
	CA       *CA
	NodeCert []byte // PEM: the node's certificate, then the CA's
	NodeKey  *ecdsa.PrivateKey
	// InterBrokerPassword is InterBrokerUser's password, the same on every node.
	InterBrokerPassword string
}

// Exists reports whether dataDir holds a secure folder: its CA certificate,
// which Save writes last.
func (p Paths) Exists() (bool, error) {
	_, err := os.Stat(p.CACert)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Load reads the secure folder and checks that its parts belong together.
func (p Paths) Load() (*Material, error) {
	read := func(path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		return b, nil
	}
	var files [5][]byte
	for i, path := range []string{p.CACert, p.CAKey, p.NodeCert, p.NodeKey, p.InterBrokerPassword} {
		b, err := read(path)
		if err != nil {
			return nil, err
		}
		files[i] = b
	}
	ca, err := ParseCA(files[0], files[1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Dir, err)
	}
	key, err := ParseKey(files[3])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.NodeKey, err)
	}
	m := &Material{CA: ca, NodeCert: files[2], NodeKey: key, InterBrokerPassword: strings.TrimSpace(string(files[4]))}
	if _, err := m.Leaf(); err != nil {
		return nil, fmt.Errorf("%s: %w", p.NodeCert, err)
	}
	return m, nil
}

// Leaf is the node's certificate, checked against the node key.
func (m *Material) Leaf() (*x509.Certificate, error) {
	certs, err := ParseCertificates(m.NodeCert)
	if err != nil {
		return nil, err
	}
	if pub, ok := certs[0].PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&m.NodeKey.PublicKey) {
		return nil, errors.New("pki: the node certificate does not belong to the node key")
	}
	return certs[0], nil
}

// Save writes every file of the folder, the CA certificate last (Exists looks
// for it), so that an interrupted Save leaves no folder that Exists sees.
func (p Paths) Save(m *Material) error {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return fmt.Errorf("pki: create %s: %w", p.Dir, err)
	}
	for _, f := range []struct {
		path string
		data []byte
	}{
		{p.CAKey, m.CA.KeyPEM()},
		{p.NodeKey, KeyPEM(m.NodeKey)},
		{p.NodeCert, m.NodeCert},
		{p.InterBrokerPassword, []byte(m.InterBrokerPassword + "\n")},
		{p.CACert, m.CA.CertPEM()},
	} {
		if err := fileutil.WriteFileAtomic(f.path, f.data, 0o600); err != nil {
			return fmt.Errorf("pki: write %s: %w", f.path, err)
		}
	}
	return nil
}

// SaveNodeCert replaces the node's certificate (a renewal for the same key): one
// atomic rename, so TLS never reads a certificate that does not match the key.
func (p Paths) SaveNodeCert(chain []byte) error {
	if err := fileutil.WriteFileAtomic(p.NodeCert, chain, 0o600); err != nil {
		return fmt.Errorf("pki: write %s: %w", p.NodeCert, err)
	}
	return nil
}

// NewPassword is a random password: 24 bytes, base64url.
func NewPassword() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
