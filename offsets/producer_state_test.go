package offsets

import (
	"reflect"
	"testing"
)

// TestProducerState: aborted transactions and the snapshot of one partition are
// kept apart from a partition whose name extends its own, Drop ranges delete by
// marker offset, and Delete removes both keyspaces with the log index.
func TestProducerState(t *testing.T) {
	d := openT(t, t.TempDir(), Options{})
	defer d.Close()
	x, y := d.LogIndex("orders-1"), d.LogIndex("orders-10")
	aborted := func(l *LogIndex) []AbortedTxnRecord {
		t.Helper()
		var out []AbortedTxnRecord
		if err := l.AbortedTxnRecords(func(a AbortedTxnRecord) error { out = append(out, a); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	recs := []AbortedTxnRecord{{7, 1, 4, 3}, {8, 5, 9, 10}, {7, 12, 20, 21}}
	if err := x.UpdateProducerState(ProducerStateUpdate{Aborted: recs, SetSnapshot: true, SnapshotOffset: 21, Snapshot: []byte("state")}); err != nil {
		t.Fatal(err)
	}
	if err := y.UpdateProducerState(ProducerStateUpdate{Aborted: recs[:1], SetSnapshot: true, SnapshotOffset: 5, Snapshot: []byte("y")}); err != nil {
		t.Fatal(err)
	}
	if got := aborted(x); !reflect.DeepEqual(got, recs) {
		t.Fatalf("aborted %+v, want %+v", got, recs)
	}
	if off, snap, ok, err := x.ProducerSnapshot(); err != nil || !ok || off != 21 || string(snap) != "state" {
		t.Fatalf("snapshot %d %q %v %v", off, snap, ok, err)
	}
	// Drops by marker offset, [lo, hi); an empty range is nothing.
	if err := x.UpdateProducerState(ProducerStateUpdate{Drop: [][2]int64{{9, 10}, {30, 30}}, DeleteSnapshot: true, Sync: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := aborted(x), []AbortedTxnRecord{recs[0], recs[2]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after dropping [9, 10): %+v, want %+v", got, want)
	}
	if _, _, ok, err := x.ProducerSnapshot(); ok || err != nil {
		t.Fatalf("snapshot after its deletion: ok %v, %v", ok, err)
	}
	if err := x.UpdateProducerState(ProducerStateUpdate{SetSnapshot: true, SnapshotOffset: 21}); err != nil {
		t.Fatal(err)
	}
	if err := x.Delete(); err != nil {
		t.Fatal(err)
	}
	if got := aborted(x); got != nil {
		t.Fatalf("aborted after Delete: %+v", got)
	}
	if _, _, ok, err := x.ProducerSnapshot(); ok || err != nil {
		t.Fatalf("snapshot after Delete: ok %v, %v", ok, err)
	}
	if got := aborted(y); !reflect.DeepEqual(got, recs[:1]) {
		t.Fatalf("the other partition's aborted: %+v", got)
	}
	if off, _, ok, _ := y.ProducerSnapshot(); !ok || off != 5 {
		t.Fatalf("the other partition's snapshot: %d %v", off, ok)
	}
}
