package compaction

import (
	"encoding/binary"
	"testing"
	"time"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
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
