package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batchtest"
	"skiff/internal/compress"
	"skiff/internal/testnode"
)

// keyedWorkload writes keys k00..k99 over and over with an idempotent acks=all
// producer, value "<key>:<i>" with i growing, and keeps the history a checker
// needs: the highest i acknowledged per key, and every i attempted.
type keyedWorkload struct {
	mu        sync.Mutex
	acked     map[string]int // key -> highest i acknowledged
	attempted map[string]map[int]bool
	failed    int
	n         int // acknowledged records

	stop func()
	done sync.WaitGroup
}

func startKeyedWorkload(t *testing.T, nodes []*testnode.Node, topic string) *keyedWorkload {
	w := &keyedWorkload{acked: map[string]int{}, attempted: map[string]map[int]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	prod, err := kgo.NewClient(append([]kgo.Opt{seeds(nodes), kgo.DefaultProduceTopic(topic),
		kgo.RecordDeliveryTimeout(2 * time.Minute), kgo.MaxBufferedRecords(2000),
		kgo.ProducerBatchCompression(kgo.ZstdCompression(), kgo.SnappyCompression())}, clientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		defer prod.Close()
		for i := 0; ctx.Err() == nil; i++ {
			key := fmt.Sprintf("k%02d", i%100)
			w.mu.Lock()
			if w.attempted[key] == nil {
				w.attempted[key] = map[int]bool{}
			}
			w.attempted[key][i] = true
			w.mu.Unlock()
			prod.Produce(ctx, &kgo.Record{Key: []byte(key), Value: fmt.Appendf(nil, "%s:%d", key, i)}, func(r *kgo.Record, err error) {
				w.mu.Lock()
				defer w.mu.Unlock()
				if err != nil {
					w.failed++
					return
				}
				w.n++
				if i > w.acked[key] {
					w.acked[key] = i
				}
			})
		}
		fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer fcancel()
		prod.Flush(fctx)
	}()
	return w
}

// attempt records value i of key as attempted outside the workload.
func (w *keyedWorkload) attempt(key string, i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.attempted[key] == nil {
		w.attempted[key] = map[int]bool{}
	}
	w.attempted[key][i] = true
}

func (w *keyedWorkload) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func (w *keyedWorkload) progress(t *testing.T, n int, within time.Duration) {
	t.Helper()
	start := w.ackedCount()
	poll(t, within, fmt.Sprintf("%d more acknowledged records", n), func() bool { return w.ackedCount() >= start+n })
}

// check verifies a read of the whole partition against the history: offsets
// grow; every record is one attempted; per key, the values read grow (one
// producer, in order); and the last value of every key is at least its
// highest acknowledged one: no acknowledged write was lost, whatever was
// compacted, and no key went back to an older value.
func (w *keyedWorkload) check(t *testing.T, who string, got []kv) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	last := map[string]int{}
	prev := int64(-1)
	for _, g := range got {
		if g.offset <= prev {
			t.Fatalf("%s: offset %d after %d", who, g.offset, prev)
		}
		prev = g.offset
		if g.value == nil {
			t.Fatalf("%s: a tombstone at %d", who, g.offset)
		}
		k, istr, ok := strings.Cut(*g.value, ":")
		i, err := strconv.Atoi(istr)
		if !ok || err != nil || k != g.key || !w.attempted[k][i] {
			t.Fatalf("%s: record %v was never produced", who, g)
		}
		if l, seen := last[k]; seen && i <= l {
			t.Fatalf("%s: key %s: %d after %d", who, k, i, l)
		}
		last[k] = i
	}
	for k, a := range w.acked {
		if l, ok := last[k]; !ok || l < a {
			t.Fatalf("%s: key %s ends at %d (read: %v), but %d was acknowledged", who, k, l, ok, a)
		}
	}
	t.Logf("%s: %d records read, %d acknowledged, %d failed", who, len(got), w.n, w.failed)
}

// TestCompactedLeaderKilled: a compacted topic with three replicas
// (min.insync.replicas 2), written continuously with zstd and snappy batches,
// its segments rolled every 300 ms and compacted at any dirty ratio, so that
// every replica's cleaner runs all along. Its leader is killed (SIGKILL) during
// that three times and restarted (finishing any swap it was killed in). Every
// replica compacts its own log; afterwards the leader is killed once more so
// that another replica serves, and both reads, with franz-go and with kcat, show
// the final value of every acknowledged key (a history checker), offsets
// growing, nothing never written.
func TestCompactedLeaderKilled(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, append(append([]string(nil), faultArgs...), compactArgs...)...)
	createTopicWith(t, nodes[0].Addr, faultTopic, 1, 3, map[string]string{"cleanup.policy": "compact",
		"min.insync.replicas": "2", "segment.ms": "300", "min.cleanable.dirty.ratio": "0.01"})
	waitFullISR(t, nodes)
	w := startKeyedWorkload(t, nodes, faultTopic)
	w.progress(t, 3000, time.Minute)
	// A restart resets a node's counters, so a pass is recorded when seen:
	// a node killed in the last round may not have cleaned again by the end.
	compacted := map[int32]bool{}
	sawPasses := func() {
		for _, n := range nodes {
			if n.Running() && metric(t, n, "skiff_log_cleaner_passes_total") > 0 {
				compacted[n.ID] = true
			}
		}
	}
	for round := 1; round <= 3; round++ {
		leader := leaderOf(t, nodes, 0)
		poll(t, time.Minute, "the leader's cleaner at work", func() bool {
			return metric(t, leader, "skiff_log_cleaner_passes_total") > 0
		})
		sawPasses()
		leader.Kill()
		w.progress(t, 1000, time.Minute)
		t.Logf("round %d: killed broker %d", round, leader.ID)
		leader.Restart()
		waitFullISR(t, nodes)
		w.progress(t, 500, time.Minute)
	}
	w.stop()
	w.done.Wait()
	sawPasses()
	for _, n := range nodes {
		if !compacted[n.ID] {
			t.Fatalf("broker %d never compacted its replica", n.ID)
		}
	}
	check := func(who string) {
		leader := leaderOf(t, nodes, 0)
		w.check(t, who+" (franz-go)", readCompacted(t, leader.Addr, faultTopic))
		w.check(t, who+" (kcat)", kcatRead(t, leader.Addr, faultTopic))
	}
	check("first leader")
	last := leaderOf(t, nodes, 0)
	last.Kill()
	check("another replica")
	last.Restart()
	waitFullISR(t, nodes)
	check("after the restart")
}

// TestCompactedLeaderPartitioned: the compacted topic of TestCompactedLeaderKilled,
// written continuously, its leader cut off the network (internal/netlab) once its
// cleaner is at work, until the majority leads and has acknowledged more, then
// healed: the old leader truncates what only it had (records produced to it from
// inside its namespace right after the cut) and compacts on. Then every
// replica in turn is made the leader (replicas reordered, preferred election) and
// read: on each, every acknowledged key ends at its latest acknowledged value or a
// later one, nothing never written, offsets growing; and an offset two replicas
// hold holds the same record on both.
func TestCompactedLeaderPartitioned(t *testing.T) {
	nodes := startLabCluster(t, withArgs(append(append([]string(nil), faultArgs...), compactArgs...)...))
	createTopicWith(t, nodes[0].Addr, faultTopic, 1, 3, map[string]string{"cleanup.policy": "compact",
		"min.insync.replicas": "2", "segment.ms": "300", "min.cleanable.dirty.ratio": "0.01"})
	waitFullISR(t, nodes)
	w := startKeyedWorkload(t, nodes, faultTopic)
	w.progress(t, 2000, time.Minute)
	leader := leaderOf(t, nodes, 0)
	poll(t, time.Minute, "the leader's cleaner at work", func() bool {
		return metric(t, leader, "skiff_log_cleaner_passes_total") > 0
	})
	leader.Host.Cut()
	// Records only the cut-off leader gets, from inside its network namespace
	// (acks=1), before it fences itself: a suffix the majority never has, which it
	// must truncate when it rejoins. Their values are above any of the workload's,
	// so a replica that kept one reads its key going back afterwards.
	inside, err := kgo.NewClient(kgo.SeedBrokers(leader.Addr), kgo.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return leader.Host.DialContext(ctx, network, addr)
	}))
	if err != nil {
		t.Fatal(err)
	}
	var kvs []batchtest.KV
	for j := range 100 {
		key, i := fmt.Sprintf("k%02d", j), 1<<30+j
		w.attempt(key, i)
		kvs = append(kvs, batchtest.KV{Key: []byte(key), Value: fmt.Appendf(nil, "%s:%d", key, i)})
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = 1, 5000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: faultTopic, Partitions: []kmsg.ProduceRequestTopicPartition{
		{Partition: 0, Records: batchtest.Keyed(batchtest.Plain, time.Now().UnixMilli(), compress.None, false, kvs...)}}}}
	resp, err := seedRequest(context.Background(), inside, req)
	inside.Close()
	if err == nil {
		t.Logf("the cut-off leader answered a produce of 100 records only it gets: %s", errName(resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode))
	} else {
		t.Logf("the cut-off leader did not answer a produce of 100 records only it gets: %v", err)
	}
	other := anyRunning(nodes, leader)
	poll(t, time.Minute, "the partition led on the majority side", func() bool {
		md, err := metadata(t, other.Addr, faultTopic)
		if err != nil {
			return false
		}
		l := md.Topics[faultTopic].Partitions[0].Leader
		return l >= 0 && l != leader.ID
	})
	w.progress(t, 1000, time.Minute)
	t.Logf("cut off broker %d; the majority acknowledged 1000 more records", leader.ID)
	leader.Host.Heal()
	waitFullISR(t, nodes)
	w.progress(t, 500, time.Minute)
	w.stop()
	w.done.Wait()
	for _, n := range nodes {
		poll(t, time.Minute, fmt.Sprintf("broker %d's cleaner at work", n.ID), func() bool {
			return metric(t, n, "skiff_log_cleaner_passes_total") > 0
		})
	}
	// Replicas compact on their own, but an offset that two of them still hold
	// must hold the same record on both.
	byOffset := map[int64]kv{}
	for _, n := range nodes {
		leadPartition0(t, nodes, n)
		got := readCompacted(t, n.Addr, faultTopic)
		w.check(t, fmt.Sprintf("broker %d", n.ID), got)
		for _, g := range got {
			if o, ok := byOffset[g.offset]; ok && (o.key != g.key || *o.value != *g.value) {
				t.Errorf("offset %d: broker %d holds %s=%s, another replica %s=%s", g.offset, n.ID, g.key, *g.value, o.key, *o.value)
			}
			byOffset[g.offset] = g
		}
	}
}

// leadPartition0 makes n the leader of partition 0 of the fault topic: it puts n
// first in the partition's replicas and asks for a preferred election until n leads.
func leadPartition0(t *testing.T, nodes []*testnode.Node, n *testnode.Node) {
	t.Helper()
	replicas := []int32{n.ID}
	for _, m := range nodes {
		if m != n {
			replicas = append(replicas, m.ID)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, n.Addr))
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(faultTopic, 0, replicas)
	if rs, err := adm.AlterPartitionAssignments(ctx, req); err != nil || rs.Error() != nil {
		t.Fatalf("reorder the replicas to %v: %v %v", replicas, err, rs.Error())
	}
	poll(t, time.Minute, fmt.Sprintf("broker %d leading", n.ID), func() bool {
		if leaderOf(t, nodes, 0) == n {
			return true
		}
		adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{faultTopic: {0: {}}})
		return false
	})
}
