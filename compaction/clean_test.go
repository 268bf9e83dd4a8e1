package compaction

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
)

func compactCfg() Config {
	return Config{Compact: true, MinCleanableRatio: DefaultMinCleanableRatio, DeleteRetention: time.Hour, SegmentBytes: 16 << 10}
}

// TestCompactionSemantics, with each codec and with all of them mixed in one
// partition: a consumer from offset 0 sees the final value of every key, offsets
// only grow, batches keep their offsets (records are read at the offsets they
// were produced at), small segments are merged, a tombstone is kept until
// delete.retention.ms after the pass that first kept it and then goes with
// every record of its key, and appends in between are compacted by later
// passes.
func TestCompactionSemantics(t *testing.T) {
	cases := map[string][]compress.Codec{"mixed": allCodecs}
	for _, c := range allCodecs {
		cases[c.String()] = []compress.Codec{c}
	}
	for name, codecs := range cases {
		t.Run(name, func(t *testing.T) {
			tg := newTarget(t, compactCfg())
			var h history
			rng := rand.New(rand.NewPCG(1, uint64(len(name))))
			now := time.Now()
			fill(t, tg, &h, rng, 60, 8, codecs, now.UnixMilli())
			sizeBefore, segsBefore := sealedBytes(tg.l.Segments()), sealedCount(tg.l.Segments())
			w := newWorker(1 << 20)
			st, ok := tg.pass(t, w, now)
			if !ok {
				t.Fatal("a log written 8 times over is not due")
			}
			got := checkCompacted(t, tg, h, false)
			if after := sealedBytes(tg.l.Segments()); after >= sizeBefore/3 || sealedCount(tg.l.Segments()) >= segsBefore {
				t.Fatalf("sealed bytes %d -> %d, sealed segments %d -> %d: not compacted", sizeBefore, after, segsBefore, sealedCount(tg.l.Segments()))
			}
			if st.recordsOut >= st.recordsIn || st.endOffset != tg.l.CleanerPoint() {
				t.Fatalf("pass stats %+v", st)
			}
			if len(got) > 60+10*12 { // the keys, plus what the active segment holds at most
				t.Fatalf("%d records left", len(got))
			}

			// More overwrites; keys deleted now get their horizon from a pass
			// with a short delete.retention.ms.
			fill(t, tg, &h, rng, 60, 4, codecs, now.UnixMilli())
			tg.cfg.DeleteRetention = time.Minute
			tg.pass(t, w, now.Add(time.Second))
			checkCompacted(t, tg, h, false)
			// Before the horizon the tombstones stay; after it they go.
			tg.pass(t, w, now.Add(30*time.Second))
			checkCompacted(t, tg, h, false)
			tg.cfg.MinCleanableRatio = 0 // passes for the horizon only
			tg.rollPast(t, &h, h[len(h)-1].offset, now.UnixMilli())
			tg.pass(t, w, now.Add(time.Second)) // every tombstone gets its horizon
			later := now.Add(2 * time.Hour)
			for range 3 {
				tg.pass(t, w, later)
			}
			got = checkCompacted(t, tg, h, true)
			for _, g := range got {
				if g.offset < tg.l.CleanerPoint() && g.value == nil {
					t.Fatalf("tombstone of %q at %d kept past its horizon", g.key, g.offset)
				}
			}
		})
	}
}

// TestMinCompactionLag: records younger than min.compaction.lag.ms are never
// compacted; once old enough they are.
func TestMinCompactionLag(t *testing.T) {
	cfg := compactCfg()
	cfg.MinLag = time.Hour
	tg := newTarget(t, cfg)
	var h history
	now := time.Now()
	fill(t, tg, &h, rand.New(rand.NewPCG(2, 2)), 40, 6, []compress.Codec{compress.LZ4}, now.UnixMilli())
	before, _ := readRecords(t, tg.l)
	w := newWorker(1 << 20)
	if _, ok := tg.pass(t, w, now.Add(59*time.Minute)); ok {
		t.Fatal("records younger than the minimum lag were compacted")
	}
	if after, _ := readRecords(t, tg.l); len(after) != len(before) || len(before) != len(h) {
		t.Fatalf("%d records before, %d after, %d produced", len(before), len(after), len(h))
	}
	if _, ok := tg.pass(t, w, now.Add(61*time.Minute)); !ok {
		t.Fatal("records older than the minimum lag not compacted")
	}
	checkCompacted(t, tg, h, false)
}

// TestMaxCompactionLag: a log below its dirty ratio is compacted anyway once
// its oldest record not yet compacted is older than max.compaction.lag.ms.
func TestMaxCompactionLag(t *testing.T) {
	cfg := compactCfg()
	cfg.MinCleanableRatio = 1 // never by ratio alone... (1.0 is reached only with nothing clean)
	tg := newTarget(t, cfg)
	var h history
	now := time.Now()
	fill(t, tg, &h, rand.New(rand.NewPCG(3, 3)), 40, 6, []compress.Codec{compress.None}, now.UnixMilli())
	w := newWorker(1 << 20)
	tg.pass(t, w, now) // the first pass: everything was dirty
	fill(t, tg, &h, rand.New(rand.NewPCG(3, 4)), 40, 1, []compress.Codec{compress.None}, now.UnixMilli())
	tg.rollPast(t, &h, h[len(h)-1].offset, now.UnixMilli())
	// (Before the tombstones' delete horizon, an hour after the first pass,
	// which would make the log due too.)
	if _, ok := tg.pass(t, w, now.Add(50*time.Minute)); ok {
		t.Fatal("compacted below the ratio without a maximum lag")
	}
	tg.cfg.MaxLag = 30 * time.Minute
	if _, ok := tg.pass(t, w, now.Add(50*time.Minute)); !ok {
		t.Fatal("not compacted past the maximum lag")
	}
	checkCompacted(t, tg, h, false)
}

// TestSmallKeyMap: a key map smaller than the keys of the dirty part compacts
// the log over several passes, each covering a prefix, with the same result.
func TestSmallKeyMap(t *testing.T) {
	tg := newTarget(t, compactCfg())
	var h history
	now := time.Now()
	fill(t, tg, &h, rand.New(rand.NewPCG(4, 4)), 2000, 3, []compress.Codec{compress.Zstd, compress.None}, now.UnixMilli())
	w := newWorker(1) // the smallest map: 1,024 slots, 921 keys
	passes := 0
	for {
		st, ok := tg.pass(t, w, now)
		if !ok {
			break
		}
		passes++
		if passes > 20 || st.endOffset == 0 {
			t.Fatalf("pass %d: %+v", passes, st)
		}
	}
	if passes < 3 {
		t.Fatalf("%d passes for 2000 keys and a map of 921", passes)
	}
	checkCompacted(t, tg, h, false)
}

// TestProducerState: compaction keeps, emptied, the batch holding the last
// sequence of each idempotent producer (with its producer id, epoch, base
// sequence and offsets), drops its earlier batches, and drops the last one too
// once the producer has been silent for ProducerIDExpiration.
func TestProducerState(t *testing.T) {
	tg := newTarget(t, compactCfg())
	var h history
	now := time.Now()
	ts := now.UnixMilli()
	kv := func(k, v string) batchtest.KV { return batchtest.KV{Key: []byte(k), Value: []byte(v)} }
	p := batchtest.Producer{ID: 77, Epoch: 3, Sequence: 0}
	tg.produce(t, &h, p, ts, compress.Snappy, kv("a", "1"), kv("b", "1"))
	p.Sequence = 2
	tg.produce(t, &h, p, ts, compress.Snappy, kv("a", "2"), kv("c", "2"), kv("d", "2"))
	last := tg.producers[77]
	fill(t, tg, &h, rand.New(rand.NewPCG(5, 5)), 30, 3, []compress.Codec{compress.None}, ts) // no key of a..d
	for _, k := range []string{"a", "b", "c", "d"} {
		tg.produce(t, &h, batchtest.Plain, ts, compress.None, kv(k, "final"))
	}
	tg.rollPast(t, &h, h[len(h)-1].offset, ts)
	w := newWorker(1 << 20)
	tg.pass(t, w, now)
	checkCompacted(t, tg, h, false)
	var empty []batch.Header
	_, hs := readRecords(t, tg.l)
	for _, bh := range hs {
		if bh.ProducerID == 77 {
			empty = append(empty, bh)
		}
	}
	if len(empty) != 1 || empty[0].RecordCount != 0 || empty[0].LastOffset() != last || empty[0].ProducerEpoch != 3 ||
		empty[0].BaseSequence != 2 || empty[0].LastSequence() != 4 {
		t.Fatalf("batches of producer 77 after compaction: %+v (its last batch ends at %d)", empty, last)
	}
	// Idle past the expiration: the empty batch goes at the next pass.
	tg.rollPast(t, &h, tg.l.LogEndOffset(), ts) // something dirty, for a pass
	if _, ok := tg.pass(t, w, now.Add(ProducerIDExpiration+time.Hour)); !ok {
		t.Fatal("no pass")
	}
	_, hs = readRecords(t, tg.l)
	for _, bh := range hs {
		if bh.ProducerID == 77 {
			t.Fatalf("the batch of a producer silent past the expiration is kept: %+v", bh)
		}
	}
}

// TestRewrittenSegmentsTile: after passes, every sealed segment ends where the
// next begins (the last batch of each rewritten run is kept, emptied if need
// be), and a restart opens the log as it was.
func TestRewrittenSegmentsTile(t *testing.T) {
	tg := newTarget(t, compactCfg())
	var h history
	now := time.Now()
	fill(t, tg, &h, rand.New(rand.NewPCG(6, 6)), 25, 20, []compress.Codec{compress.Gzip}, now.UnixMilli())
	w := newWorker(1 << 20)
	tg.pass(t, w, now)
	segs := tg.l.Segments()
	for i := 1; i < len(segs); i++ {
		if segs[i].Base != segs[i-1].Next {
			t.Fatalf("segment %d ends at %d, the next begins at %d", segs[i-1].Base, segs[i-1].Next, segs[i].Base)
		}
	}
	before, _ := readRecords(t, tg.l)
	for _, fresh := range []bool{false, true} {
		tg.reopen(t, fresh)
		after, _ := readRecords(t, tg.l)
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("the log reads differently after a restart (index lost: %v)", fresh)
		}
	}
}
