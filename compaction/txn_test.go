package compaction

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
	"skiff/logstore"
)

// txnTarget is a target whose log holds transactions: aborted ones, and an
// open one from stable on (its high watermark, as a partition's last stable
// offset would be).
type txnTarget struct {
	*target
	aborted []AbortedTxn
	stable  int64 // -1: none open
}

func (t *txnTarget) AbortedTxns(from, to int64) []AbortedTxn { return t.aborted }
func (t *txnTarget) ForgetAbortedTxns(txns []AbortedTxn) {
	t.aborted = slices.DeleteFunc(t.aborted, func(a AbortedTxn) bool { return slices.Contains(txns, a) })
}
func (t *txnTarget) HighWatermark() int64 {
	if t.stable >= 0 {
		return t.stable
	}
	return t.target.HighWatermark()
}

func (t *txnTarget) pass(tb testing.TB, w *worker, now time.Time) (passStats, bool) {
	tb.Helper()
	return passOver(tb, t.target, t, w, now)
}

// appendTxn appends a transactional batch of kvs by producer pid.
func (t *txnTarget) appendTxn(tb testing.TB, pid int64, seq int32, ts int64, kvs ...batchtest.KV) int64 {
	tb.Helper()
	b := batchtest.Keyed(batchtest.Producer{ID: pid, Sequence: seq}, ts, compress.None, false, kvs...)
	b[22] |= batch.AttrTransactional
	binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
	base, err := t.l.Append(b, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return base
}

// TestTransactionsCompacted: the records of an aborted transaction never
// replace a committed value of their key and are dropped, markers stay, and
// nothing from an open transaction's first record on is compacted.
func TestTransactionsCompacted(t *testing.T) {
	tg := &txnTarget{target: newTarget(t, compactCfg()), stable: -1}
	now := time.Now()
	ts := now.UnixMilli()
	var h history
	k := func(s string) []byte { return []byte(s) }
	tg.produce(t, &h, batchtest.Plain, ts, compress.None, batchtest.KV{Key: k("a"), Value: k("committed")})
	first := tg.appendTxn(t, 7, 0, ts, batchtest.KV{Key: k("a"), Value: k("aborted")}, batchtest.KV{Key: k("b"), Value: k("aborted")})
	marker, err := tg.l.Append(batch.BuildControl(ts, 7, 0, false, 0), 1)
	if err != nil {
		t.Fatal(err)
	}
	tg.aborted = []AbortedTxn{{ProducerID: 7, FirstOffset: first, LastOffset: marker}}
	tg.rollPast(t, &h, marker, ts)
	w := newWorker(1 << 20)
	tg.cfg.MinCleanableRatio = 0
	if _, ok := tg.pass(t, w, now.Add(time.Second)); !ok {
		t.Fatal("no pass")
	}
	got, hs := readRecords(t, tg.l)
	values := map[string]string{}
	for _, r := range got {
		values[string(r.key)] = string(r.value)
	}
	if values["a"] != "committed" || values["b"] != "" {
		t.Fatalf("after compaction a=%q b=%q, want the committed a and no b", values["a"], values["b"])
	}
	markers := 0
	for _, bh := range hs {
		if bh.Control() {
			markers++
		}
	}
	if markers != 1 {
		t.Fatalf("%d markers after compaction, want 1", markers)
	}

	// An open transaction: nothing from its first record on is compacted.
	open := tg.appendTxn(t, 8, 0, ts, batchtest.KV{Key: k("a"), Value: k("open")})
	tg.stable = open
	tg.rollPast(t, &h, open, ts)
	tg.pass(t, w, now.Add(2*time.Second))
	got, _ = readRecords(t, tg.l)
	openSeen := false
	for _, r := range got {
		openSeen = openSeen || string(r.value) == "open"
		if r.offset >= open && tg.l.CleanerPoint() > open {
			t.Fatalf("cleaner point %d past the open transaction at %d", tg.l.CleanerPoint(), open)
		}
	}
	if !openSeen || values["a"] != "committed" {
		t.Fatal("the open transaction's record is gone")
	}
}

// readCommitted reads the log from its start as a read_committed consumer does
// (Kafka's CompletedFetch): told of aborted transactions, it skips a producer's
// transactional records from an aborted transaction's first offset until that
// producer's abort marker. It returns the records read and the markers left,
// with records and with a delete horizon.
func readCommitted(tb testing.TB, l *logstore.Log, aborted []AbortedTxn) (got []written, markers, horizons int) {
	tb.Helper()
	_, hs := readRecords(tb, l) // checks offsets and batches
	pending := slices.Clone(aborted)
	slices.SortFunc(pending, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	skipping := map[int64]bool{}
	for _, h := range hs {
		for len(pending) > 0 && pending[0].FirstOffset <= h.LastOffset() {
			skipping[pending[0].ProducerID] = true
			pending = pending[1:]
		}
		raw := readBatch(tb, l, h)
		if h.Control() {
			if h.RecordCount > 0 {
				markers++
				if _, ok := h.DeleteHorizon(); ok {
					horizons++
				}
				if typ, err := batch.ControlType(raw); err != nil {
					tb.Fatal(err)
				} else if typ == batch.ControlAbort {
					delete(skipping, h.ProducerID)
				}
			}
			continue
		}
		if h.Transactional() && skipping[h.ProducerID] {
			continue
		}
		if err := batch.Records(raw, func(r batch.Record) error {
			got = append(got, written{key: bytes.Clone(r.Key), value: bytes.Clone(r.Value), offset: r.Offset})
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
	return got, markers, horizons
}

// readBatch returns the batch of l that h heads.
func readBatch(tb testing.TB, l *logstore.Log, h batch.Header) []byte {
	tb.Helper()
	s, err := l.Read(h.BaseOffset, h.Size(), h.NextOffset())
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Release()
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()[:h.Size()]
}

// TestTxnMarkersRemoved: a transaction's marker stays while any batch of its
// transaction does; the pass after its last records went gives it a delete
// horizon and forgets the aborted transaction; the first pass after the horizon
// removes it. A read_committed reader sees the committed records, and only
// them, at every step, including a later committed transaction of the producer
// whose aborted transaction's marker went.
func TestTxnMarkersRemoved(t *testing.T) {
	cfg := compactCfg()
	cfg.MinCleanableRatio = 0
	tg := &txnTarget{target: newTarget(t, cfg), stable: -1}
	now := time.Now()
	ts := now.UnixMilli()
	var h history
	k := func(s string) []byte { return []byte(s) }
	marker := func(pid int64, commit bool) int64 {
		t.Helper()
		off, err := tg.l.Append(batch.BuildControl(ts, pid, 0, commit, 0), 1)
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	// Producer 7 commits a and b, which plain records replace later; producer 8
	// aborts a and c, then commits e; producer 9 commits d.
	tg.appendTxn(t, 7, 0, ts, batchtest.KV{Key: k("a"), Value: k("c7")}, batchtest.KV{Key: k("b"), Value: k("c7")})
	marker(7, true)
	first8 := tg.appendTxn(t, 8, 0, ts, batchtest.KV{Key: k("a"), Value: k("x8")}, batchtest.KV{Key: k("c"), Value: k("x8")})
	abort8 := marker(8, false)
	tg.aborted = []AbortedTxn{{ProducerID: 8, FirstOffset: first8, LastOffset: abort8}}
	tg.appendTxn(t, 8, 2, ts, batchtest.KV{Key: k("e"), Value: k("c8")})
	marker(8, true)
	tg.produce(t, &h, batchtest.Plain, ts, compress.None, batchtest.KV{Key: k("a"), Value: k("p")}, batchtest.KV{Key: k("b"), Value: k("p")})
	tg.appendTxn(t, 9, 0, ts, batchtest.KV{Key: k("d"), Value: k("c9")})
	last := marker(9, true)
	tg.rollPast(t, &h, last, ts)

	want := map[string]string{"a": "p", "b": "p", "d": "c9", "e": "c8", "filler": strings.Repeat("f", 500)}
	check := func(step string, wantMarkers, wantHorizons int) {
		t.Helper()
		got, markers, horizons := readCommitted(t, tg.l, tg.aborted)
		values := map[string]string{}
		for _, r := range got {
			if string(r.value) == "x8" {
				t.Fatalf("%s: read the aborted record %s at %d", step, r.key, r.offset)
			}
			values[string(r.key)] = string(r.value)
		}
		if !maps.Equal(values, want) {
			t.Fatalf("%s: read_committed reads %v, want %v", step, values, want)
		}
		if markers != wantMarkers || horizons != wantHorizons {
			t.Fatalf("%s: %d markers, %d with a delete horizon; want %d, %d", step, markers, horizons, wantMarkers, wantHorizons)
		}
	}
	check("before compaction", 4, 0)

	w := newWorker(1 << 20)
	if _, ok := tg.pass(t, w, now); !ok {
		t.Fatal("no first pass")
	}
	check("after the records went", 4, 0) // the pass read them: markers stay
	if len(tg.aborted) != 1 {
		t.Fatalf("aborted transactions after the first pass: %+v", tg.aborted)
	}

	tg.rollPast(t, &h, tg.l.LogEndOffset(), ts)
	st, ok := tg.pass(t, w, now.Add(time.Second))
	if !ok {
		t.Fatal("no second pass")
	}
	check("after the horizon was set", 4, 2)
	if len(tg.aborted) != 0 {
		t.Fatalf("aborted transactions after the second pass: %+v, want none", tg.aborted)
	}
	if wantHz := now.Add(time.Second + cfg.DeleteRetention).UnixMilli(); st.horizon != wantHz {
		t.Fatalf("pass horizon %d, want %d", st.horizon, wantHz)
	}

	if _, ok := tg.pass(t, w, now.Add(cfg.DeleteRetention)); ok {
		t.Fatal("a pass before the horizon, with nothing dirty")
	}
	if _, ok := tg.pass(t, w, now.Add(cfg.DeleteRetention+2*time.Second)); !ok {
		t.Fatal("no pass after the horizon")
	}
	check("after the horizon", 2, 0)
}
