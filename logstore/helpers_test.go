package logstore_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"skiff/internal/batch"
	"skiff/logstore"
	"skiff/offsets"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// makeBatch encodes a valid RecordBatch v2 with n records of valueSize bytes whose
// timestamps run from ts to ts+n-1 (so maxTimestamp is ts+n-1).
func makeBatch(tb testing.TB, n, valueSize int, ts int64) []byte {
	tb.Helper()
	var recs []byte
	for i := range n {
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Value: bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // Length 0 encodes as one varint byte
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:     0,
		Magic:           2,
		LastOffsetDelta: int32(n - 1),
		FirstTimestamp:  ts,
		MaxTimestamp:    ts + int64(n) - 1,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(n),
		Records:         recs,
	}
	rb.Length = int32(batch.HeaderSize - batch.LogOverhead + len(recs))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
	if _, err := batch.Check(b); err != nil {
		tb.Fatalf("makeBatch: %v", err)
	}
	return b
}

// appended is one batch as the log stored it.
type appended struct {
	base, next, maxTs int64
	raw               []byte
}

// appendN appends count batches of random size (1..maxRecords records of 50..300
// bytes), with timestamps increasing from ts0 but occasionally going back, and
// returns what was stored.
func appendN(tb testing.TB, l *logstore.Log, rng *rand.Rand, count, maxRecords int, ts0 int64) []appended {
	tb.Helper()
	var out []appended
	ts := ts0
	for range count {
		n := 1 + rng.IntN(maxRecords)
		bts := ts
		if rng.IntN(5) == 0 {
			bts -= 500 // out of order timestamps happen
		}
		b := makeBatch(tb, n, 50+rng.IntN(250), bts)
		base, err := l.Append(b, 7)
		if err != nil {
			tb.Fatalf("Append: %v", err)
		}
		h, err := batch.Check(b)
		if err != nil {
			tb.Fatalf("stored batch does not check: %v", err)
		}
		if h.BaseOffset != base || h.LeaderEpoch != 7 {
			tb.Fatalf("batch header not rewritten: base %d (want %d), epoch %d", h.BaseOffset, base, h.LeaderEpoch)
		}
		out = append(out, appended{base: base, next: h.NextOffset(), maxTs: h.MaxTimestamp, raw: b})
		ts += 100
	}
	return out
}

// readAll returns the bytes of a Read.
func readAll(tb testing.TB, l *logstore.Log, offset, maxBytes, maxOffset int64) ([]byte, *logstore.Slice) {
	tb.Helper()
	s, err := l.Read(offset, maxBytes, maxOffset)
	if err != nil {
		tb.Fatalf("Read(%d, %d, %d): %v", offset, maxBytes, maxOffset, err)
	}
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		tb.Fatalf("WriteTo: %v", err)
	}
	if int64(buf.Len()) != s.Bytes {
		tb.Fatalf("slice says %d bytes, wrote %d", s.Bytes, buf.Len())
	}
	res := *s // the ranges, for inspection after Release
	s.Release()
	return buf.Bytes(), &res
}

// checkLog verifies that l holds exactly want: every offset reads back its batch
// whole, a full read returns everything in order, and OffsetForTimestamp agrees
// with a brute-force answer.
func checkLog(tb testing.TB, l *logstore.Log, want []appended) {
	tb.Helper()
	if len(want) == 0 {
		return
	}
	if got := l.LogEndOffset(); got != want[len(want)-1].next {
		tb.Fatalf("LogEndOffset = %d, want %d", got, want[len(want)-1].next)
	}
	start := l.LogStartOffset()
	var all []byte
	for _, a := range want {
		if a.next <= start {
			continue
		}
		all = append(all, a.raw...)
		for _, off := range []int64{max(a.base, start), a.next - 1} {
			got, _ := readAll(tb, l, off, 1, math.MaxInt64)
			if !bytes.Equal(got, a.raw) {
				tb.Fatalf("Read(%d) returned %d bytes, want the batch at %d (%d bytes)", off, len(got), a.base, len(a.raw))
			}
		}
	}
	got, _ := readAll(tb, l, start, math.MaxInt64, math.MaxInt64)
	if !bytes.Equal(got, all) {
		tb.Fatalf("full Read from %d returned %d bytes, want %d", start, len(got), len(all))
	}
	for _, ts := range timestampsToProbe(want) {
		wantOff, wantTs, wantOK := int64(0), int64(0), false
		for _, a := range want {
			if a.next > start && a.maxTs >= ts {
				wantOff, wantTs, wantOK = max(a.base, start), a.maxTs, true
				break
			}
		}
		off, gotTs, ok, err := l.OffsetForTimestamp(ts)
		if err != nil {
			tb.Fatalf("OffsetForTimestamp(%d): %v", ts, err)
		}
		if ok != wantOK || off != wantOff || gotTs != wantTs {
			tb.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d, %v", ts, off, gotTs, ok, wantOff, wantTs, wantOK)
		}
	}
}

func timestampsToProbe(want []appended) []int64 {
	var ts []int64
	for i, a := range want {
		if i%3 == 0 {
			ts = append(ts, a.maxTs-1, a.maxTs, a.maxTs+1)
		}
	}
	return append(ts, math.MinInt64, -1, 0, math.MaxInt64)
}

// indexEnv provides an Index across log reopenings, and can make it stale or
// lose it entirely, for both implementations.
type indexEnv interface {
	Index() logstore.Index
	// Snapshot captures the index now; the returned function puts that state back.
	Snapshot(tb testing.TB) (restore func())
	// Wipe loses all index data.
	Wipe(tb testing.TB)
}

type memEnv struct{ m *logstore.MemIndex }

func (e *memEnv) Index() logstore.Index { return e.m }
func (e *memEnv) Snapshot(testing.TB) func() {
	c := e.m.Clone()
	return func() { e.m = c.Clone() }
}
func (e *memEnv) Wipe(testing.TB) { e.m = logstore.NewMemIndex() }

type pebbleEnv struct {
	dir string
	db  *offsets.DB
}

func newPebbleEnv(tb testing.TB) *pebbleEnv {
	e := &pebbleEnv{dir: filepath.Join(tb.TempDir(), "meta")}
	e.open(tb)
	tb.Cleanup(func() {
		if err := e.db.Close(); err != nil {
			tb.Errorf("close offsets DB: %v", err)
		}
	})
	return e
}

func (e *pebbleEnv) open(tb testing.TB) {
	db, err := offsets.Open(e.dir, offsets.Options{CacheBytes: 1 << 20})
	if err != nil {
		tb.Fatalf("offsets.Open: %v", err)
	}
	e.db = db
}

func (e *pebbleEnv) Index() logstore.Index { return e.db.LogIndex("t-0") }

// Snapshot copies the closed database directory (a consistent copy).
func (e *pebbleEnv) Snapshot(tb testing.TB) func() {
	if err := e.db.Close(); err != nil {
		tb.Fatal(err)
	}
	snap := tb.TempDir()
	if err := os.CopyFS(snap, os.DirFS(e.dir)); err != nil {
		tb.Fatal(err)
	}
	e.open(tb)
	return func() {
		if err := e.db.Close(); err != nil {
			tb.Fatal(err)
		}
		if err := os.RemoveAll(e.dir); err != nil {
			tb.Fatal(err)
		}
		if err := os.CopyFS(e.dir, os.DirFS(snap)); err != nil {
			tb.Fatal(err)
		}
		e.open(tb)
	}
}

func (e *pebbleEnv) Wipe(tb testing.TB) {
	if err := e.db.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.RemoveAll(e.dir); err != nil {
		tb.Fatal(err)
	}
	e.open(tb)
}

// indexKinds makes a fresh environment of each Index implementation.
var indexKinds = []struct {
	name string
	mk   func(t *testing.T) indexEnv
}{
	{"mem", func(*testing.T) indexEnv { return &memEnv{m: logstore.NewMemIndex()} }},
	{"pebble", func(t *testing.T) indexEnv { return newPebbleEnv(t) }},
}

// forEachIndex runs fn with each Index implementation.
func forEachIndex(t *testing.T, fn func(t *testing.T, env indexEnv)) {
	for _, k := range indexKinds {
		t.Run(k.name, func(t *testing.T) { fn(t, k.mk(t)) })
	}
}

func openLog(tb testing.TB, dir string, cfg logstore.Config, idx logstore.Index) *logstore.Log {
	tb.Helper()
	l, err := logstore.Open(dir, cfg, idx)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return l
}

func closeLog(tb testing.TB, l *logstore.Log) {
	tb.Helper()
	if err := l.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
}

// The Pebble-backed index must satisfy logstore.Index (identical alias types).
var _ logstore.Index = (*offsets.LogIndex)(nil)
