package nodeadmin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// do sends a request and decodes a 200 or 202 answer into out, returning the status.
// Another status is an error carrying the node's message.
func (a *Client) do(ctx context.Context, method, path string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, nil)
	if err != nil {
		return 0, err
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if tlsFailure(err) {
			return 0, fmt.Errorf("HTTPS to %s failed: %v; give the CA of the node's certificate with --tls-ca (on a node of a cluster formed with --secure: --data-dir, or DATA/secure/ca.pem)", a.base, err)
		}
		return 0, fmt.Errorf("no Skiff node answers at %s (%v): is `skiff serve` running there? Give a node's HTTP address with --http HOST:PORT (or SKIFF_HTTP)", a.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, fmt.Errorf("read the answer of %s: %w", a.base, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return resp.StatusCode, errors.New(e.Error)
		}
		if resp.StatusCode == http.StatusBadRequest && strings.Contains(string(body), "HTTPS server") {
			return resp.StatusCode, fmt.Errorf("the node at %s serves HTTPS (http-tls): use --tls with --tls-ca, or https:// in --http", a.base)
		}
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %.200s (is %s a Skiff node's HTTP port?)", method, a.base+path, resp.Status, body, a.base)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return resp.StatusCode, fmt.Errorf("%s answered %s with something that is not a cluster status (%v); is it a Skiff node's HTTP port?", a.base, path, err)
	}
	return resp.StatusCode, nil
}

// tlsFailure reports whether err is a failed TLS handshake or certificate check.
func tlsFailure(err error) bool {
	var (
		unknown   x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verifyErr *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		op        *net.OpError
	)
	// A TLS alert from the server (say, refusing the client certificate) is a
	// net.OpError of Op "remote error".
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verifyErr) || errors.As(err, &record) || (errors.As(err, &op) && op.Op == "remote error")
}
