package txn

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"skiff/replication"
)

// commitGatedLog holds every wait for the commit of an offset at or above
// below (none held: math.MaxInt64).
type commitGatedLog struct {
	*replication.Partition
	below atomic.Int64
}

// gatedLogProducer returns a loaded coordinator on a commitGatedLog, and the
// producer id of transactional id "app" at epoch 0.
func gatedLogProducer(t *testing.T) (*Coordinator, *commitGatedLog, int64) {
	t.Helper()
	log := &commitGatedLog{Partition: newLog(t)}
	log.below.Store(math.MaxInt64)
	c := newTestCoordinator(&markerLog{})
	t.Cleanup(func() { c.Close() })
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	pid, _, code := c.InitProducerID(context.Background(), "app", time.Minute, -1, -1)
	if code != 0 {
		t.Fatalf("init: %d", code)
	}
	return c, log, pid
}

func (l *commitGatedLog) WaitHighWatermark(ctx context.Context, epoch int32, offset int64) error {
	for offset >= l.below.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond): // polling the gate until ctx ends
		}
	}
	return l.Partition.WaitHighWatermark(ctx, epoch, offset)
}

// TestImplicitAddsPipelined: a TV2 producer's implicit adds append their
// records one after another without waiting for the previous one's commit,
// and each is answered once committed, with every partition in the
// transaction.
func TestImplicitAddsPipelined(t *testing.T) {
	c, log, pid := gatedLogProducer(t)
	ctx := context.Background()
	end := log.LogEndOffset()
	log.below.Store(end)
	codes := make(chan int16, 3)
	for p := int32(0); p < 3; p++ {
		go func() {
			code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", p}}, true)
			codes <- code
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for log.LogEndOffset() < end+3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d records appended while the first waits for its commit, want 3", log.LogEndOffset()-end)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	select {
	case code := <-codes:
		t.Fatalf("an add answered %d before its record was committed", code)
	default:
	}
	log.below.Store(math.MaxInt64)
	for range 3 {
		if code := <-codes; code != 0 {
			t.Fatalf("implicit add: %d", code)
		}
	}
	m := waitState(t, c, "app", Ongoing)
	if len(m.partitions) != 3 || !m.tv2 {
		t.Fatalf("transaction %v tv2 %v, want 3 partitions, TV2", m.partitions, m.tv2)
	}
	if _, e, code := c.EndTxn(ctx, "app", pid, 0, true, true); code != 0 || e != 1 {
		t.Fatalf("commit: epoch %d code %d", e, code)
	}
}

// TestChainHoldsOtherChanges: while implicit adds are in flight, the id
// stays pending for every other change: a new producer's InitProducerId gets
// CONCURRENT_TRANSACTIONS also once the first of them is applied.
func TestChainHoldsOtherChanges(t *testing.T) {
	c, log, pid := gatedLogProducer(t)
	ctx := context.Background()
	if code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", 0}}, true); code != 0 {
		t.Fatalf("first add: %d", code)
	}
	// Two more adds in one chain; the first of them commits, the second
	// is held: the chain stays in flight after an applied state.
	end := log.LogEndOffset()
	log.below.Store(end)
	done := make(chan int16, 2)
	for p := int32(1); p <= 2; p++ {
		go func() {
			code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", p}}, true)
			done <- code
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for log.LogEndOffset() < end+2 {
		if time.Now().After(deadline) {
			t.Fatal("the two adds did not append")
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	log.below.Store(end + 1)
	if code := <-done; code != 0 {
		t.Fatalf("the add whose record committed: %d", code)
	}
	if _, _, code := c.InitProducerID(ctx, "app", time.Minute, -1, -1); code != codeConcurrent {
		t.Fatalf("init while an add is in flight: %d, want CONCURRENT_TRANSACTIONS", code)
	}
	log.below.Store(math.MaxInt64)
	if code := <-done; code != 0 {
		t.Fatalf("the held add: %d", code)
	}
	if m := waitState(t, c, "app", Ongoing); len(m.partitions) != 3 {
		t.Fatalf("partitions %v", m.partitions)
	}
}
