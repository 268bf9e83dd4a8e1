package logstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"skiff/internal/batch"
	"skiff/logstore"
)

// openFilesUnder counts this process's descriptors (/proc/self/fd) of files in
// dir, deleted ones included.
func openFilesUnder(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// cachedLog opens a log in a fresh directory whose sealed segment files share a
// cache of capacity files, appends count batches and syncs them.
func cachedLog(t *testing.T, capacity, count int, seed uint64) (*logstore.Log, *logstore.FileCache, string, []appended) {
	t.Helper()
	dir := t.TempDir()
	cache := logstore.NewFileCache(capacity)
	cfg := smallCfg()
	cfg.Files = cache
	l := openLog(t, dir, cfg, logstore.NewMemIndex())
	t.Cleanup(func() { closeLog(t, l) })
	want := appendN(t, l, rand.New(rand.NewPCG(seed, 5)), count, 5, 1_000)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := len(l.Segments()); n < 4*capacity {
		t.Fatalf("only %d segments for a cache of %d", n, capacity)
	}
	return l, cache, dir, want
}

// TestFileCacheBound: a log of many sealed segments read all over keeps at most
// the cache's capacity of idle files open, plus its active segment, counted
// both by the cache and by the process's descriptors; files were closed and
// opened again to serve the reads, and every read returned the right batches.
func TestFileCacheBound(t *testing.T) {
	l, cache, dir, want := cachedLog(t, 2, 400, 1)
	if got := openFilesUnder(t, dir); got > 3 {
		t.Fatalf("%d descriptors open under the log after appending, want at most 3 (cache 2 + active)", got)
	}
	rng := rand.New(rand.NewPCG(2, 3))
	for range 300 {
		a := want[rng.IntN(len(want))]
		got, _ := readAll(t, l, a.base, 1, math.MaxInt64)
		if !bytes.Equal(got, a.raw) {
			t.Fatalf("Read(%d) returned %d bytes, want its batch of %d", a.base, len(got), len(a.raw))
		}
		if n := cache.OpenFiles(); n > 3 {
			t.Fatalf("cache counts %d open files, want at most 3", n)
		}
	}
	if got := openFilesUnder(t, dir); got > 3 {
		t.Fatalf("%d descriptors open under the log, want at most 3", got)
	}
	if cache.Reopened() == 0 || cache.Evicted() == 0 {
		t.Fatalf("reopened %d, evicted %d: the reads never went past the cache", cache.Reopened(), cache.Evicted())
	}
	checkLog(t, l, want)
}

// TestEvictionWhileReading: a Slice over many segments holds their files open
// while other reads churn the cache (capacity 1); its bytes stay the same, and
// its files are closed (down to the cache's bound) once it is released.
func TestEvictionWhileReading(t *testing.T) {
	l, cache, dir, want := cachedLog(t, 1, 300, 4)
	segs := l.Segments()
	held, err := l.Read(0, math.MaxInt64, segs[3].Base) // the first three segments
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	var before bytes.Buffer
	if _, err := held.WriteTo(&before); err != nil {
		t.Fatal(err)
	}
	for _, a := range want {
		if a.base >= segs[3].Base {
			got, _ := readAll(t, l, a.base, 1, math.MaxInt64)
			if !bytes.Equal(got, a.raw) {
				t.Fatalf("Read(%d) returned the wrong bytes", a.base)
			}
		}
	}
	if cache.Evicted() == 0 {
		t.Fatal("no file was evicted")
	}
	if n := cache.OpenFiles(); n < 3 {
		t.Fatalf("cache counts %d open files while a Slice holds three", n)
	}
	var after bytes.Buffer
	if _, err := held.WriteTo(&after); err != nil {
		t.Fatalf("held slice unreadable after evictions: %v", err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) || before.Len() == 0 {
		t.Fatalf("held slice changed: %d then %d bytes", before.Len(), after.Len())
	}
	held.Release()
	if n, fds := cache.OpenFiles(), openFilesUnder(t, dir); n > 2 || fds > 2 {
		t.Fatalf("after Release: cache counts %d, process holds %d descriptors; want at most 2 (cache 1 + active)", n, fds)
	}
}

// TestRetiredFileHeldAcrossDeletion: a reader holding a segment's file keeps
// reading it after retention deleted it and other reads filled the cache; the
// deleted file's descriptor is closed when the reader lets go, and a segment
// that left the log is never opened again by name.
func TestRetiredFileHeldAcrossDeletion(t *testing.T) {
	l, cache, dir, want := cachedLog(t, 1, 300, 6)
	first := l.Segments()[0]
	held, err := l.Read(0, 1, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	l.SetConfig(logstore.Config{SegmentBytes: 16 << 10, IndexIntervalBytes: 1024, RetentionMs: -1, RetentionBytes: l.Size() - first.Size})
	if n, err := l.ApplyRetention(time.Now()); err != nil || n != 1 {
		t.Fatalf("ApplyRetention = %d, %v; want the first segment deleted", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.log", first.Base))); !os.IsNotExist(err) {
		t.Fatalf("first segment still in the directory: %v", err)
	}
	for _, a := range want[len(want)/2:] {
		if got, _ := readAll(t, l, a.base, 1, math.MaxInt64); !bytes.Equal(got, a.raw) {
			t.Fatalf("Read(%d) returned the wrong bytes", a.base)
		}
	}
	if cache.Evicted() == 0 {
		t.Fatal("no file was evicted")
	}
	var got bytes.Buffer
	if _, err := held.WriteTo(&got); err != nil {
		t.Fatalf("held slice unreadable after its segment was deleted: %v", err)
	}
	if !bytes.Equal(got.Bytes(), want[0].raw) {
		t.Fatalf("held slice returned %d bytes, want the first batch", got.Len())
	}
	if _, err := l.Read(0, 1, math.MaxInt64); !errors.Is(err, logstore.ErrOffsetOutOfRange) {
		t.Fatalf("Read(0) after retention = %v, want ErrOffsetOutOfRange", err)
	}
	held.Release()
	if fds := openFilesUnder(t, dir); fds > 2 {
		t.Fatalf("%d descriptors under the log after the reader let go, want at most 2", fds)
	}
	if n := cache.OpenFiles(); n > 2 {
		t.Fatalf("cache counts %d open files, want at most 2", n)
	}
}

// TestRecoveryWithinCache: opening a log of many segments, after a clean close
// and after a crash (every segment checked batch by batch), never holds more
// files open than the cache allows plus the one being read and the active one.
func TestRecoveryWithinCache(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			dir := t.TempDir()
			cfg := smallCfg()
			cfg.Files = logstore.NewFileCache(2)
			idx := logstore.NewMemIndex()
			l := openLog(t, dir, cfg, idx)
			want := appendN(t, l, rand.New(rand.NewPCG(8, 9)), 300, 5, 1_000)
			if crash {
				l.Crash() // nothing synced: recovery checks every segment
			} else {
				closeLog(t, l)
			}
			cache := logstore.NewFileCache(2)
			cfg.Files = cache
			l = openLog(t, dir, cfg, idx)
			defer closeLog(t, l)
			if n := len(l.Segments()); n < 10 {
				t.Fatalf("%d segments, want many", n)
			}
			if p := cache.Peak(); p > 4 {
				t.Fatalf("recovery had %d segment files open at once, want at most 4", p)
			}
			checkLog(t, l, want)
		})
	}
}

// TestConcurrentReadsRetentionAndSwaps runs readers (Read, OffsetForTimestamp)
// over a cache of two files against a writer that appends, syncs, rewrites the
// oldest segments (dropping batches, as compaction does) and applies retention.
// Every batch a read returns must be byte for byte one the log was given, at its
// offset: a file is never read under a name that meanwhile means another file.
// Run it with -race.
func TestConcurrentReadsRetentionAndSwaps(t *testing.T) {
	dir := t.TempDir()
	cache := logstore.NewFileCache(2)
	cfg := smallCfg()
	cfg.Files = cache
	cfg.RetentionBytes = 40 << 10
	l := openLog(t, dir, cfg, logstore.NewMemIndex())
	defer closeLog(t, l)

	var mu sync.Mutex
	byBase := map[int64][]byte{}
	var recorded atomic.Int64 // readers read below it: batches appended and recorded
	record := func(as []appended) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range as {
			byBase[a.base] = a.raw
		}
		recorded.Store(as[len(as)-1].next)
	}
	done := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	var reads sync.Map
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			n := 0
			defer func() { reads.Store(r, n) }()
			for {
				select {
				case <-done:
					return
				default:
				}
				start, end := l.LogStartOffset(), recorded.Load()
				if end <= start {
					continue
				}
				if err := checkRead(l, start+rng.Int64N(end-start), 1+rng.Int64N(64<<10), end, byBase, &mu); err != nil {
					errs <- err
					return
				}
				if _, _, _, err := l.OffsetForTimestamp(rng.Int64N(40_000)); err != nil {
					errs <- fmt.Errorf("OffsetForTimestamp: %w", err)
					return
				}
				n++
			}
		}()
	}
	rng := rand.New(rand.NewPCG(10, 11))
	var want []appended
	swaps := 0
	for round := range 60 {
		as := appendN(t, l, rng, 20, 5, int64(1_000+round*2_000))
		record(as)
		want = append(want, as...)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if segs := l.Segments(); len(segs) > 3 && segs[len(segs)-2].Sealed {
			k := rng.IntN(len(segs) - 2) // two sealed segments, not always the oldest
			rw, kept := beginRewriteQuiet(l, segs[k:k+2], want, func(i int) bool { return i%3 != 1 })
			if rw != nil {
				if err := rw.Commit(); err == nil {
					want = kept
					swaps++
				} else if !errors.Is(err, logstore.ErrSegmentsChanged) {
					t.Fatalf("Commit: %v", err)
				}
			}
		}
		if _, err := l.ApplyRetention(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	reads.Range(func(_, v any) bool { total += v.(int); return true })
	if total == 0 || swaps == 0 || l.LogStartOffset() == 0 || cache.Reopened() == 0 {
		t.Fatalf("reads %d, swaps %d, log start %d, files reopened %d: the test did not exercise the cache", total, swaps, l.LogStartOffset(), cache.Reopened())
	}
	for i, u := range l.Users() {
		if u != 0 {
			t.Fatalf("segment %d has %d users after the readers stopped", i, u)
		}
	}
	if fds := openFilesUnder(t, dir); fds > 3 {
		t.Fatalf("%d descriptors under the log after the readers stopped, want at most 3", fds)
	}
}

// checkRead reads at off and checks that every batch returned is the one
// appended at its base offset.
func checkRead(l *logstore.Log, off, maxBytes, maxOffset int64, byBase map[int64][]byte, mu *sync.Mutex) error {
	s, err := l.Read(off, maxBytes, maxOffset)
	if errors.Is(err, logstore.ErrOffsetOutOfRange) {
		return nil // retention moved the start meanwhile
	}
	if err != nil {
		return fmt.Errorf("Read(%d): %w", off, err)
	}
	var buf bytes.Buffer
	_, err = s.WriteTo(&buf)
	s.Release()
	if err != nil {
		return fmt.Errorf("WriteTo of Read(%d): %w", off, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return batch.Split(buf.Bytes(), func(h batch.Header, b []byte) error {
		if want, ok := byBase[h.BaseOffset]; !ok || !bytes.Equal(b, want) {
			return fmt.Errorf("Read(%d) returned a batch at %d that was never appended there", off, h.BaseOffset)
		}
		return nil
	})
}

// beginRewriteQuiet is beginRewrite for a log that retention may change
// meanwhile: it returns a nil Rewrite where the segments changed.
func beginRewriteQuiet(l *logstore.Log, segs []logstore.SegmentInfo, want []appended, keep func(i int) bool) (*logstore.Rewrite, []appended) {
	var bases []int64
	for _, s := range segs {
		bases = append(bases, s.Base)
	}
	rw, err := l.BeginRewrite(bases)
	if err != nil {
		return nil, nil
	}
	end := rw.End()
	if err := appendKept(l, rw, bases, keep); err != nil {
		_ = rw.Abort()
		return nil, nil
	}
	var kept []appended
	i := 0
	for _, a := range want {
		if a.base < bases[0] || a.next > end || a.next == end || keep(i) {
			kept = append(kept, a)
		}
		if a.base >= bases[0] && a.next <= end {
			i++
		}
	}
	return rw, kept
}

// TestSliceSealedFiles: a Slice counts the sealed segment files it holds, not
// the active segment's, whose pinned descriptor is open anyway.
func TestSliceSealedFiles(t *testing.T) {
	l, _, _, _ := cachedLog(t, 2, 300, 6)
	segs := l.Segments()
	active := segs[len(segs)-1]
	for _, tc := range []struct {
		name        string
		from, until int64
		want        int
	}{
		{"three sealed", segs[0].Base, segs[3].Base, 3},
		{"last sealed and active", segs[len(segs)-2].Base, math.MaxInt64, 1},
		{"active only", active.Base, math.MaxInt64, 0},
	} {
		sl, err := l.Read(tc.from, math.MaxInt64, tc.until)
		if err != nil {
			t.Fatal(err)
		}
		if got := sl.SealedFiles(); got != tc.want {
			t.Errorf("%s: SealedFiles() = %d over %d ranges, want %d", tc.name, got, len(sl.Ranges), tc.want)
		}
		sl.Release()
	}
}
