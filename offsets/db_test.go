package offsets

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openT(tb testing.TB, dir string, opts Options) *DB {
	tb.Helper()
	d, err := Open(dir, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return d
}

func TestFormatVersion(t *testing.T) {
	dir := t.TempDir()
	d := openT(t, dir, Options{})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	d = openT(t, dir, Options{}) // reopening an existing database works
	if err := d.db.Set(formatKey, binary.BigEndian.AppendUint32(nil, FormatVersion+1), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrFormat) {
		t.Fatalf("Open of a newer format: %v, want ErrFormat", err)
	}
}

func TestOpenRejectsDataWithoutFormatKey(t *testing.T) {
	dir := t.TempDir()
	p, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Set([]byte("foreign"), []byte("x"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrFormat) {
		t.Fatalf("Open: %v, want ErrFormat", err)
	}
}

// TestPebbleLogsGoToSlog: nothing reaches Go's log package; Pebble's lines
// (WAL replay on reopen) reach the injected logger.
func TestPebbleLogsGoToSlog(t *testing.T) {
	var std, structured bytes.Buffer
	orig := log.Writer()
	log.SetOutput(&std)
	defer log.SetOutput(orig)
	logger := slog.New(slog.NewTextHandler(&structured, nil))
	dir := t.TempDir()
	d := openT(t, dir, Options{Logger: logger})
	x := d.LogIndex("t-0")
	for i := range 100 {
		if err := x.PutEntry(0, IndexEntry{Offset: int64(i), Pos: int64(i) * 10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openT(t, dir, Options{Logger: logger})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if std.Len() != 0 {
		t.Fatalf("Pebble wrote to Go's log: %q", std.String())
	}
	if !strings.Contains(structured.String(), "component=pebble") {
		t.Fatalf("no Pebble line reached slog: %q", structured.String())
	}
}

func TestLogIndexSegmentsAndState(t *testing.T) {
	dir := t.TempDir()
	d := openT(t, dir, Options{})
	x := d.LogIndex("orders-1")
	y := d.LogIndex("orders-10") // its prefix extends x's name: must not mix
	metas := []SegmentMeta{
		{BaseOffset: 0, Size: 100, NextOffset: 10, MaxTimestamp: -1, Closed: true},
		{BaseOffset: 10, Size: 0, NextOffset: 10, MaxTimestamp: -1},
		{BaseOffset: 1 << 40, Size: 5, NextOffset: 1<<40 + 1, MaxTimestamp: 1 << 50},
	}
	for _, m := range metas {
		if err := x.PutSegment(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := y.PutSegment(SegmentMeta{BaseOffset: 3, Size: 1}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(int64) error{func(v int64) error { return x.SetLogStartOffset(v, true) }, func(v int64) error { return x.SetRecoveryPoint(v+1, true) }} {
		if err := f(7); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openT(t, dir, Options{})
	defer d.Close()
	x, y = d.LogIndex("orders-1"), d.LogIndex("orders-10")
	got, err := x.Segments()
	if err != nil || !slices.Equal(got, metas) {
		t.Fatalf("Segments = %+v, %v; want %+v", got, err, metas)
	}
	if ls, err := x.LogStartOffset(); err != nil || ls != 7 {
		t.Fatalf("LogStartOffset = %d, %v", ls, err)
	}
	if rp, err := x.RecoveryPoint(); err != nil || rp != 8 {
		t.Fatalf("RecoveryPoint = %d, %v", rp, err)
	}
	if rp, err := y.RecoveryPoint(); err != nil || rp != 0 {
		t.Fatalf("other partition's RecoveryPoint = %d, %v; want 0", rp, err)
	}
	if err := x.DeleteSegment(10); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.Segments(); len(got) != 2 {
		t.Fatalf("after DeleteSegment: %+v", got)
	}
	if err := x.Delete(); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.Segments(); len(got) != 0 {
		t.Fatalf("after Delete: %+v", got)
	}
	if ls, _ := x.LogStartOffset(); ls != 0 {
		t.Fatalf("after Delete: log start %d", ls)
	}
	if got, _ := y.Segments(); len(got) != 1 {
		t.Fatalf("Delete of one partition touched another: %+v", got)
	}
	for _, bad := range []string{"", "a\x00b"} {
		if _, err := d.LogIndex(bad).Segments(); !errors.Is(err, ErrPartitionKey) {
			t.Fatalf("LogIndex(%q): %v, want ErrPartitionKey", bad, err)
		}
	}
}

func TestLogIndexClosed(t *testing.T) {
	d := openT(t, t.TempDir(), Options{})
	x := d.LogIndex("t-0")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := x.LookupOffset(0, 5); !errors.Is(err, ErrClosed) {
		t.Fatalf("lookup after Close: %v, want ErrClosed", err)
	}
	if err := x.PutEntry(0, IndexEntry{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after Close: %v, want ErrClosed", err)
	}
}

// model is the reference behaviour of the entry lookups.
type model struct {
	entries map[int64][]IndexEntry         // per segment, by offset
	times   map[int64]map[int64]IndexEntry // per segment, by MaxTimestampBefore (replaced)
}

func (m *model) truncate(seg, off int64) {
	m.entries[seg] = slices.DeleteFunc(m.entries[seg], func(e IndexEntry) bool { return e.Offset >= off })
	for ts, e := range m.times[seg] {
		if e.Offset >= off {
			delete(m.times[seg], ts)
		}
	}
}

func (m *model) put(seg int64, e IndexEntry) {
	if m.times[seg] == nil {
		m.times[seg] = map[int64]IndexEntry{}
	}
	m.times[seg][e.MaxTimestampBefore] = e
	es := slices.DeleteFunc(m.entries[seg], func(x IndexEntry) bool {
		return x.Offset == e.Offset
	})
	i := sort.Search(len(es), func(i int) bool { return es[i].Offset > e.Offset })
	m.entries[seg] = slices.Insert(es, i, e)
}

func (m *model) lookupOffset(seg, off int64) (IndexEntry, bool) {
	var out IndexEntry
	ok := false
	for _, e := range m.entries[seg] {
		if e.Offset <= off {
			out, ok = e, true
		}
	}
	return out, ok
}

// lookupTs returns the time entry with the largest timestamp < ts.
func (m *model) lookupTs(seg, ts int64) (IndexEntry, bool) {
	var out IndexEntry
	ok := false
	for _, e := range m.times[seg] {
		if e.MaxTimestampBefore < ts && (!ok || e.MaxTimestampBefore > out.MaxTimestampBefore) {
			out, ok = e, true
		}
	}
	return out, ok
}

// TestLogIndexEntries compares lookups and truncation against a model, with
// entries written as the log writes them (offsets increasing, timestamps
// non-decreasing) in several segments.
func TestLogIndexEntries(t *testing.T) {
	d := openT(t, t.TempDir(), Options{})
	defer d.Close()
	x := d.LogIndex("t-0")
	m := &model{entries: map[int64][]IndexEntry{}, times: map[int64]map[int64]IndexEntry{}}
	rng := rand.New(rand.NewPCG(1, 2))
	segs := []int64{0, 1000, 5000}
	for _, seg := range segs {
		off, pos, ts := seg+1, int64(100), int64(-1)
		for range 200 {
			e := IndexEntry{Offset: off, Pos: pos, MaxTimestampBefore: ts}
			if err := x.PutEntry(seg, e); err != nil {
				t.Fatal(err)
			}
			m.put(seg, e)
			off += 1 + rng.Int64N(3)
			pos += 100 + rng.Int64N(50)
			if rng.IntN(3) > 0 {
				ts += rng.Int64N(10)
			}
		}
	}
	check := func() {
		t.Helper()
		for _, seg := range segs {
			for probe := seg - 2; probe < seg+700; probe++ {
				e, ok, err := x.LookupOffset(seg, probe)
				we, wok := m.lookupOffset(seg, probe)
				if err != nil || ok != wok || e != we {
					t.Fatalf("LookupOffset(%d, %d) = %+v %v %v, want %+v %v", seg, probe, e, ok, err, we, wok)
				}
			}
			for _, probe := range append([]int64{math.MinInt64, math.MaxInt64}, rangeInts(-2, 700)...) {
				e, ok, err := x.LookupTimestamp(seg, probe)
				we, wok := m.lookupTs(seg, probe)
				if err != nil || ok != wok || e != we {
					t.Fatalf("LookupTimestamp(%d, %d) = %+v %v %v, want %+v %v", seg, probe, e, ok, err, we, wok)
				}
			}
			e, ok, err := x.LookupOffset(seg, math.MaxInt64)
			we, wok := m.lookupOffset(seg, math.MaxInt64)
			if err != nil || ok != wok || e != we {
				t.Fatalf("LookupOffset(%d, max) = %+v %v, want %+v %v", seg, e, ok, we, wok)
			}
		}
	}
	check()
	for _, tr := range []struct{ seg, off int64 }{{1000, 1300}, {0, 150}, {5000, 5001}} {
		if err := x.TruncateEntries(tr.seg, tr.off); err != nil {
			t.Fatal(err)
		}
		m.truncate(tr.seg, tr.off)
		check()
	}
	if err := x.DeleteSegment(1000); err != nil {
		t.Fatal(err)
	}
	delete(m.entries, 1000)
	delete(m.times, 1000)
	check()
}

func rangeInts(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// A new partition's log resets its index: with nothing recorded, Delete must
// write nothing (a range deletion per new partition made each later iterator
// fragment them all again).
func TestLogIndexDeleteEmptyWritesNothing(t *testing.T) {
	d := openT(t, t.TempDir(), Options{})
	defer d.Close()
	walBytes := func() uint64 { return d.db.Metrics().WAL.BytesIn }
	before := walBytes()
	if err := d.LogIndex("fresh-0").Delete(); err != nil {
		t.Fatal(err)
	}
	if after := walBytes(); after != before {
		t.Fatalf("Delete of an empty index wrote %d WAL bytes", after-before)
	}
	x := d.LogIndex("used-0")
	if err := x.SetLogStartOffset(5, false); err != nil {
		t.Fatal(err)
	}
	before = walBytes()
	if err := x.Delete(); err != nil {
		t.Fatal(err)
	}
	if walBytes() == before {
		t.Fatal("Delete of a used index wrote nothing")
	}
	if ls, _ := x.LogStartOffset(); ls != 0 {
		t.Fatalf("after Delete: log start %d, want 0", ls)
	}
	// Producer state alone is something to delete too.
	y := d.LogIndex("producers-0")
	if err := y.UpdateProducerState(ProducerStateUpdate{SetSnapshot: true, SnapshotOffset: 3, Snapshot: []byte("s")}); err != nil {
		t.Fatal(err)
	}
	if err := y.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := y.ProducerSnapshot(); err != nil || ok {
		t.Fatalf("after Delete: producer snapshot ok=%v, %v; want none", ok, err)
	}
}

// TestDropOnlyWhereRecorded: dropping a range of aborted transactions that holds
// none writes nothing (every partition open drops one, and each range deletion
// costs every later iterator); a range that holds some deletes them.
func TestDropOnlyWhereRecorded(t *testing.T) {
	d := openT(t, t.TempDir(), Options{})
	defer d.Close()
	walBytes := func() uint64 { return d.db.Metrics().WAL.BytesIn }
	x := d.LogIndex("t-0")
	before := walBytes()
	if err := x.UpdateProducerState(ProducerStateUpdate{Drop: [][2]int64{{0, math.MaxInt64}}, Sync: true}); err != nil {
		t.Fatal(err)
	}
	if after := walBytes(); after != before {
		t.Fatalf("dropping an empty range wrote %d WAL bytes", after-before)
	}
	recs := []AbortedTxnRecord{{ProducerID: 1, FirstOffset: 2, LastOffset: 5}, {ProducerID: 1, FirstOffset: 7, LastOffset: 9}}
	if err := x.UpdateProducerState(ProducerStateUpdate{Aborted: recs}); err != nil {
		t.Fatal(err)
	}
	if err := x.UpdateProducerState(ProducerStateUpdate{Drop: [][2]int64{{6, math.MaxInt64}}}); err != nil {
		t.Fatal(err)
	}
	var left []int64
	if err := x.AbortedTxnRecords(func(a AbortedTxnRecord) error { left = append(left, a.LastOffset); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != 5 {
		t.Fatalf("after dropping [6, max): %v, want [5]", left)
	}
}
