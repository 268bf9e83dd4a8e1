package appliance

// Authentication on the HTTP port (docs/security.md). A node has HTTP credentials
// to check once http-token-file is set (a bearer token) or its HTTP port serves
// TLS with a CA for client certificates (http-tls with tls-client-ca, which
// --secure gives). Then the admin API (/v1/cluster..., skiff cluster) and the
// profiler need one of them; /metrics, /healthz and /readyz too under http-auth
// all. Without credentials every path stays open, as before these settings.
// The join handshake (/v1/join) proves itself with its join token instead.

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// HTTP auth settings (http-auth).
const (
	HTTPAuthAdmin = "admin" // the admin API and the profiler need credentials
	HTTPAuthAll   = "all"   // every path does
)

// httpCredentials reports whether the node has HTTP credentials to check.
func (c Config) httpCredentials() bool {
	return c.HTTPTokenFile != "" || (c.HTTPTLS && c.TLSClientCA != "")
}

// validateHTTPAuth checks http-auth and http-token-file.
func (c Config) validateHTTPAuth() []error {
	var errs []error
	switch c.HTTPAuth {
	case HTTPAuthAdmin, "":
	case HTTPAuthAll: // checked by checkHTTPAuthAll, once secure settings are known
	default:
		errs = append(errs, fmt.Errorf("http-auth %q: want admin (the admin API needs credentials) or all (every path does)", c.HTTPAuth))
	}
	if c.HTTPTokenFile != "" {
		if _, err := readToken(c.HTTPTokenFile); err != nil {
			errs = append(errs, fmt.Errorf("http-token-file: %w", err))
		}
	}
	return errs
}

// checkHTTPAuthAll refuses http-auth all on a node without HTTP credentials,
// where nothing could authenticate.
func (c Config) checkHTTPAuthAll() error {
	if c.HTTPAuth == HTTPAuthAll && !c.httpCredentials() {
		return errors.New("http-auth all: nothing could authenticate; set http-token-file, or http-tls with tls-client-ca (or form the cluster with --secure)")
	}
	return nil
}

// readToken reads a bearer token: the first line of path, without surrounding
// blanks.
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return "", fmt.Errorf("%s: the first line is empty", path)
	}
	return line, nil
}

// requireAuth wraps h so that it answers only requests with a valid bearer token
// or a verified client certificate, when the node has credentials; without, h
// is returned unchanged. The token file is read at each request, so replacing it
// changes the token at once. Failures are answered 401 after a delay that grows
// with repeated failures from the same address (auth.FailureDelays).
func (n *Node) requireAuth(h http.Handler) http.Handler {
	if !n.cfg.httpCredentials() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		why := n.checkHTTPCredentials(r)
		if why == "" {
			h.ServeHTTP(w, r)
			return
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		select {
		case <-time.After(n.httpDelays.Failed(host)):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="skiff"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": why})
	})
}

// checkHTTPCredentials returns why r is not authenticated, or "".
func (n *Node) checkHTTPCredentials(r *http.Request) string {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return "" // a client certificate of tls-client-ca, checked by the handshake
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return "this node's admin API needs credentials: a bearer token (skiff cluster: SKIFF_HTTP_TOKEN or --http-token-file) or a client certificate signed by the cluster's CA"
	}
	if n.cfg.HTTPTokenFile == "" {
		return "this node takes no bearer token (it has no http-token-file): use a client certificate signed by the cluster's CA"
	}
	want, err := readToken(n.cfg.HTTPTokenFile)
	if err != nil {
		n.logger.Error("cannot read http-token-file: admin requests with a token are refused", "err", err)
		return "this node cannot read its http-token-file (see its log)"
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return "bearer token refused: it is not this node's http-token-file"
	}
	return ""
}
