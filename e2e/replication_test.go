package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestReplicatedTopic: RF 3 with min.insync.replicas 2; every partition's ISR fills
// up; acks=all records are read back from every leader; then the ISR of a partition
// led by a killed broker moves to a survivor with every acknowledged record.
func TestReplicatedTopic(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, clusterArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	minISR := "2"
	if r, err := adm.CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": &minISR}, "rf3"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	took := poll(t, 30*time.Second, "every ISR complete", func() bool {
		md, err := metadata(t, nodes[1].Addr, "rf3")
		if err != nil {
			return false
		}
		for _, p := range md.Topics["rf3"].Partitions {
			if len(p.ISR) != 3 || p.Leader < 0 {
				return false
			}
		}
		return true
	})
	t.Logf("ISRs complete %v after creation", took)

	acked := produceN(t, ctx, nodes[1].Addr, "rf3", 0, 20_000)
	readAll(t, ctx, nodes[2].Addr, "rf3", acked)

	// skiff topic describe shows every partition's high watermark and log end: with
	// everything acknowledged and replicated, they sum to the records produced.
	out, err := exec.Command(testnode.Binary(t), "topic", "describe", "rf3", "-b", nodes[0].Addr).CombinedOutput()
	if err != nil {
		t.Fatalf("skiff topic describe: %v\n%s", err, out)
	}
	var hwSum, leoSum int64
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && f[0] >= "0" && f[0] <= "9" && strings.Contains(f[3], ",") {
			hw, _ := strconv.ParseInt(f[6], 10, 64)
			leo, _ := strconv.ParseInt(f[7], 10, 64)
			hwSum, leoSum = hwSum+hw, leoSum+leo
		}
	}
	if hwSum != int64(len(acked)) || leoSum != int64(len(acked)) {
		t.Fatalf("describe: high watermarks sum to %d and log ends to %d, want %d:\n%s", hwSum, leoSum, len(acked), out)
	}

	md, err := metadata(t, nodes[0].Addr, "rf3")
	if err != nil {
		t.Fatal(err)
	}
	victim := md.Topics["rf3"].Partitions[0].Leader
	var rest []*testnode.Node
	for _, n := range nodes {
		if n.ID != victim {
			rest = append(rest, n)
		}
	}
	// A producer (acks=all) that keeps writing to partition 0 through the failover
	// measures the time from the leader's death to the first record acknowledged by
	// the new leader.
	probe := newClient(t, rest[0].Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(30*time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		kgo.MetadataMinAge(100*time.Millisecond)) // franz-go refreshes metadata at most every 5 s by default
	if err := probe.ProduceSync(ctx, &kgo.Record{Topic: "rf3", Partition: 0, Value: []byte("99999998")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	acked = append(acked, "99999998")
	for _, n := range nodes {
		if n.ID == victim {
			n.Kill()
		}
	}
	killed := time.Now()
	if err := probe.ProduceSync(ctx, &kgo.Record{Topic: "rf3", Partition: 0, Value: []byte("99999999")}).FirstErr(); err != nil {
		t.Fatalf("produce through the failover: %v", err)
	}
	acked = append(acked, "99999999")
	t.Logf("first record acknowledged by the new leader %v after the leader was SIGKILLed (session timeout 2 s)", time.Since(killed))
	took = poll(t, 30*time.Second, "partition 0 led by a survivor", func() bool {
		md, err := metadata(t, rest[0].Addr, "rf3")
		if err != nil {
			return false
		}
		l := md.Topics["rf3"].Partitions[0].Leader
		return l >= 0 && l != victim
	})
	t.Logf("leadership moved %v after the leader was killed", took)
	acked = append(acked, produceN(t, ctx, rest[0].Addr, "rf3", 20_000, 5_000)...)
	readAll(t, ctx, rest[1].Addr, "rf3", acked)
}

// produceN produces count records valued from..from+count-1 with acks=all
// (franz-go's default) and returns the values acknowledged; any failure fails.
func produceN(t *testing.T, ctx context.Context, addr, topic string, from, count int) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	var acked []string
	results := make(chan error, count)
	for i := from; i < from+count; i++ {
		v := fmt.Sprintf("%08d", i)
		acked = append(acked, v)
		cl.Produce(ctx, &kgo.Record{Key: []byte(v[6:]), Value: []byte(v)}, func(_ *kgo.Record, err error) { results <- err })
	}
	for range count {
		if err := <-results; err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	return acked
}

// readAll consumes topic from the start until every value of want was read, and
// fails on a duplicate or on a key whose values go backwards.
func readAll(t *testing.T, ctx context.Context, addr, topic string, want []string) {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	need := make(map[string]bool, len(want))
	for _, v := range want {
		need[v] = true
	}
	seen := make(map[string]bool)
	last := make(map[string]string)
	for missing := len(need); missing > 0; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d acknowledged records never read", missing)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if seen[v] {
				t.Fatalf("record %s read twice", v)
			}
			seen[v] = true
			if prev := last[string(r.Key)]; prev != "" && v < prev {
				t.Fatalf("key %s: %s after %s", r.Key, v, prev)
			}
			last[string(r.Key)] = v
			if need[v] {
				missing--
			}
		})
	}
}
