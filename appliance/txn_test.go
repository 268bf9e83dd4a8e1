package appliance

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
	"skiff/internal/batch"
	"skiff/replication"
	"skiff/txn"
)

// TestTxnMarkersCompactedClients: a compacted topic written by a franz-go
// transactional producer, with transactions committed and aborted over the same
// keys. A franz-go read_committed consumer from offset 0 reads the last
// committed value of every key and no aborted record before the cleaner ran,
// and again once the cleaner has removed every marker whose transaction has no
// record left (after delete.retention.ms; only the last committed
// transaction's marker stays) and the partition answers no aborted transaction.
func TestTxnMarkersCompactedClients(t *testing.T) {
	n := startLoopbackNode(t, Config{CleanerBackoff: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "txn-compacted"
	if _, err := n.store.CreateTopic(ctx, cluster.Topic{Name: topic, ID: cluster.NewUUID(), Partitions: 1,
		ReplicationFactor: 1, Assignment: [][]int32{{n.id}}, Configs: map[string]string{
			cluster.ConfigCleanupPolicy: cluster.CleanupCompact, cluster.ConfigInternalSegmentBytes: "4096",
			cluster.ConfigSegmentMs: "200", cluster.ConfigMinCleanableRatio: "0.01", cluster.ConfigDeleteRetentionMs: "500"}}); err != nil {
		t.Fatal(err)
	}
	addr := n.KafkaAddr()
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("txn-compacted-p"), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const keys, rounds = 20, 6 // rounds 0, 2, 4 commit; 1, 3, 5 abort
	for round := range rounds {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for k := range keys {
			r := &kgo.Record{Key: fmt.Appendf(nil, "k%02d", k), Value: fmt.Appendf(nil, "r%d", round)}
			if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(round%2 == 0)); err != nil {
			t.Fatal(err)
		}
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()

	// readCommitted reads from offset 0 at read_committed up to a sentinel
	// produced for the purpose, and checks what it read.
	sentinels := 0
	readCommitted := func(step string) {
		t.Helper()
		sentinels++
		end := fmt.Appendf(nil, "end-%d", sentinels)
		if err := plain.ProduceSync(ctx, &kgo.Record{Key: []byte("sentinel"), Value: end}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		last := map[string]string{}
		for done := false; !done; {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: no sentinel read", step)
			}
			fs.EachRecord(func(r *kgo.Record) {
				switch {
				case done:
				case string(r.Key) == "sentinel":
					done = bytes.Equal(r.Value, end)
				case len(r.Key) == 3 && r.Key[0] == 'k':
					if v := string(r.Value); v == "r1" || v == "r3" || v == "r5" {
						t.Fatalf("%s: read the aborted record %s=%s at %d", step, r.Key, v, r.Offset)
					}
					last[string(r.Key)] = string(r.Value)
				}
			})
		}
		if len(last) != keys {
			t.Fatalf("%s: read %d keys, want %d", step, len(last), keys)
		}
		for k, v := range last {
			if v != "r4" {
				t.Fatalf("%s: key %s ends at %s, want r4", step, k, v)
			}
		}
	}
	readCommitted("before compaction")

	part := n.parts.Partition(topic, 0)
	markers := func() int {
		n := 0
		if err := batch.Split(readLog(t, part), func(h batch.Header, _ []byte) error {
			if h.Control() && h.RecordCount > 0 {
				n++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if m := markers(); m != rounds {
		t.Fatalf("%d markers before compaction, want %d", m, rounds)
	}
	// Plain records keep segments rolling, so that the cleaner has work.
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for ; markers() > 1 || len(part.AbortedTxns(0, part.HighWatermark())) > 0; <-poll.C {
		if ctx.Err() != nil {
			t.Fatalf("%d markers left, aborted %+v", markers(), part.AbortedTxns(0, part.HighWatermark()))
		}
		if err := plain.ProduceSync(ctx, &kgo.Record{Key: []byte("filler"), Value: bytes.Repeat([]byte("f"), 500)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if m := markers(); m != 1 {
		t.Fatalf("%d markers left, want the last committed transaction's", m)
	}
	readCommitted("after the markers went")
}

// TestTxnStateMaterialized: the node keeps the __transaction_state partition of a
// transactional id in Pebble as its records are committed: once a franz-go
// producer committed a transaction, Pebble is applied up to the partition's high
// watermark and holds the id's state, CompleteCommit.
func TestTxnStateMaterialized(t *testing.T) {
	n := startLoopbackNode(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic, id = "txn-state", "txn-state-p"
	if _, err := n.store.CreateTopic(ctx, cluster.Topic{Name: topic, ID: cluster.NewUUID(), Partitions: 1,
		ReplicationFactor: 1, Assignment: [][]int32{{n.id}}}); err != nil {
		t.Fatal(err)
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	tt, ok := n.cache.Topic(cluster.TransactionTopic)
	if !ok {
		t.Fatal("no __transaction_state")
	}
	pn := txn.PartitionFor(id, tt.Partitions)
	part := n.parts.Partition(cluster.TransactionTopic, pn)
	store := n.db.TxnShard(pn)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for ; ; <-poll.C {
		state := kmsg.TransactionState(-1)
		if err := store.States(func(key, value []byte) error {
			var k kmsg.TxnMetadataKey
			var v kmsg.TxnMetadataValue
			if k.ReadFrom(key) == nil && k.TransactionalID == id && v.ReadFrom(value) == nil {
				state = v.State
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		applied, err := store.Applied()
		if err != nil {
			t.Fatal(err)
		}
		if state == txn.CompleteCommit && applied == part.HighWatermark() {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("Pebble applied %d of %d, %s in state %d; want CompleteCommit", applied, part.HighWatermark(), id, state)
		}
	}
}

// TestTxnReadCommittedAcrossRestart: a franz-go transactional producer commits
// and aborts transactions, an idempotent one writes between them; after a
// restart of the node the partition answers the same aborted transactions and
// producer state, Pebble holds its snapshot at the log end, a read_committed
// consumer reads exactly the committed records again, and the producers go on
// where they were.
func TestTxnReadCommittedAcrossRestart(t *testing.T) {
	cfg := secureConfig(t, t.TempDir())
	n, err := startNode(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "txn-restart"
	if _, err := n.store.CreateTopic(ctx, cluster.Topic{Name: topic, ID: cluster.NewUUID(), Partitions: 1,
		ReplicationFactor: 1, Assignment: [][]int32{{n.id}}}); err != nil {
		t.Fatal(err)
	}
	committed := map[string]bool{}
	write := func(addr string, rounds, from int) {
		t.Helper()
		p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("txn-restart-p"), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		idem, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer idem.Close()
		for round := from; round < from+rounds; round++ {
			if err := p.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			commit := round%3 != 1
			for i := range 5 {
				v := fmt.Sprintf("t%d-%d", round, i)
				if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
				committed[v] = commit
				v = fmt.Sprintf("i%d-%d", round, i)
				if err := idem.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
				committed[v] = true
			}
			if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// readCommitted reads the partition at read_committed from its start up to
	// its high watermark and checks it holds every committed record once and no
	// aborted one.
	readCommitted := func(step, addr string, hw int64) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		seen := map[string]int{}
		for next := int64(0); next < hw-1; { // the last offset is a marker
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: read up to %d of %d", step, next, hw)
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen[string(r.Value)]++
				next = r.Offset + 1
				if !committed[string(r.Value)] {
					t.Fatalf("%s: read aborted record %s at %d", step, r.Value, r.Offset)
				}
			})
			if next > 0 && len(seen) == countTrue(committed) {
				break
			}
		}
		for v, ok := range committed {
			if ok && seen[v] != 1 {
				t.Fatalf("%s: committed record %s read %d times", step, v, seen[v])
			}
		}
	}
	// markersWritten waits until no transaction is open on part: EndTxn answers
	// once the decision is recorded, and the markers follow.
	markersWritten := func(part *replication.Partition) {
		t.Helper()
		for len(part.OpenTxns()) > 0 {
			if ctx.Err() != nil {
				t.Fatalf("transactions still open: %+v", part.OpenTxns())
			}
			time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
		}
	}
	write(n.KafkaAddr(), 6, 0)
	part := n.parts.Partition(topic, 0)
	markersWritten(part)
	aborted, producers, hw := part.AbortedTxns(0, math.MaxInt64), part.Producers(), part.HighWatermark()
	if len(aborted) != 2 {
		t.Fatalf("aborted transactions before the restart: %+v, want 2", aborted)
	}
	readCommitted("before the restart", n.KafkaAddr(), hw)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	n, err = startNode(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	part = n.parts.Partition(topic, 0)
	if got := part.AbortedTxns(0, math.MaxInt64); !reflect.DeepEqual(got, aborted) {
		t.Fatalf("aborted transactions after the restart: %+v, want %+v", got, aborted)
	}
	if got := part.Producers(); !reflect.DeepEqual(got, producers) {
		t.Fatalf("producers after the restart: %+v, want %+v", got, producers)
	}
	if off, _, ok, err := n.db.LogIndex(replication.PartitionKey(topic, 0)).ProducerSnapshot(); err != nil || !ok || off != part.LogEndOffset() {
		t.Fatalf("producer snapshot at %d (ok %v, %v), want one at the log end %d", off, ok, err, part.LogEndOffset())
	}
	readCommitted("after the restart", n.KafkaAddr(), hw)
	write(n.KafkaAddr(), 3, 6)
	markersWritten(part)
	if got := part.AbortedTxns(0, math.MaxInt64); len(got) != 3 {
		t.Fatalf("aborted transactions after more rounds: %+v, want 3", got)
	}
	readCommitted("after more transactions", n.KafkaAddr(), part.HighWatermark())
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

// TestMarkersRequestVersion: markers go to other brokers at WriteTxnMarkers v1,
// byte for byte as before transaction version 2, unless one of them is a TV2
// marker: then v2, each marker with its transaction version (KIP-1228).
func TestMarkersRequestVersion(t *testing.T) {
	tv1 := txn.Marker{Topic: "a", Partition: 1, ProducerID: 7, Epoch: 3, Commit: true, CoordinatorEpoch: 2}
	tv2 := txn.Marker{Topic: "b", Partition: 0, ProducerID: 8, Epoch: 5, CoordinatorEpoch: 2, TV2: true}
	req := markersRequest([]txn.Marker{tv1})
	old := kmsg.NewPtrWriteTxnMarkersRequest()
	old.SetVersion(1)
	old.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 7, ProducerEpoch: 3, Committed: true, CoordinatorEpoch: 2,
		Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "a", Partitions: []int32{1}}}}}
	if got, want := req.AppendTo(nil), old.AppendTo(nil); req.Version != 1 || !bytes.Equal(got, want) {
		t.Fatalf("TV1 markers: v%d %x, want v1 %x", req.Version, got, want)
	}
	req = markersRequest([]txn.Marker{tv1, tv2})
	if req.Version != 2 || len(req.Markers) != 2 {
		t.Fatalf("with a TV2 marker: v%d, %d markers; want v2 with 2", req.Version, len(req.Markers))
	}
	for i, want := range []int8{1, 2} {
		m := req.Markers[i]
		if m.TransactionVersion != want || m.ProducerEpoch != []int16{3, 5}[i] || m.Topics[0].Topic != []string{"a", "b"}[i] {
			t.Fatalf("marker %d: %+v, want transaction version %d", i, m, want)
		}
	}
}
