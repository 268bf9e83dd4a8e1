package e2e

// A cluster formed with one flag (--secure) and two join tokens, with real
// processes: Kafka over SASL_SSL with replication factor 3 (franz-go, kcat and
// confluent-kafka), the ACL authorizer on (a user may do nothing until granted),
// every internal port refusing plaintext and certificates of another CA, a
// killed node rejoining on its stored certificate, and used and expired tokens
// refused.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"skiff/internal/testcerts"
	"skiff/internal/testnode"
)

func TestSecureCluster(t *testing.T) {
	nodes := testnode.StartSecureCluster(t, 3)
	first := nodes[0]
	caFile := filepath.Join(first.DataDir, "secure", "ca.pem")
	pw, err := os.ReadFile(filepath.Join(first.DataDir, "initial-admin-password"))
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(pw))
	// The first node prints where the password is, never the password.
	if logs := first.Logs(); !strings.Contains(logs, filepath.Join(first.DataDir, "initial-admin-password")) || strings.Contains(logs, password) {
		t.Errorf("the first node's output should name the password file and not hold the password")
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)

	var seeds []string
	for _, n := range nodes {
		if n.Listeners["SASL_SSL"] == "" || len(n.Listeners) != 1 {
			t.Fatalf("node %d listeners %v, want one SASL_SSL", n.ID, n.Listeners)
		}
		seeds = append(seeds, n.Addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(&tls.Config{RootCAs: roots}),
		kgo.SASL(scram.Auth{User: "admin", Pass: password}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("secure-rf3"), kgo.ConsumeTopics("secure-rf3"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "secure-rf3"); err != nil {
		t.Fatal(err)
	}
	waitISR(ctx, t, adm, "secure-rf3", 3, nodes[1].Logs)
	produced := map[string]bool{}
	for i := range 1000 {
		v := fmt.Sprintf("secure %04d", i)
		produced[v] = true
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumeAll(ctx, t, cl, produced)

	t.Run("kcat over SASL_SSL", func(t *testing.T) {
		sec := []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=admin",
			"-X", "sasl.password=" + password, "-X", "ssl.ca.location=" + caFile}
		in := []byte("kcat one\nkcat two\nkcat three\n")
		runKcat(t, in, append([]string{"-b", nodes[1].Addr, "-P", "-t", "secure-kcat"}, sec...)...)
		out := runKcat(t, nil, append([]string{"-b", nodes[2].Addr, "-C", "-t", "secure-kcat", "-o", "beginning", "-e", "-q"}, sec...)...)
		if string(out) != string(in) {
			t.Errorf("kcat consumed %q, produced %q", out, in)
		}
	})

	t.Run("confluent-kafka over SASL_SSL", func(t *testing.T) {
		if err := exec.Command("/usr/bin/python3", "-c", "import confluent_kafka").Run(); err != nil {
			t.Fatal("confluent-kafka not found: install Debian's python3-confluent-kafka (scripts/test-deps.sh does)")
		}
		script := `
import sys
from confluent_kafka import Consumer, Producer
addr, ca, password = sys.argv[1], sys.argv[2], sys.argv[3]
sec = {"bootstrap.servers": addr, "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256",
       "sasl.username": "admin", "sasl.password": password, "ssl.ca.location": ca}
p = Producer(dict(sec, **{"enable.idempotence": True, "acks": "all"}))
for i in range(100):
    p.produce("secure-python", b"python %03d" % i)
if p.flush(30) != 0:
    sys.exit("records left unacknowledged")
c = Consumer(dict(sec, **{"group.id": "python", "auto.offset.reset": "earliest"}))
c.subscribe(["secure-python"])
got = []
while len(got) < 100:
    m = c.poll(30)
    if m is None:
        break
    if m.error():
        sys.exit(str(m.error()))
    got.append(m.value().decode())
c.close()
print(len(got), got[0], got[-1])
`
		// Debian's python3 (the one python3-confluent-kafka is installed for).
		out, err := exec.Command("/usr/bin/python3", "-c", script, nodes[1].Addr, caFile, password).CombinedOutput()
		if err != nil {
			t.Fatalf("confluent-kafka: %v\n%s", err, out)
		}
		if got := lastLine(string(out)); got != "100 python 000 python 099" {
			t.Fatalf("confluent-kafka read %q, want 100 records in order", got)
		}
	})

	t.Run("ACLs: a user may do nothing until granted", func(t *testing.T) {
		// The RF 3 topic above got its ISR full with the authorizer on: followers
		// fetch as the inter-broker user without an ACL. Another user gets nothing.
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, "secure-acl"); err != nil {
			t.Fatal(err)
		}
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		alice, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(&tls.Config{RootCAs: roots}),
			kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
			kgo.DefaultProduceTopic("secure-acl"), kgo.DisableIdempotentWrite())
		if err != nil {
			t.Fatal(err)
		}
		defer alice.Close()
		if err := alice.ProduceSync(ctx, kgo.StringRecord("refused")).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("alice without ACLs produced: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		if ends := endOffsets(t, ctx, adm, "secure-acl"); ends[0] != 0 {
			t.Fatalf("end offset %d after a refused produce", ends[0])
		}
		created, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("secure-acl").
			ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range created {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		// Every node applies the ACL from its watch: the partition's leader may
		// not have it yet when the node that created it answers.
		for {
			err := alice.ProduceSync(ctx, kgo.StringRecord("allowed")).FirstErr()
			if err == nil {
				break
			}
			if !errors.Is(err, kerr.TopicAuthorizationFailed) || ctx.Err() != nil {
				t.Fatalf("alice with WRITE: %v", err)
			}
			time.Sleep(50 * time.Millisecond) // polling a condition with ctx's deadline
		}
		if ends := endOffsets(t, ctx, adm, "secure-acl"); ends[0] != 1 {
			t.Fatalf("end offset %d, want 1", ends[0])
		}
	})

	t.Run("internal ports refuse plaintext and strangers", func(t *testing.T) {
		dir := t.TempDir()
		other := testcerts.NewCA(t, dir, "other")
		stranger := loadPair(t, other.Issue(t, "stranger", pkix.Name{CommonName: "stranger"}))
		own := loadPair(t, &testcerts.Pair{CertFile: filepath.Join(first.DataDir, "secure", "node.pem"), KeyFile: filepath.Join(first.DataDir, "secure", "node-key.pem")})
		for _, n := range nodes {
			ports := map[string]string{"Kafka": n.Addr, "etcd client": n.EtcdClient, "etcd peer": n.EtcdPeer, "HTTP": n.HTTPAddr}
			for name, addr := range ports {
				served := plaintextServed
				if name == "Kafka" {
					served = plaintextKafkaServed
				}
				if err := served(addr); err == nil {
					t.Errorf("node %d %s port %s serves plaintext", n.ID, name, addr)
				}
				if err := tlsAccepted(addr, roots, stranger); err == nil {
					t.Errorf("node %d %s port %s accepted a certificate of another CA", n.ID, name, addr)
				}
				// The control: the cluster CA's certificate is accepted.
				if err := tlsAccepted(addr, roots, own); err != nil {
					t.Errorf("node %d %s port %s refused a node certificate: %v", n.ID, name, addr, err)
				}
			}
		}
	})

	t.Run("used and expired tokens", func(t *testing.T) {
		used := first.PrintedJoinToken() // the second node joined with it
		before := time.Now()
		expiring := testnode.NewJoinToken(t, first, "--ttl", "1s")
		time.Sleep(time.Until(before.Add(1100 * time.Millisecond))) // the token's life, not a condition
		for token, want := range map[string]string{used: "already used", expiring: "expired"} {
			out, _, err := testnode.New(t).ServeExpectExit(60*time.Second, "--join", first.HTTPAddr, "--join-token", token)
			if err == nil || !strings.Contains(out, want) {
				t.Errorf("join with a token that is %s: %v\n%s", want, err, out)
			}
		}
	})

	t.Run("a killed node rejoins on its stored certificate", func(t *testing.T) {
		third := nodes[2]
		third.Kill()
		third.Restart()
		for _, n := range nodes {
			n.WaitLiveBrokers(3)
		}
		waitISR(ctx, t, adm, "secure-rf3", 3, nodes[1].Logs)
		if !strings.Contains(third.Logs(), "restarting etcd member") || strings.Count(third.Logs(), "received a node certificate") != 1 {
			t.Error("the restarted node did not restart on its stored material")
		}
		one, err := kgo.NewClient(kgo.SeedBrokers(third.Addr), kgo.DialTLSConfig(&tls.Config{RootCAs: roots}),
			kgo.SASL(scram.Auth{User: "admin", Pass: password}.AsSha512Mechanism()),
			kgo.ConsumeTopics("secure-rf3"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		consumeAll(ctx, t, one, produced)
	})
}

func loadPair(t *testing.T, p *testcerts.Pair) *tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// consumeAll polls cl until it read every value of want once, each partition in
// the order produced.
func consumeAll(ctx context.Context, t *testing.T, cl *kgo.Client, want map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	last := map[int32]string{}
	for len(seen) < len(want) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", len(seen), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if !want[v] || seen[v] || v < last[r.Partition] {
				t.Fatalf("record %q at %d/%d: unknown, twice or out of order", v, r.Partition, r.Offset)
			}
			seen[v], last[r.Partition] = true, v
		})
	}
}

// plaintextServed sends a plaintext HTTP request to addr and returns nil if it
// was answered 200, as a plaintext port would answer.
func plaintextServed(addr string) error {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + addr + "/version")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	return nil
}

// plaintextKafkaServed sends a plaintext ApiVersions request to addr and returns nil
// if it was answered, as a PLAINTEXT or SASL_PLAINTEXT listener would answer (an
// HTTP request would fail on those too).
func plaintextKafkaServed(addr string) error {
	nc, err := sendRaw(addr, kmsg.NewPtrApiVersionsRequest(), 3*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = readRaw(nc, kmsg.NewPtrApiVersionsRequest())
	return err
}

// tlsAccepted dials addr with TLS, trusting roots and presenting cert whatever
// CAs the server names, and returns nil if the server keeps the connection open
// (it waits for a request) rather than failing the handshake.
func tlsAccepted(addr string, roots *x509.CertPool, cert *tls.Certificate) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", addr, &tls.Config{RootCAs: roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }})
	if err != nil {
		return err
	}
	defer conn.Close()
	// With TLS 1.3 the server checks the client certificate after the client
	// finished: a refusal arrives as an alert on the first read.
	conn.SetReadDeadline(time.Now().Add(time.Second))
	_, err = conn.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	return fmt.Errorf("connection ended: %v", err)
}
