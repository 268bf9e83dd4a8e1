package replication

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/compaction"
	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
	"skiff/offsets"
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
	must(p.WriteMarker(7, 0, false, 0, false)) // 4: abort producer 7
	if lso := p.LastStableOffset(); lso != 3 {
		t.Fatalf("LSO after the abort: %d, want 3", lso)
	}
	must(p.WriteMarker(8, 0, true, 0, false)) // 5: commit producer 8
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
	must(p.WriteMarker(7, 1, false, 0, false))
	_, err := p.WriteMarker(7, 0, false, 0, false)
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

// keyedTxnBatch is a transactional batch of producer pid at epoch 0 from
// sequence seq, of key/value pairs.
func keyedTxnBatch(pid int64, seq int32, kvs ...string) []byte {
	var recs []batchtest.KV
	for i := 0; i+1 < len(kvs); i += 2 {
		recs = append(recs, batchtest.KV{Key: []byte(kvs[i]), Value: []byte(kvs[i+1])})
	}
	b := batchtest.Keyed(batchtest.Producer{ID: pid, Sequence: seq}, time.Now().UnixMilli(), compress.None, false, recs...)
	b[22] |= batch.AttrTransactional
	binaryFixCRC(b)
	return b
}

// TestTxnMarkersCompacted: on a compacted topic, the log cleaner removes the
// markers of transactions whose records are all gone, once delete.retention.ms
// has passed, and the partition stops answering the aborted one to
// read_committed fetches; a later transaction of the same producer is
// unaffected, and when the partition opens again over the compacted log its
// last stable offset is its high watermark (no transaction is left open by a
// marker's removal).
func TestTxnMarkersCompacted(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Manager, *offsets.DB, *Partition) {
		db, err := offsets.Open(filepath.Join(dir, "meta"), offsets.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewManager(Config{Dir: filepath.Join(dir, "topics"), Store: func(key string) Store { return db.LogIndex(key) },
			Cleaner: compaction.CleanerConfig{Backoff: 20 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		s := spec("c", 1, 1)
		s.Config.Log.SegmentBytes = 1024
		s.Config.Compaction = compaction.Config{Compact: true, MinCleanableRatio: 0.01, DeleteRetention: 100 * time.Millisecond}
		if err := m.Apply(1, []TopicSpec{s}); err != nil {
			t.Fatal(err)
		}
		return m, db, m.Partition("c", 0)
	}
	m, db, p := open()
	must := func(res AppendResult, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return res.BaseOffset
	}
	appendOff := func(b []byte) int64 {
		t.Helper()
		res, err := p.Append(b, 1)
		if err != nil {
			t.Fatal(err)
		}
		return res.BaseOffset
	}
	// Producer 7 commits a, which a plain record replaces; producer 8 aborts b,
	// then commits c.
	appendOff(keyedTxnBatch(7, 0, "a", "c7"))
	commit7 := must(p.WriteMarker(7, 0, true, 0, false))
	appendOff(keyedTxnBatch(8, 0, "b", "x8"))
	abort8 := must(p.WriteMarker(8, 0, false, 0, false))
	appendOff(keyedTxnBatch(8, 1, "c", "c8"))
	commit8 := must(p.WriteMarker(8, 0, true, 0, false))
	appendOff(batchtest.Keyed(batchtest.Plain, time.Now().UnixMilli(), compress.None, false, batchtest.KV{Key: []byte("a"), Value: []byte("p")}))
	if got := p.AbortedTxns(0, p.HighWatermark()); len(got) != 1 {
		t.Fatalf("aborted before compaction: %+v", got)
	}

	// Filler keeps segments rolling and the log dirty until the cleaner is done.
	markersAt := func() map[int64]bool {
		t.Helper()
		s, err := p.Read(p.LogStartOffset(), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		_, err = s.WriteTo(&buf)
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]bool{}
		if err := batch.Split(buf.Bytes(), func(h batch.Header, _ []byte) error {
			if h.Control() && h.RecordCount > 0 {
				out[h.BaseOffset] = true
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	deadline := time.Now().Add(time.Minute)
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for ; ; <-poll.C {
		ms := markersAt()
		if !ms[commit7] && !ms[abort8] && len(p.AbortedTxns(0, p.HighWatermark())) == 0 {
			if !ms[commit8] {
				t.Fatal("the marker of a transaction whose record is the latest of its key went")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("markers left %v, aborted %+v", ms, p.AbortedTxns(0, p.HighWatermark()))
		}
		appendOff(batchtest.Keyed(batchtest.Plain, time.Now().UnixMilli(), compress.None, false,
			batchtest.KV{Key: []byte("filler"), Value: bytes.Repeat([]byte("f"), 300)}))
	}
	if st := storedAborted(t, p); len(st) != 0 {
		t.Fatalf("the cleaner forgot the aborted transaction, the Store still has %+v", st)
	}
	hw := p.HighWatermark()
	closeAll(t, m, db)

	m, db, p = open()
	defer closeAll(t, m, db)
	if lso := p.LastStableOffset(); lso != hw || p.HighWatermark() != hw {
		t.Fatalf("after reopening: LSO %d, HW %d; want both %d", lso, p.HighWatermark(), hw)
	}
	if got := p.AbortedTxns(0, hw); len(got) != 0 {
		t.Fatalf("aborted after reopening: %+v, want none", got)
	}
	// Producer 8 goes on where it was.
	appendOff(keyedTxnBatch(8, 2, "c", "c8'"))
	if open := p.OpenTxns(); len(open) != 1 || open[0].ProducerID != 8 {
		t.Fatalf("open transactions: %+v", open)
	}
}

// TestMarkerCoordinatorEpoch: a marker from an older coordinator epoch than the
// producer's latest marker is refused with TRANSACTION_COORDINATOR_FENCED (a
// late marker of a coordinator that lost its partition), before and after the
// partition is rebuilt from its log; the same or a newer epoch goes in, and
// Producers reports the latest.
func TestMarkerCoordinatorEpoch(t *testing.T) {
	dir := t.TempDir()
	m, db := newManager(t, dir)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	mustAppend := func(b []byte) {
		t.Helper()
		if _, err := p.Append(b, 1); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend(txnBatch(7, 0, 0, "a"))
	if _, err := p.WriteMarker(7, 0, false, 3, false); err != nil {
		t.Fatal(err)
	}
	mustAppend(txnBatch(7, 0, 1, "b"))
	_, err := p.WriteMarker(7, 0, true, 2, false)
	wantCode(t, "marker of an older coordinator", err, kerr.TransactionCoordinatorFenced)
	if ps := p.Producers(); len(ps) != 1 || ps[0].CoordinatorEpoch != 3 || ps[0].TxnStartOffset != 2 {
		t.Fatalf("producers: %+v, want producer 7 at coordinator epoch 3 with its transaction open at 2", ps)
	}
	closeAll(t, m, db)

	m, db = newManager(t, dir)
	defer closeAll(t, m, db)
	if err := m.Apply(2, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p = m.Partition("t", 0)
	_, err = p.WriteMarker(7, 0, true, 2, false)
	wantCode(t, "marker of an older coordinator after reopening", err, kerr.TransactionCoordinatorFenced)
	if _, err := p.WriteMarker(7, 0, true, 4, false); err != nil {
		t.Fatalf("marker of a newer coordinator: %v", err)
	}
	if lso, hw := p.LastStableOffset(), p.HighWatermark(); lso != hw {
		t.Fatalf("LSO %d, HW %d after the commit", lso, hw)
	}
	if ps := p.Producers(); len(ps) != 1 || ps[0].CoordinatorEpoch != 4 {
		t.Fatalf("producers: %+v, want coordinator epoch 4", ps)
	}
}

// TestAppendFromCoordinatorVerified: a coordinator's transactional batch verified
// before a marker of its producer was appended is refused (INVALID_TXN_STATE,
// nothing appended); verified after it, it opens the transaction, and a batch of
// the open transaction needs no verification.
func TestAppendFromCoordinatorVerified(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	offsets := func() []byte {
		return batch.BuildTransactional(time.Now().UnixMilli(), 7, 0, []batch.Record{{Key: []byte("k"), Value: []byte("v")}})
	}
	stale, needed := p.TxnVerification(7)
	if !needed {
		t.Fatal("no verification needed with no transaction open")
	}
	if _, err := p.WriteMarker(7, 0, true, 0, false); err != nil { // the transaction ends meanwhile
		t.Fatal(err)
	}
	end := p.LogEndOffset()
	_, err := p.AppendFromCoordinatorVerified(offsets(), stale)
	wantCode(t, "verified before the marker", err, kerr.InvalidTxnState)
	if got := p.LogEndOffset(); got != end {
		t.Fatalf("log end %d after a refused batch, want %d", got, end)
	}
	guard, _ := p.TxnVerification(7)
	if _, err := p.AppendFromCoordinatorVerified(offsets(), guard); err != nil {
		t.Fatalf("verified after the marker: %v", err)
	}
	if _, needed := p.TxnVerification(7); needed {
		t.Fatal("verification needed with the producer's transaction open")
	}
}
