package embedetcd

import (
	"context"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/internal/syncbuf"
	"skiff/internal/testcerts"
	"skiff/internal/tlsconf"
)

// tlsLoader loads pair's files with ca's certificate as the CA file.
func tlsLoader(t testing.TB, ca *testcerts.CA, pair *testcerts.Pair) *tlsconf.Loader {
	t.Helper()
	l, err := tlsconf.New(tlsconf.Files{Cert: pair.CertFile, Key: pair.KeyFile, CA: ca.File}, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestTLSCluster: a member with TLS admits a second one over TLS (Dial, AddMember
// with the https peer URL, Promote); both serve their clients over TLS. Plaintext,
// no client certificate, or one of another CA is refused on the client port, and
// plaintext on the peer port.
func TestTLSCluster(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "cluster")
	l1 := tlsLoader(t, ca, ca.Issue(t, "n1", pkix.Name{CommonName: "n1"}))
	l2 := tlsLoader(t, ca, ca.Issue(t, "n2", pkix.Name{CommonName: "n2"}))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c1 := testConfig(t, nil)
	c1.TLS = l1
	first, err := Start(ctx, c1)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if !strings.HasPrefix(first.ClientURL(), "https://") || !strings.HasPrefix(first.PeerURL(), "https://") {
		t.Fatalf("URLs %s %s, want https", first.ClientURL(), first.PeerURL())
	}

	cli, err := Dial([]string{strings.TrimPrefix(first.ClientURL(), "https://")}, l2, first.logger)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c2 := testConfig(t, nil)
	c2.Name, c2.TLS = "n2", l2
	if c2, err = c2.Resolve(); err != nil {
		t.Fatal(err)
	}
	// AddMember asks each member over TLS whether it knows the new one; a member it
	// cannot reach is logged and not waited for, which would hide a missing tls.
	var joinLog syncbuf.Buffer
	id, initial, err := AddMember(ctx, cli, l2, c2.Name, c2.PeerURL(), slog.New(slog.NewTextHandler(&joinLog, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(joinLog.String(), "does not answer") {
		t.Fatalf("AddMember could not ask a member over TLS:\n%s", joinLog.String())
	}
	c2.InitialCluster, c2.ClusterState = initial, ClusterStateExisting
	second, err := Start(ctx, c2)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := Promote(ctx, cli, id); err != nil {
		t.Fatal(err)
	}
	if err := second.WaitVoting(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Client().Put(ctx, "k", "over tls"); err != nil {
		t.Fatal(err)
	}
	resp, err := second.Client().Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "over tls" {
		t.Fatalf("read through the second member: %v %v", resp, err)
	}

	addr := strings.TrimPrefix(first.ClientURL(), "https://")
	other := testcerts.NewCA(t, dir, "other")
	stranger := tlsLoader(t, other, other.Issue(t, "stranger", pkix.Name{CommonName: "stranger"}))
	// A client that trusts the cluster's CA but presents another CA's certificate.
	strangerWithClusterCA, err := tlsconf.New(tlsconf.Files{Cert: stranger.Files().Cert, Key: stranger.Files().Key, CA: ca.File}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	noCert, err := tlsconf.New(tlsconf.Files{CA: ca.File}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]*tlsconf.Loader{"plaintext": nil, "no client certificate": noCert, "certificate of another CA": strangerWithClusterCA} {
		if err := tryGet(addr, l); err == nil {
			t.Errorf("%s: read etcd's client port", name)
		}
	}
	for _, u := range []string{first.ClientURL() + "/version", first.PeerURL() + "/members"} {
		if body, err := plainGet(strings.Replace(u, "https://", "http://", 1)); err == nil {
			t.Errorf("plaintext %s answered: %.100s", u, body)
		}
	}
}

// tryGet reads a key through a new client of addr with l's TLS (nil: plaintext).
func tryGet(addr string, l *tlsconf.Loader) error {
	cfg := clientv3.Config{Endpoints: []string{"http://" + addr}, DialTimeout: 2 * time.Second, Logger: newZapLogger(slog.DiscardHandler, new(atomic.Bool))}
	if l != nil {
		cfg.Endpoints, cfg.TLS = []string{"https://" + addr}, l.ClientConfig("")
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "k")
	return err
}

// plainGet is a plaintext HTTP GET of url that fails unless it answers 200.
func plainGet(url string) (string, error) {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), &httpStatusError{resp.Status}
	}
	return string(b), nil
}

type httpStatusError struct{ status string }

func (e *httpStatusError) Error() string { return "HTTP " + e.status }
