package appliance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"skiff/auth"
	"skiff/cluster"
	"skiff/internal/freeport"
	"skiff/internal/pki"
)

// secureConfig is a node on loopback with its data in dir and etcd ports that
// stay the same across restarts.
func secureConfig(t *testing.T, dir string) Config {
	t.Helper()
	port := func() string {
		p, err := freeport.Pick("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler), Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0",
		EtcdClient: port(), EtcdPeer: port(), JoinTimeout: 20 * time.Second}
}

func startNode(t *testing.T, cfg Config) (*Node, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := Start(ctx, cfg)
	if err == nil {
		t.Cleanup(func() { n.Close() })
	}
	return n, err
}

// nodeClient is an HTTPS client that authenticates with the node's own
// certificate.
func nodeClient(t *testing.T, dataDir string) *http.Client {
	t.Helper()
	p := pki.PathsOf(dataDir)
	m, err := p.Load()
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(m.NodeCert, pki.KeyPEM(m.NodeKey))
	if err != nil {
		t.Fatal(err)
	}
	return httpsClient(m.CA.Cert, &pair)
}

// TestSecureFormation: a node formed with --secure makes its CA and files, the
// admin user and a join token; a second node joins with the token; produce and
// consume work over SASL_SSL with replication factor 2 (followers log in as the
// broker user); the token is refused a second time, and so are a wrong one, an
// expired one and one of another CA; the joined node restarts on its stored
// certificate; the admin API makes new tokens for a client certificate only.
func TestSecureFormation(t *testing.T) {
	var formed SecureFormed
	c1 := secureConfig(t, t.TempDir())
	c1.Secure, c1.Bootstrap = true, true
	c1.OnSecureFormed = func(f SecureFormed) { formed = f }
	n1, err := startNode(t, c1)
	if err != nil {
		t.Fatal(err)
	}
	if formed.JoinToken == "" || formed.HTTPAddr != n1.HTTPAddr() || time.Until(formed.JoinTokenExpires) < 59*time.Minute {
		t.Fatalf("formed: %+v", formed)
	}
	fi, err := os.Stat(formed.AdminPasswordFile)
	if err != nil || fi.Mode().Perm() != 0o600 || formed.AdminPasswordFile != filepath.Join(c1.DataDir, "initial-admin-password") {
		t.Fatalf("admin password file %s: %v %v", formed.AdminPasswordFile, fi, err)
	}
	password, err := readToken(formed.AdminPasswordFile)
	if err != nil {
		t.Fatal(err)
	}
	if addrs := n1.ListenerAddrs(); len(addrs) != 1 || !strings.HasPrefix(addrs[0], "SASL_SSL://") {
		t.Fatalf("listeners %v, want one SASL_SSL", addrs)
	}

	c2 := secureConfig(t, t.TempDir())
	c2.Join, c2.JoinToken = []string{n1.HTTPAddr()}, formed.JoinToken
	n2, err := startNode(t, c2)
	if err != nil {
		t.Fatal(err)
	}

	// Refusals, each with its reason, and nothing left in the data directory.
	usedBy := func() string {
		used, err := n1.store.ConsumeJoinToken(context.Background(), tokID(t, formed.JoinToken), func([]byte) bool { return true }, time.Now(), "probe")
		if !errors.Is(err, cluster.ErrJoinTokenUsed) {
			t.Fatalf("the first join token: %v, want it used", err)
		}
		return used.UsedBy + " " + used.Used.String()
	}
	usedBefore := usedBy()
	other, err := pki.NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := pki.ParseToken(formed.JoinToken)
	wrong := tok
	wrong.Secret = pki.NewToken(tok.CA).Secret
	expired := pki.NewToken(tok.CA)
	if err := n1.store.CreateJoinToken(context.Background(), cluster.JoinToken{ID: expired.ID, SecretHash: pki.SecretHash(expired.Secret),
		Created: time.Now().Add(-2 * time.Hour), Expires: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ token, want string }{
		{formed.JoinToken, "already used"},
		{wrong.String(), "not one of this cluster's"},
		{expired.String(), "expired"},
		{pki.NewToken(other.Fingerprint()).String(), "does not present the CA of the join token"},
	} {
		c := secureConfig(t, t.TempDir())
		c.Join, c.JoinToken, c.JoinTimeout = []string{n1.HTTPAddr()}, tc.token, 5*time.Second
		if _, err := startNode(t, c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("join with token %s: %v, want %q", tc.token, err, tc.want)
		}
		if ok, _ := pki.PathsOf(c.DataDir).Exists(); ok {
			t.Errorf("a refused join left %s", pki.PathsOf(c.DataDir).Dir)
		}
	}
	// Nor anything in the cluster: still two etcd members, and the used token
	// still names the second node.
	members, err := n1.member.Client().MemberList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(members.Members) != 2 {
		t.Errorf("%d etcd members after the refused joins, want 2", len(members.Members))
	}
	if after := usedBy(); after != usedBefore {
		t.Errorf("the used token names %q after the refused joins, %q before", after, usedBefore)
	}

	// Produce and consume over SASL_SSL as admin, replication factor 2.
	m, _ := pki.PathsOf(c1.DataDir).Load()
	roots := x509.NewCertPool()
	roots.AddCert(m.CA.Cert)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n1.KafkaAddr(), n2.KafkaAddr()),
		kgo.DialTLSConfig(&tls.Config{RootCAs: roots}),
		kgo.SASL(scram.Auth{User: AdminUser, Pass: password}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("secure"), kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 2, nil, "secure"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for got < 10 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	waitISR(t, n1, "secure", 2)

	// A client certificate of the cluster's CA makes tokens; no credentials, none.
	base := "https://" + n2.HTTPAddr() + "/v1/cluster/join-token?ttl=10m"
	resp, err := nodeClient(t, c2.DataDir).Post(base, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ans JoinTokenAnswer
	json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if _, err := pki.ParseToken(ans.Token); err != nil || time.Until(ans.Expires) > 10*time.Minute || ans.HTTPAddr != n2.HTTPAddr() {
		t.Errorf("join-token answer %+v (%v)", ans, err)
	}
	if resp, err := httpsClient(m.CA.Cert, nil).Post(base, "", nil); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("join-token without credentials: %v %v", resp, err)
	}

	// The joined node restarts on its stored certificate, whatever its flags say.
	if err := n2.Close(); err != nil {
		t.Fatal(err)
	}
	if n2, err = startNode(t, c2); err != nil {
		t.Fatalf("restart of the joined node: %v", err)
	}
	if !strings.HasPrefix(n2.member.ClientURL(), "https://") {
		t.Errorf("restarted member at %s", n2.member.ClientURL())
	}
	c2.JoinToken, c2.Join = "", nil
	n2.Close()
	if n2, err = startNode(t, c2); err != nil {
		t.Fatalf("restart without --join-token: %v", err)
	}
	if n2.secure == nil || n2.ListenerAddrs()[0][:8] != "SASL_SSL" {
		t.Error("a secure data directory restarted without --join-token is not secure")
	}
	waitISR(t, n1, "secure", 2)
}

// waitISR waits until partition 0 of topic has size replicas in sync.
func waitISR(t *testing.T, n *Node, topic string, size int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, ok := n.cache.Snapshot().Partition(topic, 0); ok && len(st.ISR) == size {
			return
		}
		if time.Now().After(deadline) {
			st, _ := n.cache.Snapshot().Partition(topic, 0)
			t.Fatalf("ISR of %s-0: %v, want %d replicas", topic, st.ISR, size)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// TestSecureSettings: the settings that secure formation refuses.
func TestSecureSettings(t *testing.T) {
	tok := pki.NewToken(pki.Fingerprint{}).String()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Secure: true, TLSCert: "c", TLSKey: "k"}, "exclude tls-cert"},
		{Config{JoinToken: tok}, "join-token needs join"},
		{Config{JoinToken: "nope", Join: []string{"h:9644"}}, "not a join token"},
		{Config{Secure: true, Join: []string{"h:9093"}}, "with --join-token"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestInterruptedJoin: a join that got its material but stopped before its etcd
// member existed (the token is spent) is retried by starting the node again: it
// proves itself with the certificate it got, and joins.
func TestInterruptedJoin(t *testing.T) {
	var formed SecureFormed
	c1 := secureConfig(t, t.TempDir())
	c1.Secure = true
	c1.OnSecureFormed = func(f SecureFormed) { formed = f }
	n1, err := startNode(t, c1)
	if err != nil {
		t.Fatal(err)
	}
	c2 := secureConfig(t, t.TempDir())
	c2.Join, c2.JoinToken = []string{n1.HTTPAddr()}, formed.JoinToken
	c2.setDefaults()
	// The handshake alone, as a start that stops right after it would.
	handshake := func() error {
		j := &Node{cfg: c2, logger: c2.Logger}
		if err := j.secureSettings(); err != nil {
			return err
		}
		return j.secureMaterial(context.Background())
	}
	if err := handshake(); err != nil {
		t.Fatal(err)
	}
	first, err := pki.PathsOf(c2.DataDir).Load()
	if err != nil {
		t.Fatal(err)
	}
	n2, err := startNode(t, c2)
	if err != nil {
		t.Fatalf("start after an interrupted join, with a spent token: %v", err)
	}
	again, err := pki.PathsOf(c2.DataDir).Load()
	if err != nil || !again.NodeKey.Equal(first.NodeKey) {
		t.Errorf("the retried join did not keep the node's key (%v)", err)
	}
	if _, body := get(nodeClient(t, c2.DataDir), "https://"+n2.HTTPAddr()+"/v1/cluster", ""); !strings.Contains(body, `"quorum": true`) {
		t.Errorf("status of the joined node: %s", body)
	}
}

// TestWithSuperUser: --secure adds User:admin to super-users once, keeping the
// others.
func TestWithSuperUser(t *testing.T) {
	admin := auth.User(AdminUser)
	for in, want := range map[string]string{
		"":                            "User:admin",
		"User:ANONYMOUS":              "User:admin;User:ANONYMOUS",
		" User:ops ; User:admin ;":    "User:ops;User:admin",
		"User:CN=node,O=x;User:admin": "User:CN=node,O=x;User:admin",
	} {
		if got := withSuperUser(in, admin); got != want {
			t.Errorf("withSuperUser(%q) = %q, want %q", in, got, want)
		}
	}
}

// tokID is the id of a join token's text.
func tokID(t *testing.T, text string) string {
	t.Helper()
	tok, err := pki.ParseToken(text)
	if err != nil {
		t.Fatal(err)
	}
	return tok.ID
}
