package compaction

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"skiff/internal/compress"
	"skiff/internal/crashfs"
	"skiff/logstore"
	"skiff/offsets"
)

// crashTarget is a target on a crash-test filesystem, with its Pebble index
// there too.
func crashTarget(t *testing.T, fs *crashfs.FS, cfg Config) (*target, func()) {
	t.Helper()
	db, err := offsets.Open("/data/meta", offsets.Options{FS: fs, CacheBytes: 1 << 20, MemTableBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	l, err := logstore.Open("/data/test-0", logstore.Config{SegmentBytes: segmentBytes, IndexIntervalBytes: 512, FS: fs}, db.LogIndex("test-0"))
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	tg := &target{l: l, db: db, cfg: cfg, producers: map[int64]int64{}}
	return tg, func() {
		if err := errors.Join(tg.l.Close(), db.Close()); err != nil && !strings.Contains(err.Error(), "closed") {
			t.Error(err)
		}
	}
}

// TestCleanCrash crashes the machine at every filesystem operation of a
// compaction pass that rewrites several groups of segments (the rewrites, their
// swaps, the index writes), restarts it and opens the log and its index from
// what the disk kept: every record a consumer reads is one produced at that
// offset, every key ends at its final record, no deleted key comes back, and a
// second pass then completes the compaction.
func TestCleanCrash(t *testing.T) {
	cfg := compactCfg()
	cfg.SegmentBytes = 6 << 10 // several groups
	build := func(seed uint64) (*crashfs.FS, *target, func(), history, time.Time) {
		fs, err := crashfs.NewWithDir(seed, "/data")
		if err != nil {
			t.Fatal(err)
		}
		tg, closeAll := crashTarget(t, fs, cfg)
		var h history
		now := time.UnixMilli(1_700_000_000_000)
		fill(t, tg, &h, rand.New(rand.NewPCG(9, 9)), 50, 8, []compress.Codec{compress.None, compress.Snappy, compress.Zstd}, now.UnixMilli())
		return fs, tg, closeAll, h, now
	}
	fs, tg, closeAll, _, now := build(1)
	ops0 := fs.Ops()
	st, ok := tg.pass(t, newWorker(1<<20), now)
	ops := fs.Ops() - ops0
	closeAll()
	if !ok || st.files < 2 {
		t.Fatalf("the pass rewrote %d groups (%v); want several", st.files, ok)
	}

	for k := 1; k <= ops+2; k++ {
		fs, tg, closeAll, h, now := build(uint64(k))
		fs.CrashAt(k, nil)
		tg.pass(t, newWorker(1<<20), now)
		closeAll()
		img := fs.Restart()
		rt, closeRt := crashTarget(t, img, cfg)
		checkCompacted(t, rt, h, false)
		names, err := img.List("/data/test-0")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, ".cleaned") || strings.HasSuffix(n, ".swap") {
				t.Fatalf("crash at operation %d of %d: %s left after recovery", k, ops, n)
			}
		}
		rt.pass(t, newWorker(1<<20), now)
		checkCompacted(t, rt, h, false)
		closeRt()
	}
	t.Logf("crashed at each of %d operations of a pass of %d groups", ops, st.files)
}
