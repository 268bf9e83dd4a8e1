package txn

import (
	"context"
	"math"
	"runtime"
	"testing"
	"time"
)

// TestImplicitAddCarriesCompletion: a TV2 producer's first implicit add after
// EndTxn does not wait for the markers of the transaction it ended: its
// Ongoing record carries them. Its EndTxn waits for them (one completion
// pending per id). After an epoch overflow the carrying record is at the new
// id, epoch 0.
func TestImplicitAddCarriesCompletion(t *testing.T) {
	c, g, _ := gatedCoordinator(t)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", 0}}, true); code != 0 {
		t.Fatalf("implicit add: %d", code)
	}
	if _, e, code := c.EndTxn(ctx, "app", pid, 0, true, true); code != 0 || e != 1 {
		t.Fatalf("commit: epoch %d code %d", e, code)
	}
	// A late retry of that EndTxn waits while PrepareCommit...
	retried := make(chan [2]int64, 1)
	go func() {
		p, e, code := c.EndTxn(ctx, "app", pid, 0, true, true)
		retried <- [2]int64{p<<16 | int64(e), int64(code)}
	}()
	// The markers are held: the next transaction starts anyway.
	addCtx, cancel := context.WithTimeout(ctx, time.Second)
	code, _ := c.AddPartitions(addCtx, "app", pid, 1, []TopicPartition{{"out", 1}}, true)
	cancel()
	if code != 0 {
		t.Fatalf("implicit add while the markers are held: %d", code)
	}
	// ... and answers once the next transaction carries the decision, with
	// what the decision answered (the coordinator's CommitTimeout is 2 s).
	select {
	case r := <-retried:
		if r != [2]int64{pid<<16 | 1, 0} {
			t.Fatalf("late retry: %x code %d, want (%d, 1) 0", r[0], r[1], pid)
		}
	case <-time.After(time.Second):
		t.Fatal("a late retry did not answer once the next transaction began")
	}
	if code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", 2}}, true); code != codeInvalidEpoch {
		t.Fatalf("implicit add at the ended epoch: %d, want INVALID_PRODUCER_EPOCH", code)
	}
	m := waitState(t, c, "app", Ongoing)
	if m.carried == nil || !m.carried.commit || m.carried.epoch != 1 || len(m.carried.partitions) != 1 || !m.tv2 || m.epoch != 1 {
		t.Fatalf("Ongoing state %+v, carried %+v", m, m.carried)
	}
	if _, got, err := parseRecord(m.record()); err != nil || got.carried == nil {
		t.Fatalf("the Ongoing record does not carry the completion: %v", err)
	}
	type answer struct {
		epoch int16
		code  int16
	}
	got := make(chan answer, 1)
	go func() {
		_, e, code := c.EndTxn(ctx, "app", pid, 1, true, true)
		got <- answer{e, code}
	}()
	select {
	case a := <-got:
		t.Fatalf("EndTxn answered %+v before the carried markers", a)
	case <-time.After(50 * time.Millisecond): // it has not answered meanwhile
	}
	close(g.open)
	if a := <-got; a != (answer{2, 0}) {
		t.Fatalf("EndTxn after the markers: %+v, want epoch 2", a)
	}
	m = waitState(t, c, "app", CompleteCommit)
	if m.carried != nil {
		t.Fatal("the completion is still carried after its markers")
	}
	g.mu.Lock()
	epochs := []int16{}
	for _, mk := range g.markers {
		epochs = append(epochs, mk.Epoch)
	}
	g.mu.Unlock()
	if len(epochs) != 2 || epochs[0] != 1 || epochs[1] != 2 {
		t.Fatalf("marker epochs %v, want [1 2]", epochs)
	}

	// An overflow: the carrying record is the new id's, at epoch 0.
	setEpoch(c, "app", math.MaxInt16-1)
	if code, _ := c.AddPartitions(ctx, "app", pid, math.MaxInt16-1, []TopicPartition{{"out", 0}}, true); code != 0 {
		t.Fatalf("implicit add at 32766: %d", code)
	}
	g.open = make(chan struct{}) // hold the next markers
	newPID, e, code := c.EndTxn(ctx, "app", pid, math.MaxInt16-1, false, true)
	if code != 0 || newPID == pid || e != 0 {
		t.Fatalf("abort at 32766: (%d, %d) code %d", newPID, e, code)
	}
	if code, _ := c.AddPartitions(ctx, "app", newPID, 0, []TopicPartition{{"out", 3}}, true); code != 0 {
		t.Fatalf("implicit add of the new id: %d", code)
	}
	m = waitState(t, c, "app", Ongoing)
	if m.pid != newPID || m.epoch != 0 || m.prevPID != pid || m.carried == nil || m.carried.pid != pid || m.carried.epoch != math.MaxInt16 {
		t.Fatalf("after the overflow: pid %d epoch %d prev %d carried %+v", m.pid, m.epoch, m.prevPID, m.carried)
	}
	close(g.open)
}

// TestLoadResendsCarriedCompletion: a coordinator elected while the last
// record of an id is an Ongoing one carrying a completion writes those
// markers again, then lets the transaction end.
func TestLoadResendsCarriedCompletion(t *testing.T) {
	ml := &markerLog{}
	c, log := loadedCoordinator(t, ml)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", 0}, {"out", 1}}, true); code != 0 {
		t.Fatalf("implicit add: %d", code)
	}
	ml.failing.Store(true)
	if _, _, code := c.EndTxn(ctx, "app", pid, 0, false, true); code != 0 {
		t.Fatalf("abort: %d", code)
	}
	if code, _ := c.AddPartitions(ctx, "app", pid, 1, []TopicPartition{{"out", 2}}, true); code != 0 {
		t.Fatalf("implicit add while the markers fail: %d", code)
	}
	reelect(t, c, ml, log, 2)
	ml.mu.Lock()
	for _, mk := range ml.markers {
		if mk.Commit || mk.ProducerID != pid || mk.Epoch != 1 || !mk.TV2 || mk.CoordinatorEpoch != 1 || mk.Topic != "out" || mk.Partition > 1 {
			t.Errorf("marker %+v, want a TV2 abort of out-0/1 at epoch 1 by coordinator epoch 1", mk)
		}
	}
	ml.mu.Unlock()
	if _, e, code := c.EndTxn(ctx, "app", pid, 1, true, true); code != 0 || e != 2 {
		t.Fatalf("commit of the carrying transaction: epoch %d code %d", e, code)
	}
	waitState(t, c, "app", CompleteCommit)
}

// TestAddsDuringCarryingWrite: adds of the producer's other leaders that
// arrive while the carrying record is written follow it (chain.go), and all
// partitions end in the transaction, also at a new id after an overflow.
func TestAddsDuringCarryingWrite(t *testing.T) {
	for _, start := range []int16{0, math.MaxInt16 - 1} {
		c, g, _ := gatedCoordinator(t)
		ctx := context.Background()
		pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
		setEpoch(c, "app", start)
		if code, _ := c.AddPartitions(ctx, "app", pid, start, []TopicPartition{{"out", 0}}, true); code != 0 {
			t.Fatalf("implicit add at %d: %d", start, code)
		}
		nextPID, nextEpoch, code := c.EndTxn(ctx, "app", pid, start, true, true)
		if code != 0 {
			t.Fatalf("commit at %d: %d", start, code)
		}
		codes := make(chan int16, 3)
		for p := int32(1); p <= 3; p++ {
			go func() {
				code, _ := c.AddPartitions(ctx, "app", nextPID, nextEpoch, []TopicPartition{{"next", p}}, true)
				codes <- code
			}()
		}
		for range 3 {
			if code := <-codes; code != 0 {
				t.Fatalf("an implicit add of the next transaction (from %d): %d", start, code)
			}
		}
		m := waitState(t, c, "app", Ongoing)
		if len(m.partitions) != 3 || m.pid != nextPID || m.epoch != nextEpoch || m.carried == nil {
			t.Fatalf("next transaction (from %d): pid %d epoch %d partitions %v carried %v", start, m.pid, m.epoch, m.partitions, m.carried != nil)
		}
		close(g.open)
	}
}

// TestCarriedCompletionKeepsItsResult: the markers of a committed TV2
// transaction are commit markers even when the producer's next transaction
// carries the completion before the goroutine writing them runs. That
// goroutine once copied the prepared state only when it started, by then
// possibly the next transaction's Ongoing state, and wrote abort markers at
// the new epoch: committed transactions read as aborted (one in twelve under
// skiff bench on one node, flush.policy=replicated). GOMAXPROCS(1) lets the
// carry commit before that goroutine runs.
func TestCarriedCompletionKeepsItsResult(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c, _, _ := gatedCoordinator(t)
	ml := &markerLog{}
	c.cfg.WriteMarkers = ml.write
	ctx := context.Background()
	pid, epoch, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	parts := []TopicPartition{{"out", 0}, {"out", 1}}
	const txns = 50
	for i := 0; i < txns; i++ {
		if code, _ := c.AddPartitions(ctx, "app", pid, epoch, parts, true); code != 0 {
			t.Fatalf("transaction %d: implicit add: %d", i, code)
		}
		_, e, code := c.EndTxn(ctx, "app", pid, epoch, true, true)
		if code != 0 || e != epoch+1 {
			t.Fatalf("transaction %d: commit: epoch %d code %d", i, e, code)
		}
		epoch = e
	}
	if _, _, code := c.EndTxn(ctx, "app", pid, epoch, false, true); code != 0 {
		t.Fatalf("empty abort: %d", code)
	}
	waitState(t, c, "app", CompleteAbort)
	ml.mu.Lock()
	defer ml.mu.Unlock()
	commits := map[int16]int{}
	for _, m := range ml.markers {
		if !m.Commit {
			t.Errorf("abort marker %+v of a committed transaction", m)
			continue
		}
		commits[m.Epoch]++
	}
	for e := int16(1); e <= txns; e++ {
		if commits[e] != len(parts) {
			t.Errorf("epoch %d: %d commit markers, want %d", e, commits[e], len(parts))
		}
	}
}
