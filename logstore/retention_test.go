package logstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"skiff/internal/batch"
	"skiff/logstore"
)

func timeZero() time.Time { return time.UnixMilli(0) }

func TestRetentionByTime(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		dir := t.TempDir()
		cfg := smallCfg()
		cfg.RetentionMs = 10_000
		l := openLog(t, dir, cfg, env.Index())
		rng := rand.New(rand.NewPCG(21, 22))
		want := appendN(t, l, rng, 100, 5, 1_000_000) // timestamps 999_500 .. ~1_010_000
		files := segmentFiles(t, dir)
		if len(files) < 4 {
			t.Fatalf("%d segments", len(files))
		}
		// Nothing is older than now-retention yet.
		if n, err := l.ApplyRetention(time.UnixMilli(1_000_000)); err != nil || n != 0 {
			t.Fatalf("ApplyRetention early = %d, %v", n, err)
		}
		// The first segments' max timestamps are below 1_004_000.
		now := time.UnixMilli(1_004_000 + 10_000)
		n, err := l.ApplyRetention(now)
		if err != nil || n == 0 {
			t.Fatalf("ApplyRetention = %d, %v", n, err)
		}
		start := l.LogStartOffset()
		if got := len(segmentFiles(t, dir)); got != len(files)-n {
			t.Fatalf("%d files after deleting %d of %d", got, n, len(files))
		}
		for _, a := range want {
			if a.next <= start && a.maxTs >= 1_004_000 {
				t.Fatalf("batch %d (maxTs %d) deleted though not expired", a.base, a.maxTs)
			}
		}
		checkLog(t, l, want)
		closeLog(t, l)
		l = openLog(t, dir, cfg, env.Index())
		if l.LogStartOffset() != start {
			t.Fatalf("log start offset after reopen %d, want %d", l.LogStartOffset(), start)
		}
		checkLog(t, l, want)

		// Everything expired: the active segment is rolled and deleted too.
		end := l.LogEndOffset()
		if _, err := l.ApplyRetention(time.UnixMilli(2_000_000)); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != end || l.LogEndOffset() != end || l.Size() != 0 {
			t.Fatalf("all expired: start %d end %d size %d, want start=end=%d size 0", l.LogStartOffset(), l.LogEndOffset(), l.Size(), end)
		}
		if files := segmentFiles(t, dir); len(files) != 1 {
			t.Fatalf("files after all expired: %v", files)
		}
		more := appendN(t, l, rng, 5, 2, 3_000_000)
		if more[0].base != end {
			t.Fatalf("append after full expiry got offset %d, want %d", more[0].base, end)
		}
		closeLog(t, l)
		l = openLog(t, dir, cfg, env.Index())
		defer closeLog(t, l)
		if l.LogStartOffset() != end {
			t.Fatalf("log start offset after reopen %d, want %d", l.LogStartOffset(), end)
		}
		checkLog(t, l, more)
	})
}

func TestRetentionBySize(t *testing.T) {
	dir := t.TempDir()
	cfg := smallCfg()
	cfg.RetentionBytes = 40 << 10
	l := openLog(t, dir, cfg, logstore.NewMemIndex())
	defer closeLog(t, l)
	want := appendN(t, l, rand.New(rand.NewPCG(23, 24)), 150, 5, 1)
	before := l.Size()
	n, err := l.ApplyRetention(time.Now())
	if err != nil || n == 0 {
		t.Fatalf("ApplyRetention = %d, %v", n, err)
	}
	if l.Size() < cfg.RetentionBytes {
		t.Fatalf("size %d fell below retention.bytes %d (Kafka keeps at least that much)", l.Size(), cfg.RetentionBytes)
	}
	if l.Size() >= before {
		t.Fatal("nothing deleted")
	}
	// One more segment deleted would go below the limit: a second pass deletes nothing.
	if n, err := l.ApplyRetention(time.Now()); err != nil || n != 0 {
		t.Fatalf("second ApplyRetention = %d, %v", n, err)
	}
	checkLog(t, l, want)
}

// TestSetConfig changes retention and segment size of a running log: the next
// retention pass and the next appends follow the new settings.
func TestSetConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := smallCfg()
	l := openLog(t, dir, cfg, logstore.NewMemIndex())
	rng := rand.New(rand.NewPCG(3, 4))
	want := appendN(t, l, rng, 60, 5, 1_000_000)
	files := len(segmentFiles(t, dir))
	if n, err := l.ApplyRetention(time.UnixMilli(5_000_000)); err != nil || n != 0 {
		t.Fatalf("retention -1 deleted %d segments: %v", n, err)
	}
	cfg.RetentionMs = 1000
	cfg.SegmentBytes = 1 << 30
	l.SetConfig(cfg)
	n, err := l.ApplyRetention(time.UnixMilli(5_000_000))
	if err != nil || n != files {
		t.Fatalf("after SetConfig retention deleted %d of %d segments: %v", n, files, err)
	}
	if start := l.LogStartOffset(); start != want[len(want)-1].next {
		t.Fatalf("log start %d, want the log end %d", start, want[len(want)-1].next)
	}
	// Segments of 1 GiB now: many more batches stay in one segment.
	appendN(t, l, rng, 60, 5, 6_000_000)
	if got := len(segmentFiles(t, dir)); got != 1 {
		t.Fatalf("%d segments after appending with segment.bytes 1 GiB, want 1", got)
	}
	closeLog(t, l)
}

// TestSegmentJitter: with segment.jitter.ms, segments roll by age before
// segment.ms, each by its own amount below the jitter.
func TestSegmentJitter(t *testing.T) {
	rolls := func(jitter int64) []int64 {
		dir := t.TempDir()
		cfg := logstore.Config{SegmentMs: 10_000, SegmentJitterMs: jitter, RetentionMs: -1}
		l := openLog(t, dir, cfg, logstore.NewMemIndex())
		defer closeLog(t, l)
		var ages []int64
		first := int64(-1)
		for ts := int64(0); ts < 100_000; ts += 100 {
			files := len(segmentFiles(t, dir))
			if _, err := l.Append(makeBatch(t, 1, 10, ts), 1); err != nil {
				t.Fatal(err)
			}
			if len(segmentFiles(t, dir)) > files && first >= 0 {
				ages = append(ages, ts-first)
			}
			if len(segmentFiles(t, dir)) > files || first < 0 {
				first = ts
			}
		}
		return ages
	}
	for _, age := range rolls(0) {
		if age != 10_100 {
			t.Fatalf("without jitter a segment rolled at age %d, want the first batch past 10000", age)
		}
	}
	ages := rolls(5_000)
	distinct := map[int64]bool{}
	for _, age := range ages {
		if age <= 5_000 || age > 10_100 {
			t.Fatalf("with jitter 5000 a segment rolled at age %d", age)
		}
		distinct[age] = true
	}
	if len(ages) < 9 || len(distinct) < 3 {
		t.Fatalf("rolls at ages %v: want several, at different ages", ages)
	}
}

// TestAdvanceLogStart moves the log start into the middle of a segment, as
// DeleteRecords does: reads below it fail, the segments wholly below it go at the
// next retention pass, the one holding it stays, and the new start survives a
// reopen (written durably).
func TestAdvanceLogStart(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		dir := t.TempDir()
		l := openLog(t, dir, smallCfg(), env.Index())
		want := appendN(t, l, rand.New(rand.NewPCG(5, 6)), 100, 5, 1_000_000)
		files := segmentFiles(t, dir)
		mid := want[len(want)/2]
		start := mid.base + (mid.next-mid.base)/2 // inside a batch, inside a segment
		if moved, err := l.AdvanceLogStart(start); err != nil || !moved {
			t.Fatalf("AdvanceLogStart(%d) = %v, %v", start, moved, err)
		}
		if m, ok := env.(*memEnv); ok && m.m.DurableWrites == 0 {
			t.Fatal("the new log start was not written durably")
		}
		if l.LogStartOffset() != start {
			t.Fatalf("log start %d, want %d", l.LogStartOffset(), start)
		}
		if _, err := l.Read(start-1, 1<<20, l.LogEndOffset()); !errors.Is(err, logstore.ErrOffsetOutOfRange) {
			t.Fatalf("read below the new start: %v", err)
		}
		b, _ := readAll(t, l, start, 1<<20, l.LogEndOffset())
		if h, err := batch.ParseHeader(b); err != nil || h.BaseOffset != mid.base {
			t.Fatalf("read at the new start: first batch %+v, %v; want the one at %d holding %d", h, err, mid.base, start)
		}
		if off, _, ok, err := l.OffsetForTimestamp(0); err != nil || !ok || off != start {
			t.Fatalf("earliest by timestamp = %d %v %v, want the log start %d", off, ok, err, start)
		}
		for _, off := range []int64{start, start - 1, 0} {
			if moved, err := l.AdvanceLogStart(off); err != nil || moved {
				t.Fatalf("AdvanceLogStart(%d) at start %d = %v, %v; want nothing", off, start, moved, err)
			}
		}
		if _, err := l.AdvanceLogStart(l.LogEndOffset() + 1); !errors.Is(err, logstore.ErrOffsetOutOfRange) {
			t.Fatalf("past the log end: %v", err)
		}
		if n, err := l.ApplyRetention(time.UnixMilli(1_000_000)); err != nil || n == 0 {
			t.Fatalf("retention deleted %d segments below the start: %v", n, err)
		}
		left := segmentFiles(t, dir)
		if len(left) >= len(files) || l.LogStartOffset() != start {
			t.Fatalf("%d of %d segments left, log start %d", len(left), len(files), l.LogStartOffset())
		}
		if first := filepath.Base(left[0]); first > fmt.Sprintf("%020d.log", start) {
			t.Fatalf("the segment holding the start is gone: first file %s, start %d", first, start)
		}
		closeLog(t, l)
		l = openLog(t, dir, smallCfg(), env.Index())
		if l.LogStartOffset() != start {
			t.Fatalf("log start after reopen %d, want %d", l.LogStartOffset(), start)
		}
		// Everything deleted: the start reaches the log end, and retention empties the log.
		end := l.LogEndOffset()
		if moved, err := l.AdvanceLogStart(end); err != nil || !moved {
			t.Fatalf("AdvanceLogStart(end) = %v, %v", moved, err)
		}
		if _, err := l.ApplyRetention(time.UnixMilli(1_000_000)); err != nil {
			t.Fatal(err)
		}
		if l.Size() != 0 || l.LogStartOffset() != end || len(segmentFiles(t, dir)) != 1 {
			t.Fatalf("after deleting everything: size %d, start %d, %d files", l.Size(), l.LogStartOffset(), len(segmentFiles(t, dir)))
		}
		closeLog(t, l)
	})
}
