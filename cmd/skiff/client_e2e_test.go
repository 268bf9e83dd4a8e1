package main

// End-to-end tests of the client commands: each runs the real command (through
// newApp().Run, with captured stdin, stdout and stderr) against a real broker.
// That is a fresh `skiff serve` started by internal/testnode, or, when
// SKIFF_TEST_BROKERS is set, the Kafka-compatible cluster it names (the
// commands are ordinary Kafka clients and must work against any).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/recordfmt"
	"skiff/internal/testnode"
)

// e2eBrokers returns the Kafka address the end-to-end tests use.
func e2eBrokers(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("SKIFF_TEST_BROKERS"); b != "" {
		return b
	}
	return testnode.Start(t).Addr
}

// uniqueTopic names a topic for one test; the suffix keeps reruns against a
// long-lived SKIFF_TEST_BROKERS cluster apart.
func uniqueTopic(base string) string {
	return fmt.Sprintf("%s-%08x", base, rand.Uint32())
}

// skiffOK runs a command that must succeed and returns its stdout.
func skiffOK(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, errOut, err := runApp(bytes.NewReader(stdin), args...)
	if err != nil {
		t.Fatalf("skiff %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// skiffErr runs a command that must fail and returns its error message.
func skiffErr(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, _, err := runApp(bytes.NewReader(stdin), args...)
	if err == nil {
		t.Fatalf("skiff %s succeeded; stdout: %.200s", strings.Join(args, " "), out)
	}
	return err.Error()
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestClientE2E(t *testing.T) {
	b := e2eBrokers(t)
	t.Run("topic", func(t *testing.T) { testTopicCommands(t, b) })
	t.Run("topic-sizes", func(t *testing.T) { testTopicSizes(t, b) })
	t.Run("topic-elect-leaders", func(t *testing.T) { testTopicElectLeaders(t, b) })
	t.Run("topic-reassign", func(t *testing.T) { testTopicReassign(t, b) })
	t.Run("produce-consume-file", func(t *testing.T) { testProduceConsumeFile(t, b) })
	t.Run("produce-consume-stdin-keys", func(t *testing.T) { testProduceConsumeKeys(t, b) })
	t.Run("consume-json", func(t *testing.T) { testConsumeJSON(t, b) })
	t.Run("consume-start-and-count", func(t *testing.T) { testConsumeStartAndCount(t, b) })
	t.Run("consume-group", func(t *testing.T) { testConsumeGroup(t, b) })
	t.Run("missing-topic", func(t *testing.T) { testMissingTopic(t, b) })
	t.Run("produce-failures-counted", func(t *testing.T) { testProduceFailuresCounted(t, b) })
}

func testTopicCommands(t *testing.T, b string) {
	topic := uniqueTopic("topic-cmds")
	// Flags after the name, as scripts write them.
	out := skiffOK(t, nil, "topic", "create", topic, "--partitions", "3", "--replication-factor", "1",
		"--config", "retention.ms=3600000", "-b", b)
	if out != "created topic "+topic+"\n" {
		t.Errorf("create printed %q", out)
	}
	if names := strings.Split(skiffOK(t, nil, "topic", "list", "-b", b), "\n"); !slices.Contains(names, topic) {
		t.Errorf("list lacks %s: %q", topic, names)
	}

	desc := skiffOK(t, nil, "topic", "describe", topic, "-b", b)
	mustContain(t, "describe", desc, "topic:               "+topic+"\n", "partitions:          3\n", "replication factor:  1\n",
		"PARTITION  LEADER  EPOCH  REPLICAS  ISR  OFFLINE  HIGH WATERMARK  LOG END")
	for p := range 3 {
		// partition, leader (a broker id), epoch, one replica which is in sync, no
		// offline replica, then high watermark and log end (nothing produced yet: 0).
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^%d +(\d+) +\d+ +(\d+) +(\d+) +- +0 +0 *$`, p))
		m := row.FindStringSubmatch(desc)
		if m == nil || m[1] != m[2] || m[2] != m[3] {
			t.Errorf("describe: no healthy row for partition %d (%q):\n%s", p, m, desc)
		}
	}
	if !regexp.MustCompile(`(?m)^retention\.ms +3600000 +topic$`).MatchString(desc) {
		t.Errorf("describe does not show retention.ms=3600000 from the topic:\n%s", desc)
	}

	mustContain(t, "second create", skiffErr(t, nil, "topic", "create", topic, "-b", b), "already exists", "--if-not-exists")
	skiffOK(t, nil, "topic", "create", topic, "--if-not-exists", "-b", b)

	if out := skiffOK(t, nil, "topic", "delete", topic, "-b", b); out != "deleted topic "+topic+"\n" {
		t.Errorf("delete printed %q", out)
	}
	waitFor(t, "the deleted topic to leave the list", func() bool {
		return !slices.Contains(strings.Split(skiffOK(t, nil, "topic", "list", "-b", b), "\n"), topic)
	})
	mustContain(t, "second delete", skiffErr(t, nil, "topic", "delete", topic, "-b", b), "does not exist")
	skiffOK(t, nil, "topic", "delete", topic, "--if-exists", "-b", b)
	mustContain(t, "describe of deleted topic", skiffErr(t, nil, "topic", "describe", topic, "-b", b), "does not exist")
}

// testTopicSizes: describe --sizes prints a row per replica with the size its
// node reports (DescribeLogDirs, asked here through kadm), and records make it
// grow.
func testTopicSizes(t *testing.T, b string) {
	topic := uniqueTopic("topic-sizes")
	skiffOK(t, nil, "topic", "create", topic, "-p", "2", "-b", b)
	skiffOK(t, []byte(strings.Repeat("some record\n", 500)), "produce", "-t", topic, "-b", b)
	desc := skiffOK(t, nil, "topic", "describe", topic, "--sizes", "-b", b)
	mustContain(t, "describe --sizes", desc, "PARTITION  NODE  SIZE", "OFFSET LAG  DIRECTORY")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dirs, err := newTestAdmin(t, b).DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	rows := 0
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			rows++
			total += p.Size
			row := fmt.Sprintf(`(?m)^%d +%d +%d +%d +%s$`, p.Partition, d.Broker, p.Size, p.OffsetLag, regexp.QuoteMeta(d.Dir))
			if !regexp.MustCompile(row).MatchString(desc) {
				t.Errorf("describe --sizes lacks the row of partition %d on node %d (%d bytes):\n%s", p.Partition, d.Broker, p.Size, desc)
			}
		})
	})
	if rows != 2 || total < 500*int64(len("some record")) {
		t.Errorf("%d replicas holding %d bytes, want 2 holding the 500 records", rows, total)
	}
}

// testTopicElectLeaders: on one node every partition is led by its one
// replica, so elections are not needed, and the command says so per partition.
func testTopicElectLeaders(t *testing.T, b string) {
	topic := uniqueTopic("elect")
	skiffOK(t, nil, "topic", "create", topic, "-p", "2", "-b", b)
	if out := skiffOK(t, nil, "topic", "elect-leaders", topic, "-b", b); out != topic+"/0: not needed (its preferred replica leads)\n"+topic+"/1: not needed (its preferred replica leads)\n" {
		t.Errorf("elect-leaders printed %q", out)
	}
	if out := skiffOK(t, nil, "topic", "elect-leaders", topic, "--unclean", "-b", b); !strings.HasPrefix(out, topic+"/0: not needed (it has a leader)\n") {
		t.Errorf("elect-leaders --unclean printed %q", out)
	}
	if os.Getenv("SKIFF_TEST_BROKERS") == "" {
		// Every partition of a fresh node is led by its preferred replica.
		mustContain(t, "elect-leaders of every partition", skiffOK(t, nil, "topic", "elect-leaders", "-b", b), "no partition needed a preferred election")
	}
	mustContain(t, "elect-leaders of a missing topic", skiffErr(t, nil, "topic", "elect-leaders", topic+"-none", "-b", b), "does not exist")
}

// testTopicReassign: --generate proposes a plan in kafka-reassign-partitions.sh's
// format, which the command then carries out (on one node: nothing moves); a
// plan naming a node that is not live is refused per partition; --list shows
// nothing in progress.
func testTopicReassign(t *testing.T, b string) {
	topic := uniqueTopic("reassign")
	skiffOK(t, nil, "topic", "create", topic, "-p", "2", "-b", b)
	plan := skiffOK(t, nil, "topic", "reassign", "--generate", topic, "-b", b)
	var parsed struct {
		Version    int `json:"version"`
		Partitions []struct {
			Topic     string  `json:"topic"`
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(plan), &parsed); err != nil || parsed.Version != 1 || len(parsed.Partitions) != 2 {
		t.Fatalf("generated plan %q: %v", plan, err)
	}
	for i, p := range parsed.Partitions {
		if p.Topic != topic || p.Partition != int32(i) || len(p.Replicas) != 1 {
			t.Errorf("generated partition %+v", p)
		}
	}
	out := skiffOK(t, []byte(plan), "topic", "reassign", "-", "-b", b)
	mustContain(t, "reassign", out, topic+"/0: moving to ", topic+"/1: moving to ")
	if os.Getenv("SKIFF_TEST_BROKERS") == "" {
		mustContain(t, "reassign --list", skiffOK(t, nil, "topic", "reassign", "--list", "-b", b), "no reassignment in progress")
		// The moves are done: nothing to cancel (e2e.TestReassignCancel cancels a move).
		mustContain(t, "reassign --cancel", skiffOK(t, []byte(plan), "topic", "reassign", "--cancel", "-", "-b", b), topic+"/0: no reassignment in progress")
		mustContain(t, "reassign --cancel-all", skiffOK(t, nil, "topic", "reassign", "--cancel-all", "-b", b), "no reassignment in progress")
	}
	mustContain(t, "reassign --cancel --verify", skiffErr(t, []byte(plan), "topic", "reassign", "--cancel", "--verify", "-", "-b", b), "go with no other mode")
	mustContain(t, "reassign --cancel-all with a plan", skiffErr(t, nil, "topic", "reassign", "--cancel-all", "plan.json", "-b", b), "--cancel-all takes none")
	if os.Getenv("SKIFF_TEST_BROKERS") == "" { // the throttle rates are set for every broker
		testReassignThrottle(t, b, topic, plan)
	}
	bad := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[999]}]}`, topic)
	mustContain(t, "reassign to a missing node", skiffErr(t, []byte(bad), "topic", "reassign", "-", "-b", b), "1 of 1 reassignments refused")
	mustContain(t, "reassign a bad plan", skiffErr(t, []byte(`{"version":1,"partitions":[]}`), "topic", "reassign", "-", "-b", b), "no partitions")
	mustContain(t, "generate onto a missing node", skiffErr(t, nil, "topic", "reassign", "--generate", topic, "--to", "999", "-b", b), "broker 999 is not live")
}

// testReassignThrottle: --throttle sets the rates on every broker and the
// topic's throttled replicas (the current ones on the leader side); --verify
// finds the moves done and clears all of it.
func testReassignThrottle(t *testing.T, b, topic, plan string) {
	mustContain(t, "reassign --throttle", skiffOK(t, []byte(plan), "topic", "reassign", "-", "--throttle", "1000000", "-b", b), "throttled to 1000000 bytes/s")
	adm := newTestAdmin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	configs := func() map[string]string {
		got := map[string]string{}
		rcs, err := adm.DescribeBrokerConfigs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range append(rcs, tcs...) {
			for _, c := range rc.Configs {
				if strings.Contains(c.Key, "replication.throttled") && c.Value != nil && c.Source != kmsg.ConfigSourceDefaultConfig {
					got[c.Key] = *c.Value
				}
			}
		}
		return got
	}
	got := configs()
	if got["follower.replication.throttled.rate"] != "1000000" || got["leader.replication.throttled.rate"] != "1000000" ||
		!strings.HasPrefix(got["leader.replication.throttled.replicas"], "0:") {
		t.Errorf("throttle configs after --throttle: %v", got)
	}
	out := skiffOK(t, []byte(plan), "topic", "reassign", "-", "--verify", "-b", b)
	mustContain(t, "reassign --verify", out, topic+"/0: done", topic+"/1: done", "throttle cleared")
	if got := configs(); len(got) != 0 {
		t.Errorf("throttle configs after --verify: %v, want none", got)
	}
}

// testInput returns n lines of varied content, each ending in '\n': empty
// lines, invalid UTF-8, carriage returns, tabs and a few long lines (up to
// 200 KiB, past any 64 KiB line limit).
func testInput(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var in bytes.Buffer
	for i := range n {
		switch {
		case i%1000 == 999:
			in.WriteString(strings.Repeat(fmt.Sprintf("long %d ", i), 200<<10/12))
		case i%97 == 0:
			// empty line
		case i%89 == 0:
			in.Write([]byte{0xff, 0xfe, 0x00, '\r', '\t', 0xc3})
		default:
			fmt.Fprintf(&in, "line %05d %s", i, strings.Repeat("xy", rng.IntN(100)))
		}
		in.WriteByte('\n')
	}
	return in.Bytes()
}

func testProduceConsumeFile(t *testing.T, b string) {
	const lines = 10_000
	in := testInput(lines)
	file := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(file, in, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ acks, compression string }{
		{"all", "none"},
		{"1", "zstd"},
		{"all", "lz4"},
		{"0", "snappy"},
		{"all", "gzip"},
	} {
		t.Run("acks="+tc.acks+"-"+tc.compression, func(t *testing.T) {
			// One partition, so that the order of the lines is kept.
			topic := uniqueTopic("file")
			skiffOK(t, nil, "topic", "create", topic, "-p", "1", "-b", b)
			_, errOut, err := runApp(nil, "produce", "-t", topic, "--file", file,
				"--acks", tc.acks, "--compression", tc.compression, "-v", "-b", b)
			if err != nil {
				t.Fatalf("produce: %v", err)
			}
			if want := fmt.Sprintf("produced %d records (%d bytes) to %s in ", lines, len(in)-lines, topic); !strings.HasPrefix(errOut, want) {
				t.Errorf("summary %q; want it to start with %q", errOut, want)
			}
			if tc.acks == "0" {
				// Without acknowledgements, produce ends once the records are
				// written to the socket; the broker may still be appending.
				adm := newTestAdmin(t, b)
				waitFor(t, "every acks=0 record to be appended", func() bool {
					ends, err := adm.ListEndOffsets(context.Background(), topic)
					o, _ := ends.Lookup(topic, 0)
					return err == nil && o.Err == nil && o.Offset == lines
				})
			}
			out := skiffOK(t, nil, "consume", "-t", topic, "--from-beginning", "--exit-at-end", "-b", b)
			if out != string(in) {
				t.Fatalf("consumed output differs from the input: %d bytes, %d lines; want %d bytes, %d lines (first difference at byte %d)",
					len(out), strings.Count(out, "\n"), len(in), lines, firstDiff([]byte(out), in))
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func testProduceConsumeKeys(t *testing.T, b string) {
	topic := uniqueTopic("keys")
	skiffOK(t, nil, "topic", "create", topic, "-p", "4", "-b", b)
	var in bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&in, "user%d\t{\"n\":%d}\n", i%10, i)
	}
	skiffOK(t, in.Bytes(), "produce", "-t", topic, "--key-separator", "\t", "-b", b)
	out := skiffOK(t, nil, "consume", "-t", topic, "--from-beginning", "-e", "-K", "\t", "-b", b)

	// Partitions interleave, but each key lives in one partition and keeps
	// its order; the multiset of lines is the input's.
	got, want := strings.Split(out, "\n"), strings.Split(in.String(), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("consumed %d lines that differ from the %d produced", len(got), len(want))
	}
	perKey := map[string][]string{}
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, _ := strings.Cut(line, "\t")
		perKey[k] = append(perKey[k], v)
	}
	for k, vs := range perKey {
		if !slices.IsSortedFunc(vs, func(a, b string) int { return jsonN(t, a) - jsonN(t, b) }) {
			t.Errorf("records of key %s out of order", k)
		}
	}
}

func jsonN(t *testing.T, s string) int {
	var v struct{ N int }
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("value %q: %v", s, err)
	}
	return v.N
}

func testConsumeJSON(t *testing.T, b string) {
	topic := uniqueTopic("json")
	skiffOK(t, nil, "topic", "create", topic, "-p", "1", "-b", b)
	ts := time.UnixMilli(time.Now().UnixMilli() - 5000)
	records := []*kgo.Record{
		{Key: []byte("k1"), Value: []byte("héllo \"world\"\n"), Timestamp: ts,
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}, {Key: "bin", Value: []byte{0xff}}}},
		{Key: nil, Value: []byte{0xff, 0xfe, 0x00}, Timestamp: ts.Add(time.Millisecond)},
		{Key: []byte{}, Value: nil, Timestamp: ts.Add(2 * time.Millisecond)},
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	out := skiffOK(t, nil, "consume", "-t", topic, "--from-beginning", "--exit-at-end", "--format", "json", "-b", b)
	sc := bufio.NewScanner(strings.NewReader(out))
	i := 0
	for ; sc.Scan(); i++ {
		if i >= len(records) {
			t.Fatalf("more lines than records: %s", sc.Text())
		}
		// The formatter's own tests check its JSON; here the line must be its
		// output for the record as produced, at its offset.
		want := *records[i]
		want.Topic, want.Partition, want.Offset = topic, 0, int64(i)
		if got, want := sc.Text()+"\n", string(recordfmt.AppendJSON(nil, &want)); got != want {
			t.Errorf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
	if i != len(records) {
		t.Errorf("%d lines; want %d", i, len(records))
	}
}

// produceNumbered writes records "p<P>-<i>" for i in [0, n) to each partition.
func produceNumbered(t *testing.T, b, topic string, partitions, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for p := range partitions {
		for i := range n {
			rs = append(rs, &kgo.Record{Partition: int32(p), Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(ls)
	return ls
}

func testConsumeStartAndCount(t *testing.T, b string) {
	topic := uniqueTopic("start")
	skiffOK(t, nil, "topic", "create", topic, "-p", "2", "-b", b)
	produceNumbered(t, b, topic, 2, 10)
	consume := func(args ...string) []string {
		t.Helper()
		return lines(skiffOK(t, nil, append([]string{"consume", "-t", topic, "-b", b}, args...)...))
	}

	if got := consume("--from-beginning", "-n", "3"); len(got) != 3 {
		t.Errorf("-n 3: %q", got)
	}
	if got := consume("--exit-at-end"); len(got) != 0 {
		t.Errorf("default start is the end, so --exit-at-end prints nothing; got %q", got)
	}
	if got, want := consume("--offset", "8", "-e"), []string{"p0-8", "p0-9", "p1-8", "p1-9"}; !slices.Equal(got, want) {
		t.Errorf("--offset 8: %q; want %q", got, want)
	}
	if got, want := consume("--offset", "-1", "-e"), []string{"p0-9", "p1-9"}; !slices.Equal(got, want) {
		t.Errorf("--offset -1: %q; want %q", got, want)
	}
	if got := consume("--offset", "100", "-e"); len(got) != 0 {
		t.Errorf("--offset past the end: %q", got)
	}
	if got := consume("-p", "1", "--from-beginning", "-e"); len(got) != 10 || got[0] != "p1-0" {
		t.Errorf("-p 1: %q", got)
	}

	// Default start: records produced after the consumer started are printed.
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, _, err := runApp(nil, "consume", "-t", topic, "-n", "2", "-b", b)
		done <- result{out, err}
	}()
	var res result
	waitFor(t, "the consumer to print new records", func() bool {
		produceNumbered(t, b, topic, 1, 1) // p0-0 again
		select {
		case res = <-done:
			return true
		default:
			return false
		}
	})
	if got := lines(res.out); res.err != nil || len(got) != 2 || got[0] != "p0-0" || got[1] != "p0-0" {
		t.Errorf("new records: %q, %v", got, res.err)
	}

	mustContain(t, "bad partition", skiffErr(t, nil, "consume", "-t", topic, "-p", "5", "-b", b), "has no partition 5")
}

func testConsumeGroup(t *testing.T, b string) {
	adm := newTestAdmin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if _, ok := v.KeyMaxVersion(11); !ok { // JoinGroup
			t.Fatalf("broker %d does not advertise JoinGroup, so --group cannot work", v.NodeID)
		}
	}
	topic := uniqueTopic("group")
	group := topic + "-g"
	skiffOK(t, nil, "topic", "create", topic, "-p", "2", "-b", b)
	produceNumbered(t, b, topic, 2, 10)

	first := lines(skiffOK(t, nil, "consume", "-t", topic, "-g", group, "--from-beginning", "-n", "5", "-b", b))
	rest := lines(skiffOK(t, nil, "consume", "-t", topic, "-g", group, "--from-beginning", "-e", "-b", b))
	all := append(first, rest...)
	slices.Sort(all)
	if len(first) != 5 || len(all) != 20 || len(slices.Compact(all)) != 20 {
		t.Errorf("group resumed wrongly: first %q, then %q", first, rest)
	}
	if again := lines(skiffOK(t, nil, "consume", "-t", topic, "-g", group, "-e", "-b", b)); len(again) != 0 {
		t.Errorf("everything was committed, yet a third run printed %q", again)
	}
}

func newTestAdmin(t *testing.T, b string) *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func testMissingTopic(t *testing.T, b string) {
	topic := uniqueTopic("missing")
	for _, args := range [][]string{
		{"consume", "-t", topic, "--from-beginning"},
		{"consume", "-t", topic, "-g", topic},
		{"produce", "-t", topic},
		{"topic", "describe", topic},
	} {
		msg := skiffErr(t, []byte("a\n"), append(args, "-b", b)...)
		mustContain(t, strings.Join(args[:1], " ")+" error", msg, fmt.Sprintf("topic %q does not exist", topic), "skiff topic create")
	}
	if slices.Contains(strings.Split(skiffOK(t, nil, "topic", "list", "-b", b), "\n"), topic) {
		t.Errorf("topic %s was created by a client command", topic)
	}
}

// testProduceFailuresCounted produces lines of which some exceed the topic's
// max.message.bytes: the command must fail and say how many.
func testProduceFailuresCounted(t *testing.T, b string) {
	topic := uniqueTopic("too-large")
	skiffOK(t, nil, "topic", "create", topic, "-p", "1", "--config", "max.message.bytes=2000", "-b", b)
	in := "small 1\n" + strings.Repeat("x", 5000) + "\nsmall 2\n" + strings.Repeat("y", 3000) + "\nsmall 3\n"
	msg := skiffErr(t, []byte(in), "produce", "-t", topic, "-b", b)
	mustContain(t, "produce error", msg, fmt.Sprintf("2 of 5 records were not acknowledged by topic %q", topic), "max.message.bytes")
	// The records that fit were written and only they.
	if got := skiffOK(t, nil, "consume", "-t", topic, "--from-beginning", "-e", "-b", b); got != "small 1\nsmall 2\nsmall 3\n" {
		t.Errorf("consumed %q", got)
	}
}

// TestClientNoBroker needs no broker: nothing listening, or a listener that
// never answers, must end each command within its timeout with a clear message.
func TestClientNoBroker(t *testing.T) {
	closed := closedAddr(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		var conns []net.Conn // held open, never answered
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()

	commands := [][]string{
		{"topic", "list"},
		{"topic", "create", "x"},
		{"produce", "-t", "x"},
		{"consume", "-t", "x"},
		{"consume", "-t", "x", "-g", "g", "-e"},
	}
	for _, args := range commands {
		start := time.Now()
		msg := skiffErr(t, []byte("a\n"), append(args, "-b", closed, "--timeout", "2s")...)
		mustContain(t, strings.Join(args, " ")+" without broker", msg,
			"cannot reach broker "+closed+": connection refused", "is `skiff serve` running?", "--brokers")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: took %v with nothing listening", args, d)
		}

		start = time.Now()
		msg = skiffErr(t, []byte("a\n"), append(args, "-b", silent.Addr().String(), "--timeout", "1s")...)
		mustContain(t, strings.Join(args, " ")+" with a silent broker", msg, "no answer from "+silent.Addr().String()+" within 1s")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: took %v with a silent listener and --timeout 1s", args, d)
		}
	}
}
