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
