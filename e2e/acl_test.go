package e2e

// ACLs with real clients and real nodes: kcat (librdkafka) refused and then
// allowed after `skiff acl create`; replication between three nodes with the ACL
// authorizer, by the inter-broker user and by a principal granted CLUSTER_ACTION.

import (
	"bytes"
	"context"
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

	"skiff/internal/testnode"
)

// skiffCLI runs a skiff client command, which must succeed, and returns its output.
func skiffCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := testnode.Run(t, 60*time.Second, args...)
	if err != nil {
		t.Fatalf("skiff %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// kcatFails runs kcat, which must fail, and returns its output.
func kcatFails(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command(kcat(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("kcat %s succeeded:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// TestKcatACL: on a node with the ACL authorizer, kcat as a SCRAM user is refused
// (TOPIC_AUTHORIZATION_FAILED) producing and consuming until `skiff acl create`
// allows it, and refused again after `skiff acl delete`. Nothing refused is
// written.
func TestKcatACL(t *testing.T) {
	n := testnode.Start(t, "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"--authorizer", "acl", "--super-users", "User:ANONYMOUS")
	admin := []string{"-b", n.Listeners["PLAINTEXT"]}
	createSCRAMUser(t, n.Listeners["PLAINTEXT"], "kcat", "kcat-secret")
	skiffCLI(t, append([]string{"topic", "create", "acl-kcat"}, admin...)...)
	user := []string{"-b", n.Listeners["SASL_PLAINTEXT"], "-X", "security.protocol=SASL_PLAINTEXT",
		"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=kcat", "-X", "sasl.password=kcat-secret"}
	lines := []byte("one\ntwo\nthree\n")
	produce := append([]string{"-P", "-t", "acl-kcat"}, user...)
	consume := append([]string{"-C", "-t", "acl-kcat", "-o", "beginning", "-e", "-q"}, user...)

	if out := kcatFails(t, lines, produce...); !strings.Contains(out, "Topic authorization failed") {
		t.Fatalf("refused produce: kcat says:\n%s", out)
	}
	ends := endOffset0(t, n.Listeners["PLAINTEXT"], "acl-kcat")
	if ends != 0 {
		t.Fatalf("a refused produce wrote %d records", ends)
	}

	out := skiffCLI(t, append([]string{"acl", "create", "--principal", "User:kcat", "--operation", "Write", "--topic", "acl-kcat"}, admin...)...)
	if !strings.Contains(out, "created ACL User:kcat ALLOW WRITE on TOPIC LITERAL acl-kcat from *") {
		t.Fatalf("acl create says:\n%s", out)
	}
	runKcat(t, lines, produce...)
	if out := kcatFails(t, nil, consume...); !strings.Contains(out, "Topic authorization failed") {
		t.Fatalf("refused consume: kcat says:\n%s", out)
	}
	skiffCLI(t, append([]string{"acl", "create", "--principal", "User:kcat", "--operation", "Read", "--topic", "acl-", "--pattern", "prefixed"}, admin...)...)
	if got := runKcat(t, nil, consume...); !bytes.Equal(got, lines) {
		t.Fatalf("consumed %q", got)
	}

	list := skiffCLI(t, append([]string{"acl", "list", "--principal", "User:kcat"}, admin...)...)
	for _, row := range [][]string{
		{"PRINCIPAL", "PERMISSION", "OPERATION", "RESOURCE", "PATTERN", "NAME", "HOST"},
		{"User:kcat", "ALLOW", "WRITE", "TOPIC", "LITERAL", "acl-kcat", "*"},
		{"User:kcat", "ALLOW", "READ", "TOPIC", "PREFIXED", "acl-", "*"},
	} {
		if !hasRow(list, row...) {
			t.Fatalf("acl list lacks %q:\n%s", row, list)
		}
	}
	out = skiffCLI(t, append([]string{"acl", "delete", "--principal", "User:kcat", "--operation", "Write"}, admin...)...)
	if !strings.Contains(out, "deleted 1 ACLs") {
		t.Fatalf("acl delete says:\n%s", out)
	}
	if out := kcatFails(t, lines, produce...); !strings.Contains(out, "Topic authorization failed") {
		t.Fatalf("produce after the deletion: kcat says:\n%s", out)
	}
	if ends := endOffset0(t, n.Listeners["PLAINTEXT"], "acl-kcat"); ends != 3 {
		t.Fatalf("end offset %d, want the 3 records produced while allowed", ends)
	}
}

// hasRow reports whether a line of out has exactly fields.
func hasRow(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == strings.Join(fields, " ") {
			return true
		}
	}
	return false
}

// endOffset0 is the end offset of partition 0 of topic.
func endOffset0(t *testing.T, addr, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return endOffsets(t, ctx, kadm.NewClient(cl), topic)[0]
}

// waitISR waits until every partition of topic has want in-sync replicas, and
// fails with logs (a follower's) when ctx ends first.
func waitISR(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, want int, logs func() string) {
	t.Helper()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		full := len(md.Topics[topic].Partitions) > 0
		for _, p := range md.Topics[topic].Partitions {
			full = full && len(p.ISR) == want
		}
		if full {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the ISR of %s never reached %d; logs of a follower:\n%s", topic, want, logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestACLReplication: three nodes with the ACL authorizer replicate over the
// inter-broker listener as its principal, which may fetch (CLUSTER_ACTION)
// without an ACL and is no super user: on SASL_PLAINTEXT the inter-broker user,
// on SSL the principal of the nodes' certificate. A user with WRITE and READ on
// one topic only produces to it with RF 3 and acks=all (idempotent: KIP-679)
// and reads it back, the followers in the ISR throughout.
func TestACLReplication(t *testing.T) {
	f := newSecureFiles(t)
	pwFile := filepath.Join(f.dir, "broker.pw")
	if err := os.WriteFile(pwFile, []byte("broker-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"SASL_PLAINTEXT", []string{"--listeners", "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
			"--inter-broker-user", "broker", "--inter-broker-password-file", pwFile}},
		{"SSL", append([]string{"--listeners", "SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0"}, f.tlsArgs()...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := testnode.StartCluster(t, 3, append(tc.args,
				"--authorizer", "acl", "--super-users", "User:ANONYMOUS", "--replica-lag-time-max", "5s")...)
			testACLReplication(t, nodes)
		})
	}
}

func testACLReplication(t *testing.T, nodes []*testnode.Node) {
	admin := []string{"-b", nodes[0].Listeners["PLAINTEXT"]}
	createSCRAMUser(t, nodes[0].Listeners["PLAINTEXT"], "broker", "broker-secret")
	createSCRAMUser(t, nodes[0].Listeners["PLAINTEXT"], "alice", "alice-secret")
	skiffCLI(t, append([]string{"topic", "create", "replicated", "--replication-factor", "3"}, admin...)...)
	skiffCLI(t, append([]string{"acl", "create", "--principal", "User:alice", "--operation", "Write", "--operation", "Read", "--topic", "replicated"}, admin...)...)

	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[1].Listeners["SASL_PLAINTEXT"]),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("replicated"), kgo.ConsumeTopics("replicated"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitISR(ctx, t, kadm.NewClient(cl), "replicated", 3, nodes[1].Logs)
	produceConsume(ctx, t, cl, 100)
	// Refused followers would have left the ISR within replica-lag-time-max,
	// and acks=all would then have been answered by the leader alone.
	md, err := kadm.NewClient(cl).Metadata(ctx, "replicated")
	if err != nil {
		t.Fatal(err)
	}
	if isr := md.Topics["replicated"].Partitions[0].ISR; len(isr) != 3 {
		t.Fatalf("ISR %v after producing: followers did not fetch", isr)
	}
	// alice may not do more: another topic is refused.
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("x")}).FirstErr()
	if err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("produce to another topic: %v", err)
	}
}

// produceConsume produces n records to cl's default topic, one at a time, and
// consumes n records with cl.
func produceConsume(ctx context.Context, t *testing.T, cl *kgo.Client, n int) {
	t.Helper()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%03d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
}

// TestACLReplicationGrant: followers on a PLAINTEXT inter-broker listener are
// User:ANONYMOUS, which has no CLUSTER_ACTION once the cluster has an ACL (here
// with allow-everyone-if-no-acl-found, the cluster's first ACL takes it away): the
// leader refuses their fetches, they log why and leave the ISR, until `skiff acl
// create` grants User:ANONYMOUS ClusterAction and they are back in it.
func TestACLReplicationGrant(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"--authorizer", "acl", "--super-users", "User:admin", "--allow-everyone-if-no-acl-found", "--replica-lag-time-max", "3s")
	plain := nodes[0].Listeners["PLAINTEXT"]
	// No ACL on the cluster yet: everybody may create users.
	createSCRAMUser(t, plain, "admin", "admin-secret")
	pwFile := filepath.Join(t.TempDir(), "admin.pw")
	if err := os.WriteFile(pwFile, []byte("admin-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := []string{"-b", nodes[0].Listeners["SASL_PLAINTEXT"], "--sasl-mechanism", "SCRAM-SHA-512", "--user", "admin", "--password-file", pwFile}
	skiffCLI(t, append([]string{"acl", "create", "--principal", "User:admin", "--operation", "All", "--cluster"}, admin...)...)
	skiffCLI(t, append([]string{"topic", "create", "granted", "--replication-factor", "3"}, admin...)...)

	cl, err := kgo.NewClient(kgo.SeedBrokers(plain))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, "granted")
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics["granted"].Partitions[0].Leader
	var follower *testnode.Node
	for _, n := range nodes {
		if n.ID != leader {
			follower = n
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(follower.Logs(), "replica fetch refused") {
		if time.Now().After(deadline) {
			t.Fatalf("the follower never logged the refusal:\n%s", follower.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Created with every replica in the ISR, the leader drops the refused ones
	// after replica-lag-time-max.
	waitISR(ctx, t, adm, "granted", 1, follower.Logs)
	skiffCLI(t, append([]string{"acl", "create", "--principal", "User:ANONYMOUS", "--operation", "ClusterAction", "--cluster"}, admin...)...)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].Listeners["SASL_PLAINTEXT"]),
		kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()), kgo.DefaultProduceTopic("granted"))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	// acks=all succeeds only once every ISR member has the record.
	for i := range 10 {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "g%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitISR(ctx, t, adm, "granted", 3, follower.Logs)
}
