package logstore_test

import (
	"math/rand/v2"
	"testing"
	"time"

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
