package e2e

// Security with real clients: kcat (librdkafka) over SASL_SSL (SCRAM-SHA-512),
// SASL_PLAINTEXT (SCRAM-SHA-256) and SSL with a client certificate; kafka-python
// over SASL_SSL with PLAIN; replication between nodes over a SASL_SSL or SSL
// inter-broker listener.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"skiff/internal/testcerts"
	"skiff/internal/testnode"
)

// secureFiles are a CA, the node certificate (for 127.0.0.1) and a client
// certificate, in a temporary directory.
type secureFiles struct {
	dir            string
	ca             *testcerts.CA
	server, client *testcerts.Pair
}

func newSecureFiles(t *testing.T) secureFiles {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	return secureFiles{dir: dir, ca: ca,
		server: ca.Issue(t, "server", pkix.Name{CommonName: "server"}),
		client: ca.Issue(t, "client", pkix.Name{CommonName: "kcat", OrganizationalUnit: []string{"tests"}})}
}

// tlsArgs are the serve flags of the TLS files.
func (f secureFiles) tlsArgs() []string {
	return []string{"--tls-cert", f.server.CertFile, "--tls-key", f.server.KeyFile, "--tls-client-ca", f.ca.File}
}

// createSCRAMUser gives user both SCRAM credentials of password through an
// unauthenticated listener at addr.
func createSCRAMUser(t *testing.T, addr, user, password string) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, clientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
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

// TestKcatSecurity: kcat produces and consumes 1,000 lines over SASL_SSL with
// SCRAM-SHA-512, SASL_PLAINTEXT with SCRAM-SHA-256 and SSL with a client
// certificate; with a wrong password or without a client certificate it gets
// nothing.
func TestKcatSecurity(t *testing.T) {
	f := newSecureFiles(t)
	n := testnode.Start(t, append([]string{"--listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"},
		f.tlsArgs()...)...)
	createSCRAMUser(t, n.Listeners["PLAINTEXT"], "kcat", "kcat-secret")
	var in bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&in, "secure line %04d\n", i)
	}
	file := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(file, in.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	sasl := func(mech, password string) []string {
		return []string{"-X", "sasl.mechanisms=" + mech, "-X", "sasl.username=kcat", "-X", "sasl.password=" + password}
	}
	tlsCA := []string{"-X", "ssl.ca.location=" + f.ca.File}
	for _, tc := range []struct {
		listener string
		args     []string
	}{
		{"SASL_SSL", append(append([]string{"-X", "security.protocol=SASL_SSL"}, sasl("SCRAM-SHA-512", "kcat-secret")...), tlsCA...)},
		{"SASL_PLAINTEXT", append([]string{"-X", "security.protocol=SASL_PLAINTEXT"}, sasl("SCRAM-SHA-256", "kcat-secret")...)},
		{"SSL", append([]string{"-X", "security.protocol=SSL", "-X", "ssl.certificate.location=" + f.client.CertFile,
			"-X", "ssl.key.location=" + f.client.KeyFile}, tlsCA...)},
	} {
		t.Run(tc.listener, func(t *testing.T) {
			addr := n.Listeners[tc.listener]
			topic := "kcat-" + strings.ToLower(strings.ReplaceAll(tc.listener, "_", "-"))
			runKcat(t, nil, append([]string{"-b", addr, "-P", "-t", topic, "-l", file}, tc.args...)...)
			out := runKcat(t, nil, append([]string{"-b", addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q"}, tc.args...)...)
			if !bytes.Equal(out, in.Bytes()) {
				t.Fatalf("consumed %d bytes, produced %d: not identical", len(out), in.Len())
			}
			meta := string(runKcat(t, nil, append([]string{"-b", addr, "-L", "-t", topic}, tc.args...)...))
			if !strings.Contains(meta, "broker 1 at "+addr) {
				t.Errorf("kcat -L over %s does not name the %s listener %s:\n%s", tc.listener, tc.listener, addr, meta)
			}
		})
	}
	// Refused: a wrong password, and SSL without a client certificate.
	for name, args := range map[string][]string{
		"wrong password":        append(append([]string{"-b", n.Listeners["SASL_SSL"], "-X", "security.protocol=SASL_SSL"}, sasl("SCRAM-SHA-512", "wrong")...), tlsCA...),
		"no client certificate": append([]string{"-b", n.Listeners["SSL"], "-X", "security.protocol=SSL"}, tlsCA...),
		"plaintext on TLS":      {"-b", n.Listeners["SSL"]},
		"TLS on plaintext":      append([]string{"-b", n.Listeners["SASL_PLAINTEXT"], "-X", "security.protocol=SSL"}, tlsCA...),
	} {
		cmd := exec.Command(kcat(t), append([]string{"-L", "-m", "3"}, args...)...)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("%s: kcat -L succeeded:\n%s", name, out)
		}
	}
	if !strings.Contains(n.Logs(), "SASL authentication failed") || !strings.Contains(n.Logs(), "TLS handshake failed") {
		t.Error("the node did not log the refusals")
	}
}

// TestKafkaPythonSASLPlain: kafka-python (Debian's python3-kafka, 2.0: SaslHandshake
// v0 and bare tokens) produces and consumes over SASL_SSL with PLAIN.
func TestKafkaPythonSASLPlain(t *testing.T) {
	if _, err := os.Stat("/usr/lib/python3/dist-packages/kafka"); err != nil {
		t.Fatal("kafka-python not found: install Debian's python3-kafka (scripts/test-deps.sh does)")
	}
	f := newSecureFiles(t)
	n := testnode.Start(t, append([]string{"--listeners", "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"--sasl-mechanisms", "PLAIN,SCRAM-SHA-512"}, f.tlsArgs()...)...)
	createSCRAMUser(t, n.Listeners["PLAINTEXT"], "python", "py-secret")
	script := `
import sys
from kafka import KafkaProducer, KafkaConsumer
addr, ca = sys.argv[1], sys.argv[2]
sec = dict(bootstrap_servers=addr, security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
           sasl_plain_username="python", sasl_plain_password="py-secret", ssl_cafile=ca)
p = KafkaProducer(**sec)
for i in range(100):
    p.send("python-plain", b"python %03d" % i)
p.flush()
p.close()
c = KafkaConsumer("python-plain", auto_offset_reset="earliest", consumer_timeout_ms=15000, **sec)
got = [m.value.decode() for m in c]
c.close()
print(len(got), got[0], got[-1])
`
	// Debian's python3 (the one python3-kafka is installed for), not one on PATH.
	cmd := exec.Command("/usr/bin/python3", "-c", script, n.Listeners["SASL_SSL"], f.ca.File)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-python: %v\n%s\nnode logs:\n%s", err, out, n.Logs())
	}
	if got := strings.TrimSpace(lastLine(string(out))); got != "100 python 000 python 099" {
		t.Fatalf("kafka-python read %q, want 100 records", got)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestSecureReplication: followers fetch from their leaders over the
// inter-broker listener: SASL_SSL with SCRAM credentials from the settings, or
// SSL with the node's certificate (mutual TLS). A topic of replication factor 3
// gets all replicas in sync, and what is produced with acks=all is read back.
func TestSecureReplication(t *testing.T) {
	f := newSecureFiles(t)
	pwFile := filepath.Join(f.dir, "broker.pw")
	if err := os.WriteFile(pwFile, []byte("broker-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		login []kgo.Opt
	}{
		{"SASL_SSL", []string{"--listeners", "SASL_SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
			"--inter-broker-user", "broker", "--inter-broker-password-file", pwFile},
			[]kgo.Opt{kgo.SASL(scram.Auth{User: "broker", Pass: "broker-secret"}.AsSha512Mechanism())}},
		{"SSL", []string{"--listeners", "SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := testnode.StartCluster(t, 3, append(tc.args, f.tlsArgs()...)...)
			if tc.name == "SASL_SSL" {
				createSCRAMUser(t, nodes[0].Listeners["PLAINTEXT"], "broker", "broker-secret")
			}
			pool := x509.NewCertPool()
			pool.AddCert(f.ca.Cert)
			tlsCfg := &tls.Config{RootCAs: pool}
			if cert, err := tls.LoadX509KeyPair(f.client.CertFile, f.client.KeyFile); err == nil {
				tlsCfg.Certificates = []tls.Certificate{cert}
			}
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(nodes[0].Listeners[tc.name]), kgo.DialTLSConfig(tlsCfg),
				kgo.DefaultProduceTopic("replicated"), kgo.ConsumeTopics("replicated")}, tc.login...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			adm := kadm.NewClient(cl)
			if _, err := adm.CreateTopic(ctx, 1, 3, nil, "replicated"); err != nil {
				t.Fatal(err)
			}
			waitISR(ctx, t, adm, "replicated", 3, nodes[1].Logs)
			produceConsume(ctx, t, cl, 100)
		})
	}
}
