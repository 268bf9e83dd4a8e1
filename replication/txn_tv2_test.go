package replication

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
)

// TestTV2MarkerEpochs: a TV2 marker carries the transaction's epoch plus one and
// closes it; one at or below the epoch of the producer's open transaction is stale
// (a re-sent marker of the transaction before): nothing is appended, the open
// transaction stays open, and its answer waits for that transaction's first batch
// to be committed. A TV1 marker at the same epoch would close the new
// transaction, which is why the rule exists.
func TestTV2MarkerEpochs(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	must := func(r AppendResult, err error) AppendResult {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	open := func() []OpenTxn {
		out := p.OpenTxns()
		for i := range out {
			out[i].Started = time.Time{}
		}
		return out
	}
	must(p.Append(txnBatch(7, 0, 0, "a1", "a2"), 1)) // 0..1, epoch 0
	if r := must(p.WriteMarker(7, 1, false, 0, true)); r.BaseOffset != 2 || r.Duplicate {
		t.Fatalf("marker at epoch 1: %+v, want appended at 2", r)
	}
	if got := open(); len(got) != 0 {
		t.Fatalf("open after the marker at epoch+1: %+v", got)
	}
	if want := []AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 2}}; !reflect.DeepEqual(p.AbortedTxns(0, 10), want) {
		t.Fatalf("aborted %+v, want %+v", p.AbortedTxns(0, 10), want)
	}
	// The next transaction at the bumped epoch starts its sequence over.
	must(p.Append(txnBatch(7, 1, 0, "b1"), 1)) // 3
	end := p.LogEndOffset()
	r := must(p.WriteMarker(7, 1, false, 0, true)) // re-sent: stale
	if !r.Duplicate || r.LastOffset != 3 || p.LogEndOffset() != end {
		t.Fatalf("stale marker: %+v, log end %d (was %d); want nothing appended, waiting for offset 3", r, p.LogEndOffset(), end)
	}
	if err := p.WaitHighWatermark(context.Background(), r.LeaderEpoch, r.LastOffset); err != nil {
		t.Fatalf("waiting for a stale marker's answer: %v", err)
	}
	if got, want := open(), []OpenTxn{{ProducerID: 7, Epoch: 1, FirstOffset: 3}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("open after a stale marker: %+v, want %+v", got, want)
	}
	if lso := p.LastStableOffset(); lso != 3 {
		t.Fatalf("LSO %d after a stale marker, want 3", lso)
	}
	// A marker older than the producer's epoch here is refused, TV2 or not.
	_, err := p.WriteMarker(7, 0, true, 0, true)
	wantCode(t, "marker below the producer's epoch", err, kerr.InvalidProducerEpoch)

	if r := must(p.WriteMarker(7, 2, true, 0, true)); r.Duplicate || r.BaseOffset != 4 {
		t.Fatalf("marker at epoch 2: %+v, want appended at 4", r)
	}
	if got := open(); len(got) != 0 {
		t.Fatalf("open after the marker at epoch 2: %+v", got)
	}
	// With nothing open, a marker at the producer's epoch is appended again
	// (Kafka's idempotent marker retry, KAFKA-19999): it closes nothing.
	if r := must(p.WriteMarker(7, 2, true, 0, true)); r.Duplicate || r.BaseOffset != 5 {
		t.Fatalf("marker repeated with nothing open: %+v, want appended at 5", r)
	}

	// TV1 keeps its rule: a marker at the open transaction's own epoch closes it.
	must(p.Append(txnBatch(8, 0, 0, "c1"), 1)) // 6
	if r := must(p.WriteMarker(8, 0, true, 0, false)); r.Duplicate || r.BaseOffset != 7 {
		t.Fatalf("TV1 marker: %+v, want appended at 7", r)
	}
	if got := open(); len(got) != 0 {
		t.Fatalf("open after the TV1 marker: %+v", got)
	}
}

// heldPartition is a one-replica partition (two replicas when followed, so that
// its leadership can move) with producer 7's transaction at epoch 0 open from
// offset 0.
func heldPartition(t *testing.T, followed bool) (*Manager, *Partition, TopicSpec) {
	t.Helper()
	m, db := newManager(t, t.TempDir())
	t.Cleanup(func() { closeAll(t, m, db) })
	s := spec("t", 1, 1)
	if followed {
		s.Partitions[0].Replicas, s.Partitions[0].ISR, s.Partitions[0].LeaderEpoch = []int32{0, 1}, []int32{0}, 1
	}
	if err := m.Apply(1, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	if _, err := p.Append(txnBatch(7, 0, 0, "a1", "a2"), 1); err != nil { // 0..1
		t.Fatal(err)
	}
	return m, p, s
}

// waitHolds polls until n batches wait in AwaitPreviousMarker.
func waitHolds(t *testing.T, p *Partition, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); p.MarkerHolds() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d batches held, want %d", p.MarkerHolds(), n)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}

// TestMarkerHold: a batch of the producer's next epoch waits while its
// transaction at the previous epoch is open here, and lands after that
// transaction's marker, which a re-sent copy then cannot close (the order
// opposite to TestTV2MarkerEpochs'); a batch of the open transaction's own
// epoch, or of a producer with nothing open, does not wait.
func TestMarkerHold(t *testing.T) {
	_, p, _ := heldPartition(t, false)
	ctx := context.Background()
	if err := p.AwaitPreviousMarker(ctx, 7, 0); err != nil {
		t.Fatalf("a batch of the open transaction's epoch: %v", err)
	}
	if err := p.AwaitPreviousMarker(ctx, 8, 3); err != nil {
		t.Fatalf("a producer with nothing open: %v", err)
	}
	type landed struct {
		r   AppendResult
		err error
	}
	done := make(chan landed, 1)
	go func() {
		if err := p.AwaitPreviousMarker(ctx, 7, 1); err != nil {
			done <- landed{err: err}
			return
		}
		r, err := p.Append(txnBatch(7, 1, 0, "b1"), 1)
		done <- landed{r, err}
	}()
	waitHolds(t, p, 1)
	if end := p.LogEndOffset(); end != 2 {
		t.Fatalf("log end %d while the batch is held, want 2", end)
	}
	m, err := p.WriteMarker(7, 1, true, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatalf("held batch: %v", got.err)
	}
	if m.BaseOffset != 2 || got.r.BaseOffset != 3 {
		t.Fatalf("marker at %d, held batch at %d; want 2 then 3", m.BaseOffset, got.r.BaseOffset)
	}
	if open := p.OpenTxns(); len(open) != 1 || open[0].Epoch != 1 || open[0].FirstOffset != 3 {
		t.Fatalf("open after the held batch: %+v, want epoch 1 from 3", open)
	}
	waitHolds(t, p, 0)
	// The same marker again (its coordinator moved) is stale: it does not
	// close the transaction the held batch opened.
	if r, err := p.WriteMarker(7, 1, true, 0, true); err != nil || !r.Duplicate || p.LogEndOffset() != 4 {
		t.Fatalf("marker re-sent after the held batch: %+v, %v, log end %d; want nothing appended", r, err, p.LogEndOffset())
	}
	if open := p.OpenTxns(); len(open) != 1 || open[0].Epoch != 1 {
		t.Fatalf("open after the re-sent marker: %+v, want epoch 1", open)
	}
}

// TestMarkerHoldTimeout: a marker that does not come within MarkerHoldTimeout
// gives CONCURRENT_TRANSACTIONS (retried by TV2 producers), and a context that
// ends gives its error; nothing is appended.
func TestMarkerHoldTimeout(t *testing.T) {
	_, p, _ := heldPartition(t, false)
	start := time.Now()
	err := p.AwaitPreviousMarker(context.Background(), 7, 1)
	wantCode(t, "held past the timeout", err, kerr.ConcurrentTransactions)
	if took := time.Since(start); took < MarkerHoldTimeout {
		t.Fatalf("answered after %v, before the timeout %v", took, MarkerHoldTimeout)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.AwaitPreviousMarker(ctx, 7, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("held with a canceled context: %v", err)
	}
	if end := p.LogEndOffset(); end != 2 || p.MarkerHolds() != 0 {
		t.Fatalf("log end %d, %d held; want 2 and none", end, p.MarkerHolds())
	}
}

// TestMarkerHoldLeaderChange: a hold ends with NOT_LEADER_OR_FOLLOWER when the
// leadership moves to another broker or the broker is fenced, at once rather
// than at its timeout.
func TestMarkerHoldLeaderChange(t *testing.T) {
	for _, how := range []string{"moved", "fenced"} {
		t.Run(how, func(t *testing.T) {
			m, p, s := heldPartition(t, true)
			done := make(chan error, 1)
			go func() { done <- p.AwaitPreviousMarker(context.Background(), 7, 1) }()
			waitHolds(t, p, 1)
			left := time.Now()
			if how == "fenced" {
				m.SetFenced(true)
			} else {
				s.Partitions[0].Leader, s.Partitions[0].LeaderEpoch = 1, 2
				if err := m.Apply(2, []TopicSpec{s}); err != nil {
					t.Fatal(err)
				}
			}
			wantCode(t, "held when the leadership left", <-done, kerr.NotLeaderForPartition)
			if took := time.Since(left); took >= MarkerHoldTimeout {
				t.Fatalf("answered %v after the leadership left, want at once", took)
			}
		})
	}
}

// TestTV2OpenEpochRestored: the epoch of a producer's open transaction, which
// the stale-marker rule and the hold compare with, comes back after a reopen
// (snapshot plus the log after it) and after a truncation.
func TestTV2OpenEpochRestored(t *testing.T) {
	dir := t.TempDir()
	m, db := newManager(t, dir)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	step := func(_ AppendResult, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	step(p.Append(txnBatch(7, 0, 0, "a1", "a2"), 1)) // 0..1
	step(p.WriteMarker(7, 1, true, 0, true))         // 2
	if err := p.snapshotProducers(); err != nil {    // at 3: nothing open
		t.Fatal(err)
	}
	step(p.Append(txnBatch(7, 1, 0, "b1"), 1)) // 3: opens at epoch 1, after the snapshot
	check := func(when string) {
		t.Helper()
		open := p.OpenTxns()
		if len(open) != 1 || open[0].ProducerID != 7 || open[0].Epoch != 1 || open[0].FirstOffset != 3 {
			t.Fatalf("%s: open %+v, want producer 7 at epoch 1 from 3", when, open)
		}
		end := p.LogEndOffset()
		if r, err := p.WriteMarker(7, 1, true, 0, true); err != nil || !r.Duplicate || p.LogEndOffset() != end {
			t.Fatalf("%s: stale marker %+v, %v; log end %d, was %d", when, r, err, p.LogEndOffset(), end)
		}
		canceled, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.AwaitPreviousMarker(canceled, 7, 2); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: a batch at epoch 2 is not held: %v", when, err)
		}
	}
	check("appended")
	closeAll(t, m, db)

	m, db = newManager(t, dir)
	defer closeAll(t, m, db)
	if err := m.Apply(2, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p = m.Partition("t", 0)
	check("reopened")
	if err := p.snapshotProducers(); err != nil { // at 4: open at epoch 1
		t.Fatal(err)
	}
	step(p.WriteMarker(7, 2, false, 0, true))  // 4
	step(p.Append(txnBatch(7, 2, 0, "c1"), 1)) // 5
	p.hw.Store(4)                              // as a follower told to cut at 4
	if err := p.truncateToLeader(-1, -1); err != nil {
		t.Fatal(err)
	}
	if end := p.LogEndOffset(); end != 4 {
		t.Fatalf("log end %d after truncating, want 4", end)
	}
	check("truncated")
}

// TestTV2StaleMarkerWaitsForCommit: a stale TV2 marker appends nothing, but its
// answer stands for the marker that did end the transaction, which may not be
// committed yet: waiting for it (WaitHighWatermark, as txn.WriteLocalMarkers
// does) lasts until the open transaction's first batch, after that marker in the
// log, is committed. Answered at once, a coordinator could record complete a
// marker that a leader change then truncates.
func TestTV2StaleMarkerWaitsForCommit(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	_, p := leadWithFollower(t, m)
	for _, b := range [][]byte{txnBatch(7, 0, 0, "a"), nil, txnBatch(7, 1, 0, "b")} { // 0, marker 1, 2
		var err error
		if b == nil {
			_, err = p.WriteMarker(7, 1, true, 0, true)
		} else {
			_, err = p.Append(b, 1)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := p.WriteMarker(7, 1, true, 0, true)
	if err != nil || !r.Duplicate || r.LastOffset != 2 {
		t.Fatalf("stale marker: %+v, %v; want nothing appended, answered at offset 2", r, err)
	}
	follow := func(offset int64) {
		t.Helper()
		s, err := p.ReadReplica(1, p.LeaderEpoch(), offset, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		s.Release()
	}
	waits := func(when string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := p.WaitHighWatermark(ctx, r.LeaderEpoch, r.LastOffset); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s (high watermark %d): the stale marker's answer did not wait: %v", when, p.HighWatermark(), err)
		}
	}
	waits("nothing replicated")
	follow(2) // the follower has the marker, not the new transaction's batch
	waits("the marker committed, the batch after it not")
	follow(3)
	if err := p.WaitHighWatermark(context.Background(), r.LeaderEpoch, r.LastOffset); err != nil {
		t.Fatalf("high watermark %d: %v", p.HighWatermark(), err)
	}
}

// TestAppendTV2: AppendTV2 refuses (CONCURRENT_TRANSACTIONS, nothing appended)
// a batch of the producer's next epoch while its transaction at an older epoch
// is open, as after a late batch of that transaction landed between the hold and
// the append; it appends once the marker came, and within the open
// transaction. Append (TV1) keeps joining such a batch to the open transaction.
// AppendFromCoordinatorTV2 (a coordinator's offsets) checks the same.
func TestAppendTV2(t *testing.T) {
	_, p, _ := heldPartition(t, false)
	_, err := p.AppendTV2(txnBatch(7, 1, 0, "early"), 1)
	wantCode(t, "batch of the next epoch before the marker", err, kerr.ConcurrentTransactions)
	if end := p.LogEndOffset(); end != 2 {
		t.Fatalf("log end %d after a refused batch, want 2", end)
	}
	if _, err := p.WriteMarker(7, 1, false, 0, true); err != nil { // 2
		t.Fatal(err)
	}
	for i, b := range [][]byte{txnBatch(7, 1, 0, "b1"), txnBatch(7, 1, 1, "b2"), txnBatch(9, 0, 0, "other")} { // 3, 4, 5
		if r, err := p.AppendTV2(b, 1); err != nil || r.BaseOffset != int64(3+i) {
			t.Fatalf("batch %d after the marker: %+v, %v", i, r, err)
		}
	}
	if open := p.OpenTxns(); len(open) != 2 || open[0].ProducerID != 7 || open[0].Epoch != 1 || open[0].FirstOffset != 3 {
		t.Fatalf("open: %+v, want producer 7 at epoch 1 from 3, and 9", open)
	}
	if _, err := p.Append(txnBatch(9, 1, 0, "tv1"), 1); err != nil {
		t.Fatalf("Append of a later epoch while one is open (TV1, unchanged): %v", err)
	}

	// A coordinator's batch (TxnOffsetCommit v5) takes the same check.
	offsets := func(epoch int16) []byte {
		return batch.BuildTransactional(time.Now().UnixMilli(), 7, epoch, []batch.Record{{Key: []byte("k"), Value: []byte("v")}})
	}
	end := p.LogEndOffset()
	_, err = p.AppendFromCoordinatorTV2(offsets(2))
	wantCode(t, "offsets of the next epoch before the marker", err, kerr.ConcurrentTransactions)
	if p.LogEndOffset() != end {
		t.Fatalf("log end %d after refused offsets, want %d", p.LogEndOffset(), end)
	}
	if _, err := p.AppendFromCoordinatorTV2(offsets(1)); err != nil {
		t.Fatalf("offsets within the open transaction: %v", err)
	}
}
