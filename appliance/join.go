package appliance

// The join handshake of a cluster formed with --secure (docs/security.md): how a
// node that has no certificate yet gets one. The joiner dials the HTTP port of a
// running node (--join) over TLS, accepting only a server certificate signed by
// the CA whose fingerprint the join token carries; it sends the token's id and
// secret with a certificate request for a key it made itself:
//
//	POST /v1/join  {"version":1,"token_id":"...","secret":"...","node":"host-b","csr":"-----BEGIN CERTIFICATE REQUEST-----..."}
//
// The running node consumes the token (cluster.Store.ConsumeJoinToken: once,
// not expired, secret right), signs the request and answers with the cluster's
// secure material and the etcd client URLs of its members:
//
//	200 {"version":1,"cluster_id":"...","ca_cert":"...","ca_key":"...","node_cert":"...",
//	     "inter_broker_password":"...","etcd_endpoints":["https://10.0.0.1:9093",...]}
//
// Refusals are {"error": "..."}: 403 (token wrong, used or expired), 400 (a
// malformed request), 404 (not a secure node), 503 (starting, no quorum). A
// joiner that presents a certificate of the cluster's CA instead of a token (a
// join interrupted after the handshake, retried) is answered the same way.
// The joiner then joins etcd over TLS with its new certificate, as any join
// does (formation.go). POST /v1/cluster/join-token, an admin request, makes a
// token.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"skiff/cluster"
	"skiff/internal/pki"
)

// joinVersion is the version of the join handshake's messages.
const joinVersion = 1

// joinRequest is the body of POST /v1/join.
type joinRequest struct {
	Version int    `json:"version"`
	TokenID string `json:"token_id,omitempty"`
	Secret  string `json:"secret,omitempty"`
	// Node names the joiner in the token's record and the logs.
	Node string `json:"node"`
	// CSR is the joiner's certificate request (PEM).
	CSR string `json:"csr"`
}

// joinResponse is the answer of a successful POST /v1/join.
type joinResponse struct {
	Version             int      `json:"version"`
	ClusterID           string   `json:"cluster_id"`
	CACert              string   `json:"ca_cert"`
	CAKey               string   `json:"ca_key"`
	NodeCert            string   `json:"node_cert"`
	InterBrokerPassword string   `json:"inter_broker_password"`
	EtcdEndpoints       []string `json:"etcd_endpoints"`
}

// JoinTokenAnswer is the answer of POST /v1/cluster/join-token.
type JoinTokenAnswer struct {
	Token   string    `json:"token"`
	Expires time.Time `json:"expires"`
	// HTTPAddr is the node's HTTP address, for the joiner's --join.
	HTTPAddr string `json:"http_addr"`
}

// maxJoinRequest bounds the body of POST /v1/join.
const maxJoinRequest = 64 << 10

// maxJoinTokenTTL bounds how long a token made by the admin API lasts.
const maxJoinTokenTTL = 7 * 24 * time.Hour

// joinRoutes registers the join handshake on mux (open: the token is the proof)
// and the admin request that makes tokens on admin.
func (n *Node) joinRoutes(mux, admin *http.ServeMux) {
	mux.HandleFunc("POST /v1/join", n.serveJoin)
	admin.HandleFunc("POST /v1/cluster/join-token", func(w http.ResponseWriter, r *http.Request) {
		if n.secure == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "this cluster was not formed with --secure: nodes join it with --join alone"})
			return
		}
		ttl := time.Hour
		if s := r.URL.Query().Get("ttl"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 || d > maxJoinTokenTTL {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("ttl %q: want a duration from 1s to %v, such as 30m", s, maxJoinTokenTTL)})
				return
			}
			ttl = d
		}
		if !n.started() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the node is starting; ask again"})
			return
		}
		tok, expires, err := n.newJoinToken(r.Context(), ttl)
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": fmt.Sprintf("store the token: %v", err)})
			return
		}
		n.logger.Info("join token made", "token_id", tok.ID, "expires", expires.UTC().Format(time.RFC3339), "remote", r.RemoteAddr)
		writeJSON(w, http.StatusOK, JoinTokenAnswer{Token: tok.String(), Expires: expires.UTC(), HTTPAddr: n.advertisedHTTP()})
	})
}

// serveJoin is the running node's side of the handshake.
func (n *Node) serveJoin(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, format string, args ...any) {
		writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
	}
	if n.secure == nil {
		fail(http.StatusNotFound, "this node's cluster was not formed with --secure: join it with --join and its etcd client address, without a token")
		return
	}
	if !n.started() {
		fail(http.StatusServiceUnavailable, "the node is starting; ask again")
		return
	}
	var req joinRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxJoinRequest)).Decode(&req); err != nil || req.Version != joinVersion {
		fail(http.StatusBadRequest, "not a join request of version %d (%v)", joinVersion, err)
		return
	}
	csr, err := pki.ParseCSR([]byte(req.CSR))
	if err != nil {
		fail(http.StatusBadRequest, "%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	how := "certificate"
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		how = "token " + req.TokenID
		_, err := n.store.ConsumeJoinToken(ctx, req.TokenID, func(hash []byte) bool { return pki.SecretMatches(req.Secret, hash) }, time.Now(), req.Node)
		if errors.Is(err, cluster.ErrJoinTokenWrong) || errors.Is(err, cluster.ErrJoinTokenUsed) || errors.Is(err, cluster.ErrJoinTokenExpired) {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			select {
			case <-time.After(n.httpDelays.Failed(host)):
			case <-r.Context().Done():
				return
			}
			n.logger.Warn("join refused", "node", req.Node, "remote", r.RemoteAddr, "token_id", req.TokenID, "reason", err)
			fail(http.StatusForbidden, "%v", err)
			return
		}
		if err != nil {
			fail(http.StatusServiceUnavailable, "%v", err)
			return
		}
	}
	chain, err := n.secure.CA.Sign(csr, time.Now())
	if err != nil {
		fail(http.StatusBadRequest, "%v", err)
		return
	}
	endpoints, err := n.etcdClientURLs(ctx)
	if err != nil {
		fail(http.StatusServiceUnavailable, "list the etcd members: %v", err)
		return
	}
	n.logger.Info("node admitted to join", "node", req.Node, "remote", r.RemoteAddr, "by", how, "hosts", append(csr.DNSNames, ipStrings(csr.IPAddresses)...))
	writeJSON(w, http.StatusOK, joinResponse{Version: joinVersion, ClusterID: n.cache.Snapshot().ClusterID(),
		CACert: string(n.secure.CA.CertPEM()), CAKey: string(n.secure.CA.KeyPEM()), NodeCert: string(chain),
		InterBrokerPassword: n.secure.InterBrokerPassword, EtcdEndpoints: endpoints})
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

// etcdClientURLs are the client URLs of the started etcd members.
func (n *Node) etcdClientURLs(ctx context.Context) ([]string, error) {
	list, err := n.member.Client().MemberList(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range list.Members {
		out = append(out, m.ClientURLs...)
	}
	if len(out) == 0 {
		return nil, errors.New("no member has a client URL")
	}
	return out, nil
}

// joinHandshake is the joiner's side: it returns the secure material of the
// cluster, with a certificate for hosts, and the etcd client URLs to join at.
// It asks the nodes of --join in turn until one answers or JoinTimeout passes;
// a refusal ends it at once.
func (n *Node) joinHandshake(ctx context.Context, hosts []string) (*pki.Material, []string, error) {
	c := n.cfg
	var (
		ca         pki.Fingerprint
		req        = joinRequest{Version: joinVersion, Node: c.NodeName}
		key, err   = pki.NewKey()
		clientCert *tls.Certificate
	)
	if err != nil {
		return nil, nil, err
	}
	if req.Node == "" {
		req.Node = hostname()
	}
	req.Node += " (etcd peer " + cmp.Or(c.EtcdAdvertisePeer, c.EtcdPeer) + ")" // several nodes may share a host
	if c.JoinToken != "" {
		tok, _ := pki.ParseToken(c.JoinToken) // validated
		ca, req.TokenID, req.Secret = tok.CA, tok.ID, tok.Secret
	}
	// A join interrupted after its handshake left the material behind, and its
	// token is used up: its certificate proves the node instead.
	if old, err := n.securePaths.Load(); err == nil && (c.JoinToken == "" || old.CA.Fingerprint() == ca) {
		pair, err := tls.X509KeyPair(old.NodeCert, pki.KeyPEM(old.NodeKey))
		if err == nil {
			ca, key, clientCert = old.CA.Fingerprint(), old.NodeKey, &pair
			n.logger.Info("joining with the certificate of an interrupted join", "dir", n.securePaths.Dir)
		}
	}
	if c.JoinToken == "" && clientCert == nil {
		return nil, nil, errors.New("join: the cluster's nodes have certificates of a cluster CA: join it with --join-token (skiff cluster join-token makes one)")
	}
	csr, err := pki.NewCSR(key, hosts)
	if err != nil {
		return nil, nil, err
	}
	req.CSR = string(csr)
	body, _ := json.Marshal(req)

	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12,
		// The server is checked against the token's CA fingerprint below, not by
		// name: the CA is the proof, and --join may name any address of the node.
		InsecureSkipVerify:    true,
		VerifyPeerCertificate: verifyPinned(ca),
	}
	if clientCert != nil {
		tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return clientCert, nil }
	}
	hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer hc.CloseIdleConnections()

	n.status("joining with a join token at " + strings.Join(c.Join, ","))
	deadline := time.Now().Add(c.JoinTimeout)
	for attempt := 0; ; attempt++ {
		var lastErr error
		for _, addr := range c.Join {
			resp, err := postJoin(ctx, hc, addr, body)
			if err == nil {
				m, err := joinedMaterial(resp, key, ca)
				if err != nil {
					return nil, nil, fmt.Errorf("join %s: %w", addr, err)
				}
				n.logger.Info("received a node certificate of the cluster CA", "from", addr, "cluster_id", resp.ClusterID, "ca_fingerprint", ca.Hex())
				return m, resp.EtcdEndpoints, nil
			}
			var refused *joinRefusal
			if errors.As(err, &refused) && refused.status != http.StatusServiceUnavailable {
				return nil, nil, fmt.Errorf("join %s refused: %s", addr, refused.msg)
			}
			var pin *pinError
			if errors.As(err, &pin) {
				return nil, nil, fmt.Errorf("join %s: %w", addr, pin)
			}
			lastErr = fmt.Errorf("%s: %w", addr, err)
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("join: no running node of the cluster answered the join handshake within %v (%v); --join-token takes --join with the HTTP address of a running node (HOST:PORT, its http setting, port %s by default)", c.JoinTimeout, lastErr, DefaultHTTPPort)
		}
		n.logger.Info("join handshake: no answer yet; retrying", "attempt", attempt+1, "err", lastErr)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// joinRefusal is a join handshake answered with an error.
type joinRefusal struct {
	status int
	msg    string
}

func (e *joinRefusal) Error() string { return fmt.Sprintf("%d: %s", e.status, e.msg) }

// postJoin sends the join request to addr.
func postJoin(ctx context.Context, hc *http.Client, addr string, body []byte) (*joinResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+"/v1/join", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("%s, not a Skiff node's answer: is %s the HTTP address of a node of the cluster?", resp.Status, addr)
		}
		return nil, &joinRefusal{status: resp.StatusCode, msg: e.Error}
	}
	var out joinResponse
	if err := json.Unmarshal(b, &out); err != nil || out.Version != joinVersion {
		return nil, &joinRefusal{status: resp.StatusCode, msg: fmt.Sprintf("not a join answer of version %d (%v)", joinVersion, err)}
	}
	return &out, nil
}

// joinedMaterial checks an answer: the CA is the token's, the certificate is
// for key and signed by it.
func joinedMaterial(resp *joinResponse, key *ecdsa.PrivateKey, ca pki.Fingerprint) (*pki.Material, error) {
	cca, err := pki.ParseCA([]byte(resp.CACert), []byte(resp.CAKey))
	if err != nil {
		return nil, err
	}
	if cca.Fingerprint() != ca {
		return nil, errors.New("the answer's CA is not the token's")
	}
	m := &pki.Material{CA: cca, NodeCert: []byte(resp.NodeCert), NodeKey: key, InterBrokerPassword: resp.InterBrokerPassword}
	chain, err := pki.ParseCertificates(m.NodeCert)
	if err != nil {
		return nil, err
	}
	if err := cca.Verify(chain, time.Now()); err != nil {
		return nil, fmt.Errorf("the node certificate received: %w", err)
	}
	if _, err := m.Leaf(); err != nil {
		return nil, err
	}
	if len(resp.EtcdEndpoints) == 0 || m.InterBrokerPassword == "" {
		return nil, errors.New("the answer lacks the etcd endpoints or the inter-broker password")
	}
	return m, nil
}

// verifyPinned checks a TLS server's chain against the CA of fingerprint ca,
// which the chain must carry (a node sends its certificate and the CA's).
func verifyPinned(ca pki.Fingerprint) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		var certs []*x509.Certificate
		for _, b := range raw {
			c, err := x509.ParseCertificate(b)
			if err != nil {
				return err
			}
			certs = append(certs, c)
		}
		root := pki.Pinned(certs, ca)
		if root == nil {
			return &pinError{fmt.Sprintf("the node does not present the CA of the join token (fingerprint %s): a node of another cluster, or not a node of this one", ca.Hex())}
		}
		if err := (&pki.CA{Cert: root}).Verify(certs, time.Now()); err != nil {
			return &pinError{fmt.Sprintf("the node's certificate is not valid under the token's CA: %v", err)}
		}
		return nil
	}
}

// pinError: a join target's certificate is not of the token's CA. Not retried.
type pinError struct{ msg string }

func (e *pinError) Error() string { return e.msg }

// advertisedHTTP is the HTTP address joiners are told to dial: the bound one,
// a wildcard host replaced by the host name.
func (n *Node) advertisedHTTP() string {
	ta := n.httpLn.Addr().(*net.TCPAddr)
	host := ta.IP.String()
	if ta.IP.IsUnspecified() {
		host = cmp.Or(hostname(), "localhost")
	}
	return net.JoinHostPort(host, strconv.Itoa(ta.Port))
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
