package compaction

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
	"skiff/logstore"
	"skiff/offsets"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// target is a Target over a log of its own, led by nobody: its high watermark
// is its log end.
type target struct {
	l         *logstore.Log
	db        *offsets.DB
	mu        sync.Mutex // guards cfg against the cleaner's threads
	cfg       Config
	producers map[int64]int64 // producer id -> last offset of its last batch
}

func (t *target) Name() string       { return "test-0" }
func (t *target) Log() *logstore.Log { return t.l }
func (t *target) CompactionConfig() Config {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cfg
}
func (t *target) HighWatermark() int64                 { return t.l.LogEndOffset() }
func (t *target) LastProducerOffsets() map[int64]int64 { return t.producers }

// segmentBytes of the test logs: a few dozen small batches each.
const segmentBytes = 4 << 10

// newTarget opens a log in a fresh directory with a Pebble index, closed with
// the test.
func newTarget(t testing.TB, cfg Config) *target { return newTargetSized(t, cfg, segmentBytes) }

// newTargetSized is newTarget with segments of segBytes.
func newTargetSized(t testing.TB, cfg Config, segBytes int64) *target {
	t.Helper()
	dir := t.TempDir()
	db, err := offsets.Open(filepath.Join(dir, "meta"), offsets.Options{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	l, err := logstore.Open(filepath.Join(dir, "test-0"), logstore.Config{SegmentBytes: segBytes, IndexIntervalBytes: 512}, db.LogIndex("test-0"))
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{l: l, db: db, cfg: cfg, producers: map[int64]int64{}}
	t.Cleanup(func() {
		if err := errors.Join(tg.l.Close(), db.Close()); err != nil {
			t.Error(err)
		}
	})
	return tg
}

// reopen closes the log and opens it again, as a restart does; with freshIndex
// its index data is lost, so that every segment is read and checked.
func (t *target) reopen(tb testing.TB, freshIndex bool) {
	tb.Helper()
	if err := t.l.Close(); err != nil {
		tb.Fatal(err)
	}
	key := "test-0"
	if freshIndex {
		key = fmt.Sprintf("fresh-%d", time.Now().UnixNano())
	}
	l, err := logstore.Open(t.l.Dir(), logstore.Config{SegmentBytes: segmentBytes, IndexIntervalBytes: 512}, t.db.LogIndex(key))
	if err != nil {
		tb.Fatal(err)
	}
	t.l = l
}

// written is one record as produced, at its offset.
type written struct {
	key, value []byte // nil value: a tombstone
	offset     int64
}

// history is everything produced to a target, in offset order.
type history []written

// final returns the last record of each key.
func (h history) final() map[string]written {
	m := make(map[string]written)
	for _, w := range h {
		m[string(w.key)] = w
	}
	return m
}

// produce appends one batch of kvs compressed with codec, stamped ts, as
// producer p, and records it in h.
func (t *target) produce(tb testing.TB, h *history, p batchtest.Producer, ts int64, codec compress.Codec, kvs ...batchtest.KV) {
	tb.Helper()
	b := batchtest.Keyed(p, ts, codec, codec == compress.Snappy && ts%2 == 0, kvs...)
	base, err := t.l.Append(b, 1)
	if err != nil {
		tb.Fatal(err)
	}
	for i, kv := range kvs {
		*h = append(*h, written{key: kv.Key, value: kv.Value, offset: base + int64(i)})
	}
	if p.ID >= 0 {
		t.producers[p.ID] = base + int64(len(kvs)) - 1
	}
}

// seal syncs the log, so that every segment but the active one is sealed.
func (t *target) seal(tb testing.TB) {
	tb.Helper()
	if err := t.l.Sync(); err != nil {
		tb.Fatal(err)
	}
}

// pass runs one compaction pass as a cleaner thread would, if the log is due.
func (t *target) pass(tb testing.TB, w *worker, now time.Time) (passStats, bool) {
	tb.Helper()
	return passOver(tb, t, t, w, now)
}

// passOver is pass over as, the Target the cleaner sees of t.
func passOver(tb testing.TB, t *target, as Target, w *worker, now time.Time) (passStats, bool) {
	tb.Helper()
	sp := planSpan(t.l.Segments(), t.l.LogStartOffset(), t.l.CleanerPoint(), as.HighWatermark(), t.cfg, now)
	horizon, err := earliestHorizon(t.l)
	if err != nil {
		tb.Fatal(err)
	}
	if !sp.due(t.cfg, horizon, now) {
		return passStats{}, false
	}
	st, err := w.clean(context.Background(), as, sp, now)
	if errors.Is(err, errNothing) {
		return st, false
	}
	if err != nil {
		tb.Fatalf("compaction pass: %v", err)
	}
	return st, true
}

func newWorker(mapBytes int64) *worker {
	return &worker{m: newOffsetMap(mapBytes), throttle: newThrottle(0)}
}

// readRecords reads the log from offset 0 as a consumer would and returns its
// records, checking that offsets only grow and every batch is valid.
func readRecords(tb testing.TB, l *logstore.Log) ([]written, []batch.Header) {
	tb.Helper()
	s, err := l.Read(l.LogStartOffset(), math.MaxInt64, math.MaxInt64)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = s.WriteTo(&buf)
	s.Release()
	if err != nil {
		tb.Fatal(err)
	}
	var out []written
	var hs []batch.Header
	last := int64(-1)
	if err := batch.Split(buf.Bytes(), func(h batch.Header, raw []byte) error {
		if h.BaseOffset <= last {
			return fmt.Errorf("batch at %d after offset %d", h.BaseOffset, last)
		}
		hs = append(hs, h)
		err := batch.Records(raw, func(r batch.Record) error {
			if r.Offset <= last || r.Offset > h.LastOffset() {
				return fmt.Errorf("record at %d after %d, batch %d..%d", r.Offset, last, h.BaseOffset, h.LastOffset())
			}
			last = r.Offset
			out = append(out, written{key: bytes.Clone(r.Key), value: bytes.Clone(r.Value), offset: r.Offset})
			if r.Value != nil && len(r.Value) == 0 {
				out[len(out)-1].value = []byte{}
			}
			return nil
		})
		last = h.LastOffset()
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	return out, hs
}

// checkCompacted verifies Kafka's guarantees on what a consumer from offset 0
// reads: every record is one produced at that offset; the last record of each
// key is its final one (a deleted key may also be absent, once its tombstone
// went: tombstonesGone says it must be); below the cleaner point no key appears
// twice.
func checkCompacted(tb testing.TB, t *target, h history, tombstonesGone bool) []written {
	tb.Helper()
	got, _ := readRecords(tb, t.l)
	produced := make(map[int64]written, len(h))
	for _, w := range h {
		produced[w.offset] = w
	}
	lastOf := make(map[string]written)
	seenClean := make(map[string]bool)
	cp := t.l.CleanerPoint()
	for _, g := range got {
		p, ok := produced[g.offset]
		if !ok || !bytes.Equal(p.key, g.key) || !bytes.Equal(p.value, g.value) || (p.value == nil) != (g.value == nil) {
			tb.Fatalf("offset %d reads %q=%q, produced %q=%q", g.offset, g.key, g.value, p.key, p.value)
		}
		lastOf[string(g.key)] = g
		if g.offset < cp {
			if seenClean[string(g.key)] {
				tb.Fatalf("key %q appears twice below the cleaner point %d", g.key, cp)
			}
			seenClean[string(g.key)] = true
		}
	}
	for k, f := range h.final() {
		g, ok := lastOf[k]
		switch {
		case f.value == nil && !ok:
		case f.value == nil && tombstonesGone:
			tb.Fatalf("key %q: its tombstone at %d is still read (at %d)", k, f.offset, g.offset)
		case !ok || g.offset != f.offset:
			tb.Fatalf("key %q: a consumer ends at offset %d (%v), want the final record at %d", k, g.offset, ok, f.offset)
		}
	}
	return got
}

// fill produces rounds of overwrites of keys (one batch per round and codec
// pick), deleting every seventh key in the last round, and seals the log.
func fill(tb testing.TB, t *target, h *history, rng *rand.Rand, keys, rounds int, codecs []compress.Codec, ts int64) {
	tb.Helper()
	for round := range rounds {
		for start := 0; start < keys; start += 10 {
			var kvs []batchtest.KV
			for k := start; k < min(start+10, keys); k++ {
				kv := batchtest.KV{Key: fmt.Appendf(nil, "key-%03d", k), Value: fmt.Appendf(nil, "v%d-%d-%s", round, k, randText(rng, rng.IntN(60)))}
				if round == rounds-1 && k%7 == 0 {
					kv.Value = nil
				}
				kvs = append(kvs, kv)
			}
			rng.Shuffle(len(kvs), func(i, j int) { kvs[i], kvs[j] = kvs[j], kvs[i] })
			t.produce(tb, h, batchtest.Plain, ts, codecs[rng.IntN(len(codecs))], kvs...)
		}
	}
	t.seal(tb)
}

// randText returns n random letters: values that compress only a little.
func randText(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return b
}

// rollPast produces filler (one key, overwritten) until offset is in a sealed
// segment.
func (t *target) rollPast(tb testing.TB, h *history, offset int64, ts int64) {
	tb.Helper()
	for {
		segs := t.l.Segments()
		if segs[len(segs)-1].Base > offset {
			break
		}
		t.produce(tb, h, batchtest.Plain, ts, compress.None, batchtest.KV{Key: []byte("filler"), Value: bytes.Repeat([]byte("f"), 500)})
	}
	t.seal(tb)
}

// sealedBytes is the size of the sealed segments.
func sealedBytes(segs []logstore.SegmentInfo) int64 {
	var n int64
	for _, s := range segs {
		if s.Sealed {
			n += s.Size
		}
	}
	return n
}

var allCodecs = []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd}

func sealedCount(segs []logstore.SegmentInfo) int {
	return slices.IndexFunc(segs, func(s logstore.SegmentInfo) bool { return !s.Sealed })
}
