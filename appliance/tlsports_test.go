package appliance

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"skiff/internal/testcerts"
)

// httpsClient trusts ca and presents pair, if given, whatever CAs the server
// names as acceptable (Go would otherwise send no certificate of another CA).
func httpsClient(ca *x509.Certificate, pair *tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if pair != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return pair, nil }
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// TestEtcdAndHTTPTLS: with etcd-tls and http-tls (certificates brought by the
// operator), a second node joins the first over TLS, the members advertise https
// URLs, the HTTP port answers over TLS, and plaintext is refused on the HTTP and
// etcd ports.
func TestEtcdAndHTTPTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "cluster")
	pair := ca.Issue(t, "node", pkix.Name{CommonName: "node"})
	cfg := Config{EtcdTLS: true, HTTPTLS: true, TLSCert: pair.CertFile, TLSKey: pair.KeyFile, TLSClientCA: ca.File}
	first := startLoopbackNode(t, cfg)
	joiner := cfg
	joiner.Join = []string{strings.TrimPrefix(first.member.ClientURL(), "https://")}
	second := startLoopbackNode(t, joiner)

	nodeCert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	cl := httpsClient(ca.Cert, &nodeCert) // the admin API needs a client certificate of the CA
	resp, err := cl.Get("https://" + second.HTTPAddr() + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var st ClusterStatus
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || !st.Quorum || len(st.Members) != 2 {
		t.Fatalf("status over HTTPS: %v %+v", err, st)
	}
	for _, m := range st.Members {
		if !m.Healthy || !strings.HasPrefix(m.PeerURLs[0], "https://") || !strings.HasPrefix(m.ClientURLs[0], "https://") {
			t.Errorf("member %+v: want healthy with https URLs", m)
		}
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	for _, u := range []string{"http://" + first.HTTPAddr() + "/healthz",
		strings.Replace(first.member.ClientURL(), "https://", "http://", 1) + "/version",
		strings.Replace(first.member.PeerURL(), "https://", "http://", 1) + "/members"} {
		if resp, err := plain.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("plaintext %s answered 200", u)
			}
		}
	}
}

// TestTLSPortSettings: etcd-tls and http-tls need the node's certificate, and
// etcd-tls the CA of the other nodes' certificates.
func TestTLSPortSettings(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{EtcdTLS: true}, "etcd-tls and http-tls serve this node's certificate"},
		{Config{HTTPTLS: true}, "etcd-tls and http-tls serve this node's certificate"},
		{Config{EtcdTLS: true, TLSCert: "c", TLSKey: "k"}, "etcd-tls needs the CA"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if err := (Config{HTTPTLS: true, TLSCert: "c", TLSKey: "k"}).Validate(); err != nil {
		t.Errorf("http-tls without a CA: %v", err)
	}
}
