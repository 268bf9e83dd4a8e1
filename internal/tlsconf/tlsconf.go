// Package tlsconf loads a node's TLS material from PEM files (a certificate chain,
// its private key, a file of CA certificates) and keeps it current: when a file
// changes, the next handshake after the check interval reads them again, so that
// certificates are rotated by replacing files, without a restart. A read that
// fails (a certificate replaced before its key, a half-written file) keeps the
// last good material and is logged once; the files' next change tries again. Connections that
// are open keep the certificate they were made with.
//
// The Kafka listeners, the HTTP port and the embedded etcd member's clients take
// their TLS from the same Loader (etcd's server side reads the same files itself,
// at every handshake).
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// DefaultCheckInterval is how often, at most, the files are looked at again
// (one stat per file, on a handshake).
const DefaultCheckInterval = time.Second

// Files names the PEM files of a node's TLS material.
type Files struct {
	// Cert is the certificate chain (leaf first) and Key its private key. Both
	// or neither.
	Cert, Key string
	// CA holds the CA certificates that sign the peers' certificates: clients'
	// certificates on a server (mutual TLS), servers' certificates on a client.
	// Empty: a server asks for no client certificate; a client trusts the
	// system's roots.
	CA string
}

// Loader holds the current TLS material of Files.
type Loader struct {
	files    Files
	interval time.Duration
	logger   *slog.Logger

	mu struct {
		sync.Mutex
		checked time.Time
		stamps  []stamp          // of the files last read successfully, or last seen failing
		cert    *tls.Certificate // nil without Cert
		pool    *x509.CertPool   // nil without CA
		failed  bool             // the last read failed (logged once per change)
	}
}

// stamp is what tells that a file changed.
type stamp struct {
	mod  time.Time
	size int64
	err  bool
}

// New reads files; an error names the file at fault. interval bounds how often
// the files are looked at again (0: DefaultCheckInterval); logger receives
// reloads and failed reads (nil: slog.Default()).
func New(files Files, interval time.Duration, logger *slog.Logger) (*Loader, error) {
	if (files.Cert == "") != (files.Key == "") {
		return nil, errors.New("tlsconf: a certificate needs its key and a key its certificate")
	}
	if interval <= 0 {
		interval = DefaultCheckInterval
	}
	if logger == nil {
		logger = slog.Default()
	}
	l := &Loader{files: files, interval: interval, logger: logger}
	cert, pool, err := files.read()
	if err != nil {
		return nil, err
	}
	l.mu.cert, l.mu.pool = cert, pool
	l.mu.stamps, l.mu.checked = files.stamps(), time.Now()
	return l, nil
}

// Files are the files the loader reads.
func (l *Loader) Files() Files { return l.files }

// current returns the material, reading the files again first when the check
// interval has passed and one of them changed.
func (l *Loader) current() (*tls.Certificate, *x509.CertPool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.mu.checked) >= l.interval {
		l.mu.checked = now
		if st := l.files.stamps(); !equalStamps(st, l.mu.stamps) {
			l.mu.stamps = st
			cert, pool, err := l.files.read()
			if err != nil {
				l.logger.Error("TLS files changed but cannot be read: keeping the previous certificate", "err", err)
			} else {
				l.mu.cert, l.mu.pool = cert, pool
				l.logger.Info("TLS files changed: new connections use them", "cert", l.files.Cert, "ca", l.files.CA, "not_after", notAfter(cert))
			}
		}
	}
	return l.mu.cert, l.mu.pool
}

// Certificate is the current certificate (nil without one).
func (l *Loader) Certificate() *tls.Certificate { c, _ := l.current(); return c }

// CAPool is the current CA pool (nil without a CA file).
func (l *Loader) CAPool() *x509.CertPool { _, p := l.current(); return p }

// ServerConfig is a server configuration whose certificate and client CAs are
// the current ones at each handshake. clientAuth is what it asks of clients
// when there is a CA file (without one, no client certificate is asked for).
// TLS 1.2 at least.
func (l *Loader) ServerConfig(clientAuth tls.ClientAuthType) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool := l.current()
			if cert == nil {
				return nil, errors.New("tlsconf: no server certificate")
			}
			cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}}
			if pool != nil {
				cfg.ClientCAs, cfg.ClientAuth = pool, clientAuth
			}
			return cfg, nil
		},
	}
}

// ClientConfig is a client configuration with the current material: the
// certificate (if any) for servers that ask for one, taken at each handshake
// (so long-lived clients such as etcd's present a rotated one), and the CA pool
// (or the system's roots) to verify the server, whose certificate must name
// serverName (empty: the dialler sets it per address, as gRPC does). The pool
// is the current one when the configuration is made.
func (l *Loader) ClientConfig(serverName string) *tls.Config {
	_, pool := l.current()
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if cert := l.Certificate(); cert != nil {
				return cert, nil
			}
			return &tls.Certificate{}, nil // none: the server decides whether that will do
		}}
}

// read loads the files.
func (f Files) read() (*tls.Certificate, *x509.CertPool, error) {
	var cert *tls.Certificate
	if f.Cert != "" {
		c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("tlsconf: certificate %s and key %s: %w", f.Cert, f.Key, err)
		}
		cert = &c
	}
	var pool *x509.CertPool
	if f.CA != "" {
		b, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, nil, fmt.Errorf("tlsconf: CA file: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, nil, fmt.Errorf("tlsconf: CA file %s holds no PEM certificate", f.CA)
		}
	}
	return cert, pool, nil
}

func (f Files) stamps() []stamp {
	var out []stamp
	for _, p := range []string{f.Cert, f.Key, f.CA} {
		if p == "" {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			out = append(out, stamp{err: true})
			continue
		}
		out = append(out, stamp{mod: fi.ModTime(), size: fi.Size()})
	}
	return out
}

func equalStamps(a, b []stamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].mod.Equal(b[i].mod) || a[i].size != b[i].size || a[i].err != b[i].err {
			return false
		}
	}
	return true
}

func notAfter(c *tls.Certificate) string {
	if c == nil || c.Leaf == nil {
		return ""
	}
	return c.Leaf.NotAfter.UTC().Format(time.RFC3339)
}
