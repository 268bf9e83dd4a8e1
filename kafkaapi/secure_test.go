package kafkaapi_test

// The secure node: one node with a listener of each security protocol, shared by
// the TLS and SASL tests, and helpers to reach it.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"skiff/appliance"
	"skiff/internal/syncbuf"
	"skiff/internal/testcerts"
)

// secure is the shared secure node, started on first use and closed by TestMain.
var secure struct {
	listenerNode
	ca    *testcerts.CA
	other *testcerts.CA // a CA the node does not trust
	// client is a client certificate of the node's CA, with the subject
	// CN=client,OU=tests,O=Skiff.
	client *testcerts.Pair
	// certFile and keyFile are the node's certificate files (rotation replaces them).
	certFile, keyFile string
}

// secureReauth is the secure node's connections.max.reauth.ms.
const secureReauth = 3 * time.Second

// secureNode returns the shared secure node: listeners PLAINTEXT, SSL (mutual TLS
// with the test CA; the principal is the certificate's CN), SASL_PLAINTEXT and
// SASL_SSL offering SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN, with sessions of
// secureReauth; its logs are in secure.logs.
func secureNode(t testing.TB) *appliance.Node {
	t.Helper()
	return secure.start(t, "kafkaapi-secure", func(c *appliance.Config) {
		secure.ca = testcerts.NewCA(t, secure.dir, "ca")
		secure.other = testcerts.NewCA(t, secure.dir, "other")
		secure.client = secure.ca.Issue(t, "client", pkix.Name{CommonName: "client", OrganizationalUnit: []string{"tests"}, Organization: []string{"Skiff"}})
		server := secure.ca.Issue(t, "server", pkix.Name{CommonName: "server"})
		secure.certFile, secure.keyFile = filepath.Join(secure.dir, "node.pem"), filepath.Join(secure.dir, "node-key.pem")
		installPair(t, server)
		c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0", "SASL_SSL://127.0.0.1:0"}
		c.TLSCert, c.TLSKey, c.TLSClientCA = secure.certFile, secure.keyFile, secure.ca.File
		c.TLSPrincipalMappingRules = `RULE:^CN=([^,]*),.*$/$1/`
		c.SASLMechanisms = []string{"SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"}
		c.ReauthMax = secureReauth
	}, nil)
}

// listenerNode is a node with several listeners, shared by the tests that use
// it: started on first use, closed by TestMain.
type listenerNode struct {
	once  sync.Once
	node  *appliance.Node
	dir   string
	err   error
	logs  *syncbuf.Buffer   // the node's logs, from debug level
	addrs map[string]string // the listeners' addresses by name
}

// start starts the node once, named name, with its data in a new temporary
// directory (n.dir) and its logs in n.logs: configure sets its listeners and
// more (it may use n.dir), then ready runs once it serves (nil: nothing).
func (n *listenerNode) start(t testing.TB, name string, configure func(*appliance.Config), ready func() error) *appliance.Node {
	t.Helper()
	n.once.Do(func() {
		if n.dir, n.err = os.MkdirTemp("", name+"-"); n.err != nil {
			return
		}
		n.logs = &syncbuf.Buffer{}
		n.node, n.err = startNode(filepath.Join(n.dir, "data"), func(c *appliance.Config) {
			c.NodeName = name
			c.Logger = slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			configure(c)
		})
		if n.err != nil {
			return
		}
		n.addrs = map[string]string{}
		for _, a := range n.node.ListenerAddrs() {
			listener, addr, _ := strings.Cut(a, "://")
			n.addrs[listener] = addr
		}
		if ready != nil {
			n.err = ready()
		}
	})
	if n.err != nil {
		t.Fatalf("start node %s: %v", name, n.err)
	}
	return n.node
}

// close closes the node, if it was started, and removes its directory.
func (n *listenerNode) close() error {
	var err error
	if n.node != nil {
		err = n.node.Close()
	}
	if n.dir != "" {
		os.RemoveAll(n.dir)
	}
	return err
}

// installPair makes p the secure node's certificate (atomic replaces).
func installPair(t testing.TB, p *testcerts.Pair) {
	t.Helper()
	for path, b := range map[string][]byte{secure.certFile: p.CertPEM, secure.keyFile: p.KeyPEM} {
		if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
}

func closeSecure() error { return secure.close() }

// clientTLS is a client configuration trusting the node's CA, presenting p (nil:
// no certificate).
func clientTLS(p *testcerts.Pair) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(secure.ca.Cert)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if p != nil {
		cert, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
		if err != nil {
			panic(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// secureClient is a franz-go client of the secure node's listener.
func secureClient(t testing.TB, listener string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(secure.addrs[listener]),
		kgo.RetryTimeout(10 * time.Second), kgo.RequestRetries(3), kgo.AllowAutoTopicCreation()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// roundTrip produces one record to a new topic through cl and consumes it back.
func roundTrip(t testing.TB, cl *kgo.Client, topic string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("secret")}).FirstErr(); err != nil {
		return err
	}
	cl.AddConsumeTopics(topic)
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var got []string
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		for _, e := range fs.Errors() {
			return e.Err
		}
		if len(got) > 0 {
			if got[0] != "secret" {
				t.Fatalf("consumed %q", got)
			}
			return nil
		}
	}
}

// waitLog waits until the secure node has logged a line containing all of parts.
func waitLog(t testing.TB, parts ...string) {
	t.Helper()
	waitLogIn(t, secure.logs, parts...)
}

// waitLogIn waits until logs hold a line containing all of parts.
func waitLogIn(t testing.TB, logs *syncbuf.Buffer, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, line := range strings.Split(logs.String(), "\n") {
			if containsAll(line, parts) {
				return
			}
		}
		if time.Now().After(deadline) {
			all := logs.String()
			t.Fatalf("no log line with %q; the node's last logs:\n%s", parts, all[max(0, len(all)-4000):])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// createUser gives user both SCRAM credentials of password, through the
// PLAINTEXT listener.
func createUser(t testing.TB, user, password string) {
	t.Helper()
	adm := kadm.NewClient(secureClient(t, "PLAINTEXT"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: user, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: password},
		{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: password},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("create user %s: %v", user, err)
	}
}

// saslMechanism is the franz-go client mechanism of name.
func saslMechanism(name, user, password string) sasl.Mechanism {
	switch name {
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	}
	return plain.Auth{User: user, Pass: password}.AsMechanism()
}

// saslLogin authenticates the raw connection c with m: SaslHandshake v1, then
// SaslAuthenticate at version v until the exchange ends or fails. It returns
// the last answer.
func saslLogin(t testing.TB, c *kconn, m sasl.Mechanism, v int16) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	if r := saslHandshake(c, 1, m.Name()); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake %s: %s", m.Name(), errName(r.ErrorCode))
	}
	session, msg, err := m.Authenticate(context.Background(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(v)
		req.SASLAuthBytes = msg
		r := c.do(req).(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 {
			return r
		}
		done, next, err := session.Challenge(r.SASLAuthBytes)
		if err != nil {
			t.Fatalf("the client refuses the server's answer: %v", err)
		}
		if done {
			return r
		}
		msg = next
	}
}

// saslHandshake sends SaslHandshake at version v for mechanism and returns the
// answer.
func saslHandshake(c *kconn, v int16, mechanism string) *kmsg.SASLHandshakeResponse {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(v)
	hs.Mechanism = mechanism
	return c.do(hs).(*kmsg.SASLHandshakeResponse)
}
