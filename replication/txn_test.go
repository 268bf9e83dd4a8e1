package replication

import (
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
)

// txnBatch is a transactional batch of producer pid at epoch from sequence seq.
func txnBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	b := batchtest.Strings(batchtest.Producer{ID: pid, Epoch: epoch, Sequence: seq}, time.Now().UnixMilli(), values...)
	b[22] |= batch.AttrTransactional
	binaryFixCRC(b)
	return b
}

// TestTransactionsOnPartition follows two transactions through their markers: the
// last stable offset stays below the open one, the aborted one is indexed, a stale
// marker is refused, and all of it is rebuilt from the log when the partition opens
// again.
func TestTransactionsOnPartition(t *testing.T) {
	dir := t.TempDir()
	m, db := newManager(t, dir)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Append(batchtest.Strings(batchtest.Plain, 1, "plain"), 1)) // 0
	must(p.Append(txnBatch(7, 0, 0, "a1", "a2"), 1))                  // 1..2
	must(p.Append(txnBatch(8, 0, 0, "b1"), 1))                        // 3
	if lso := p.LastStableOffset(); lso != 1 {
		t.Fatalf("LSO with two open transactions: %d, want 1", lso)
	}
	must(p.WriteMarker(7, 0, false, 0)) // 4: abort producer 7
	if lso := p.LastStableOffset(); lso != 3 {
		t.Fatalf("LSO after the abort: %d, want 3", lso)
	}
	must(p.WriteMarker(8, 0, true, 0)) // 5: commit producer 8
	if lso, hw := p.LastStableOffset(), p.HighWatermark(); lso != 6 || hw != 6 {
		t.Fatalf("LSO %d HW %d after both ended, want 6", lso, hw)
	}
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 1, LastOffset: 4}}
	if got := p.AbortedTxns(0, 6); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted: %+v, want %+v", got, want)
	}
	if got := p.AbortedTxns(5, 6); got != nil {
		t.Fatalf("aborted after the marker: %+v, want none", got)
	}
	// A bumped epoch (the coordinator fenced producer 7) refuses the old one.
	must(p.WriteMarker(7, 1, false, 0))
	_, err := p.WriteMarker(7, 0, false, 0)
	wantCode(t, "stale marker", err, kerr.InvalidProducerEpoch)
	wantCode(t, "zombie write", appendErr(p, txnBatch(7, 0, 2, "z")), kerr.InvalidProducerEpoch)
	must(p.Append(txnBatch(9, 0, 0, "open"), 1)) // 7: left open
	closeAll(t, m, db)

	m, db = newManager(t, dir)
	defer closeAll(t, m, db)
	if err := m.Apply(2, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p = m.Partition("t", 0)
	if got := p.AbortedTxns(0, 100); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted after reopening: %+v, want %+v", got, want)
	}
	if lso := p.LastStableOffset(); lso != 7 {
		t.Fatalf("LSO after reopening: %d, want 7 (the open transaction's start)", lso)
	}
	if open := p.OpenTxns(); len(open) != 1 || open[0].ProducerID != 9 {
		t.Fatalf("open after reopening: %+v", open)
	}
	wantCode(t, "zombie write after reopening", appendErr(p, txnBatch(7, 0, 2, "z")), kerr.InvalidProducerEpoch)
	s, err := p.ReadStable(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if s.NextOffset != 7 {
		t.Fatalf("read_committed read ends at %d, want 7", s.NextOffset)
	}
}

// TestProducerIDExpiration: a producer idle past producer.id.expiration.ms is
// forgotten (KIP-854), unless it has a transaction open on the partition.
func TestProducerIDExpiration(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	old := time.Now().Add(-time.Hour).UnixMilli()
	if _, err := p.Append(batchtest.Strings(batchtest.Producer{ID: 5, Epoch: 0, Sequence: 0}, old, "idle"), 1); err != nil {
		t.Fatal(err)
	}
	open := batchtest.Strings(batchtest.Producer{ID: 6, Epoch: 0, Sequence: 0}, old, "open")
	open[22] |= batch.AttrTransactional
	binaryFixCRC(open)
	if _, err := p.Append(open, 1); err != nil {
		t.Fatal(err)
	}
	if n := p.expireProducers(time.Now().Add(-time.Minute)); n != 1 {
		t.Fatalf("expired %d producers, want 1 (the one without a transaction)", n)
	}
	wantCode(t, "forgotten producer", appendErr(p, batchtest.Strings(batchtest.Producer{ID: 5, Epoch: 0, Sequence: 1}, old, "next")), kerr.UnknownProducerID)
	if got := p.Producers(); len(got) != 1 || got[0].ProducerID != 6 || got[0].TxnStartOffset != 1 {
		t.Fatalf("producers left: %+v", got)
	}
}
