package replication

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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
