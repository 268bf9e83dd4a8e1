package appliance

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skiff/internal/testcerts"
)

// get does a GET of url with client, bearer token if not empty, and returns the
// status and body; a failed request is status 0 and the error in the body.
func get(client *http.Client, url, token string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHTTPAuth: with a token file and a CA for client certificates, the admin API
// answers a request with the token or a client certificate of the CA, and refuses
// one with neither or a wrong token; /healthz and /metrics stay open unless
// http-auth is all; a certificate of another CA fails the handshake; a replaced
// token file takes effect at once.
func TestHTTPAuth(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "cluster")
	server := ca.Issue(t, "node", pkix.Name{CommonName: "node"})
	admin := ca.Issue(t, "admin", pkix.Name{CommonName: "admin"})
	other := testcerts.NewCA(t, dir, "other")
	stranger := other.Issue(t, "stranger", pkix.Name{CommonName: "stranger"})
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pair := func(p *testcerts.Pair) *tls.Certificate {
		c, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}

	for _, mode := range []string{HTTPAuthAdmin, HTTPAuthAll} {
		t.Run(mode, func(t *testing.T) {
			n := startLoopbackNode(t, Config{HTTPTLS: true, TLSCert: server.CertFile, TLSKey: server.KeyFile, TLSClientCA: ca.File,
				HTTPTokenFile: tokenFile, HTTPAuth: mode})
			base := "https://" + n.HTTPAddr()
			anon, withCert, withStranger := httpsClient(ca.Cert, nil), httpsClient(ca.Cert, pair(admin)), httpsClient(ca.Cert, pair(stranger))

			if st, body := get(anon, base+"/v1/cluster", ""); st != http.StatusUnauthorized || !strings.Contains(body, "needs credentials") {
				t.Errorf("no credentials: %d %s", st, body)
			}
			if st, body := get(anon, base+"/v1/cluster", "wrong"); st != http.StatusUnauthorized || !strings.Contains(body, "bearer token refused") {
				t.Errorf("wrong token: %d %s", st, body)
			}
			if st, body := get(anon, base+"/v1/cluster", "s3cret-token"); st != http.StatusOK {
				t.Errorf("token: %d %s", st, body)
			}
			if st, body := get(withCert, base+"/v1/cluster", ""); st != http.StatusOK {
				t.Errorf("client certificate: %d %s", st, body)
			}
			if st, body := get(withStranger, base+"/healthz", ""); st != 0 {
				t.Errorf("certificate of another CA: %d %s, want a failed handshake", st, body)
			}
			for _, path := range []string{"/healthz", "/metrics", "/readyz"} {
				st, _ := get(anon, base+path, "")
				if want := map[string]int{HTTPAuthAdmin: http.StatusOK, HTTPAuthAll: http.StatusUnauthorized}[mode]; st != want {
					t.Errorf("%s without credentials: %d, want %d", path, st, want)
				}
				if st, _ := get(anon, base+path, "s3cret-token"); st != http.StatusOK {
					t.Errorf("%s with the token: %d", path, st)
				}
			}
		})
	}

	t.Run("token replaced", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "token")
		os.WriteFile(file, []byte("first\n"), 0o600)
		n := startLoopbackNode(t, Config{HTTPTokenFile: file})
		base := "http://" + n.HTTPAddr()
		if st, _ := get(http.DefaultClient, base+"/v1/cluster", "first"); st != http.StatusOK {
			t.Fatalf("first token: %d", st)
		}
		if st, _ := get(http.DefaultClient, base+"/healthz", ""); st != http.StatusOK {
			t.Fatalf("/healthz without a token: %d", st)
		}
		os.WriteFile(file, []byte("second\n"), 0o600)
		if st, _ := get(http.DefaultClient, base+"/v1/cluster", "first"); st != http.StatusUnauthorized {
			t.Errorf("old token after the file changed: %d", st)
		}
		if st, _ := get(http.DefaultClient, base+"/v1/cluster", "second"); st != http.StatusOK {
			t.Errorf("new token: %d", st)
		}
	})
}

func TestHTTPAuthSettings(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{HTTPAuth: "everything"}, "want admin"},
		{Config{HTTPTokenFile: filepath.Join(t.TempDir(), "missing")}, "http-token-file"},
		{Config{HTTPTokenFile: empty}, "first line is empty"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	cfg := secureConfig(t, t.TempDir())
	cfg.HTTPAuth = HTTPAuthAll
	if _, err := startNode(t, cfg); err == nil || !strings.Contains(err.Error(), "nothing could authenticate") {
		t.Errorf("http-auth all without credentials: %v", err)
	}
	cfg.Secure = true // its certificates are credentials
	if _, err := startNode(t, cfg); err != nil {
		t.Errorf("http-auth all with secure: %v", err)
	}
}
