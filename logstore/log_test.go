package logstore_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/batch"
	"skiff/logstore"
)

func smallCfg() logstore.Config {
	return logstore.Config{SegmentBytes: 16 << 10, IndexIntervalBytes: 1024, RetentionMs: -1}
}

func segmentFiles(tb testing.TB, dir string) []string {
	tb.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		tb.Fatal(err)
	}
	slices.Sort(m)
	return m
}

func TestAppendReadRoundTrip(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		dir := t.TempDir()
		l := openLog(t, dir, smallCfg(), env.Index())
		defer closeLog(t, l)
		rng := rand.New(rand.NewPCG(1, 2))
		want := appendN(t, l, rng, 120, 8, 1_000_000)
		if n := len(segmentFiles(t, dir)); n < 3 {
			t.Fatalf("%d segments, want several (rolled by size)", n)
		}
		var size int64
		for _, a := range want {
			size += int64(len(a.raw))
		}
		if l.Size() != size {
			t.Fatalf("Size = %d, want %d", l.Size(), size)
		}
		if l.LogStartOffset() != 0 {
			t.Fatalf("LogStartOffset = %d", l.LogStartOffset())
		}
		checkLog(t, l, want)
	})
}

func TestReadLimits(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallCfg(), logstore.NewMemIndex())
	defer closeLog(t, l)
	rng := rand.New(rand.NewPCG(3, 4))
	want := appendN(t, l, rng, 60, 4, 1000)
	end := l.LogEndOffset()

	t.Run("at log end is empty", func(t *testing.T) {
		got, s := readAll(t, l, end, 1<<20, math.MaxInt64)
		if len(got) != 0 || len(s.Ranges) != 0 || s.NextOffset != end {
			t.Fatalf("Read at log end: %d bytes, %d ranges, next %d", len(got), len(s.Ranges), s.NextOffset)
		}
	})
	t.Run("out of range", func(t *testing.T) {
		for _, off := range []int64{-1, end + 1} {
			if _, err := l.Read(off, 100, math.MaxInt64); !errors.Is(err, logstore.ErrOffsetOutOfRange) {
				t.Fatalf("Read(%d) err = %v, want ErrOffsetOutOfRange", off, err)
			}
		}
	})
	t.Run("first batch whole however small maxBytes", func(t *testing.T) {
		got, _ := readAll(t, l, want[5].base, 0, math.MaxInt64)
		if !bytes.Equal(got, want[5].raw) {
			t.Fatalf("got %d bytes, want batch 5 (%d bytes)", len(got), len(want[5].raw))
		}
	})
	t.Run("whole batches within maxBytes, across segments", func(t *testing.T) {
		for _, budget := range []int64{500, 3000, 20000, 40000} {
			for i := 0; i < len(want); i += 7 {
				got, s := readAll(t, l, want[i].base, budget, math.MaxInt64)
				var exp []byte
				for j := i; j < len(want); j++ {
					if j > i && int64(len(exp)+len(want[j].raw)) > budget {
						break
					}
					exp = append(exp, want[j].raw...)
				}
				if !bytes.Equal(got, exp) {
					t.Fatalf("Read(%d, %d): %d bytes, want %d", want[i].base, budget, len(got), len(exp))
				}
				if n := len(s.Ranges); budget == 40000 && i == 0 && n < 2 {
					t.Fatalf("Read(%d, 40000) gave %d range(s), want it to continue into the next segment", want[i].base, n)
				}
			}
		}
	})
	t.Run("maxOffset", func(t *testing.T) {
		hw := want[30].base
		got, s := readAll(t, l, want[20].base, math.MaxInt64, hw)
		var exp []byte
		for _, a := range want[20:30] {
			exp = append(exp, a.raw...)
		}
		if !bytes.Equal(got, exp) || s.NextOffset != hw {
			t.Fatalf("Read below hw: %d bytes next %d, want %d bytes next %d", len(got), s.NextOffset, len(exp), hw)
		}
		if got, _ := readAll(t, l, hw, math.MaxInt64, hw); len(got) != 0 {
			t.Fatalf("Read at hw returned %d bytes", len(got))
		}
	})
	t.Run("mid batch offset returns containing batch", func(t *testing.T) {
		for _, a := range want {
			if a.next-a.base > 1 {
				got, _ := readAll(t, l, a.base+1, 1, math.MaxInt64)
				if !bytes.Equal(got, a.raw) {
					t.Fatalf("Read(%d) did not return batch %d", a.base+1, a.base)
				}
				return
			}
		}
		t.Fatal("no multi-record batch")
	})
}

func TestRollByAgeAndBigBatch(t *testing.T) {
	dir := t.TempDir()
	cfg := logstore.Config{SegmentBytes: 4096, SegmentMs: 1000, RetentionMs: -1}
	l := openLog(t, dir, cfg, logstore.NewMemIndex())
	defer closeLog(t, l)
	mustAppend := func(b []byte) int64 {
		off, err := l.Append(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	mustAppend(makeBatch(t, 1, 10, 10_000))
	mustAppend(makeBatch(t, 1, 10, 10_900)) // within SegmentMs of the first: same segment
	if n := len(segmentFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments, want 1", n)
	}
	off := mustAppend(makeBatch(t, 1, 10, 11_001)) // more than SegmentMs after the first batch
	files := segmentFiles(t, dir)
	if len(files) != 2 || filepath.Base(files[1]) != "00000000000000000002.log" || off != 2 {
		t.Fatalf("after age roll: files %v, offset %d", files, off)
	}
	big := makeBatch(t, 2, 5000, 11_002) // larger than SegmentBytes
	off = mustAppend(big)
	files = segmentFiles(t, dir)
	if len(files) != 3 {
		t.Fatalf("big batch: %d segments, want 3", len(files))
	}
	if fi, err := os.Stat(files[2]); err != nil || fi.Size() != int64(len(big)) {
		t.Fatalf("big batch segment %v: %v", fi, err)
	}
	mustAppend(makeBatch(t, 1, 10, 11_003))
	if n := len(segmentFiles(t, dir)); n != 4 {
		t.Fatalf("after big batch: %d segments, want 4", n)
	}
	got, _ := readAll(t, l, off, 1, math.MaxInt64)
	if !bytes.Equal(got, big) {
		t.Fatal("big batch does not read back")
	}
}

func TestAppendReplica(t *testing.T) {
	dir := t.TempDir()
	leader := openLog(t, t.TempDir(), smallCfg(), logstore.NewMemIndex())
	defer closeLog(t, leader)
	want := appendN(t, leader, rand.New(rand.NewPCG(5, 6)), 40, 5, 1)

	f := openLog(t, dir, smallCfg(), logstore.NewMemIndex())
	defer closeLog(t, f)
	var chunk []byte
	for i, a := range want {
		chunk = append(chunk, a.raw...)
		if i%6 == 5 || i == len(want)-1 {
			if err := f.AppendReplica(chunk); err != nil {
				t.Fatalf("AppendReplica: %v", err)
			}
			chunk = nil
		}
	}
	checkLog(t, f, want)
	if err := f.AppendReplica(want[3].raw); !errors.Is(err, logstore.ErrNotContiguous) {
		t.Fatalf("AppendReplica of an old batch: %v, want ErrNotContiguous", err)
	}
	bad := slices.Clone(want[0].raw)
	batch.SetBaseOffset(bad, f.LogEndOffset())
	bad[len(bad)-1] ^= 0xff
	if err := f.AppendReplica(bad); !errors.Is(err, batch.ErrCRC) {
		t.Fatalf("AppendReplica of a corrupt batch: %v, want ErrCRC", err)
	}
	if f.LogEndOffset() != want[len(want)-1].next {
		t.Fatal("a rejected AppendReplica changed the log")
	}
	// Out of order within one append: the second batch starts below the first's end.
	g := openLog(t, t.TempDir(), smallCfg(), logstore.NewMemIndex())
	defer closeLog(t, g)
	if err := g.AppendReplica(slices.Concat(want[1].raw, want[0].raw)); !errors.Is(err, logstore.ErrNotContiguous) {
		t.Fatalf("AppendReplica of batches out of order: %v, want ErrNotContiguous", err)
	}
	if g.LogEndOffset() != 0 {
		t.Fatalf("a rejected AppendReplica moved the log end to %d", g.LogEndOffset())
	}
}

func TestTruncate(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		dir := t.TempDir()
		l := openLog(t, dir, smallCfg(), env.Index())
		rng := rand.New(rand.NewPCG(7, 8))
		want := appendN(t, l, rng, 100, 6, 5000)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		// Mid-batch offset: the containing batch goes too.
		k := 70
		if err := l.Truncate(want[k].base + (want[k].next-want[k].base)/2); err != nil {
			t.Fatal(err)
		}
		want = want[:k]
		checkLog(t, l, want)
		if m, ok := env.(*memEnv); ok && m.m.DurableWrites == 0 {
			t.Fatal("Truncate below the recovery point did not lower it durably")
		}
		if _, err := l.Read(want[k-1].next+1, 1, math.MaxInt64); !errors.Is(err, logstore.ErrOffsetOutOfRange) {
			t.Fatalf("read past truncated end: %v", err)
		}
		// Appending continues at the new end, and survives a clean reopen.
		want = append(want, appendN(t, l, rng, 20, 6, 9000)...)
		checkLog(t, l, want)
		closeLog(t, l)
		l = openLog(t, dir, smallCfg(), env.Index())
		checkLog(t, l, want)
		// Truncating at a segment's base offset leaves it empty and active.
		files := segmentFiles(t, dir)
		base, _ := parseBase(files[1])
		if err := l.Truncate(base); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != base || len(segmentFiles(t, dir)) != 2 {
			t.Fatalf("after Truncate(%d): end %d, %d files", base, l.LogEndOffset(), len(segmentFiles(t, dir)))
		}
		i := slices.IndexFunc(want, func(a appended) bool { return a.base == base })
		want = want[:i]
		checkLog(t, l, want)
		// Below the first segment: empty log starting there.
		if err := l.Truncate(-5 + 5); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != 0 || l.LogEndOffset() != 0 {
			t.Fatalf("Truncate(0): start %d end %d", l.LogStartOffset(), l.LogEndOffset())
		}
		closeLog(t, l)
	})
}

func parseBase(path string) (int64, bool) {
	var b int64
	for _, c := range filepath.Base(path)[:20] {
		b = b*10 + int64(c-'0')
	}
	return b, true
}

func TestScanHeaders(t *testing.T) {
	l := openLog(t, t.TempDir(), smallCfg(), logstore.NewMemIndex())
	defer closeLog(t, l)
	want := appendN(t, l, rand.New(rand.NewPCG(9, 10)), 80, 5, 1)
	from := want[33].base + 1
	var got []int64
	if err := l.ScanHeaders(from, func(h batch.Header) error {
		got = append(got, h.BaseOffset)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var exp []int64
	for _, a := range want[33:] {
		exp = append(exp, a.base)
	}
	if !slices.Equal(got, exp) {
		t.Fatalf("ScanHeaders(%d) = %v, want %v", from, got, exp)
	}
	stop := errors.New("stop")
	n := 0
	if err := l.ScanHeaders(0, func(batch.Header) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("ScanHeaders did not stop at fn's error: %v after %d", err, n)
	}
}

// TestSliceOutlivesSegment: a Slice keeps its files readable after retention,
// Close and Delete removed them, and the descriptors are closed on Release.
func TestSliceOutlivesSegment(t *testing.T) {
	dir := t.TempDir()
	cfg := smallCfg()
	cfg.RetentionBytes = 1
	l := openLog(t, dir, cfg, logstore.NewMemIndex())
	want := appendN(t, l, rand.New(rand.NewPCG(11, 12)), 50, 5, 1)
	s, err := l.Read(0, 1<<20, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	var before bytes.Buffer
	if _, err := s.WriteTo(&before); err != nil {
		t.Fatal(err)
	}
	if n, err := l.ApplyRetention(timeZero()); err != nil || n == 0 {
		t.Fatalf("ApplyRetention = %d, %v; want segments deleted", n, err)
	}
	if l.LogStartOffset() == 0 {
		t.Fatal("log start offset did not move")
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir still there after Delete: %v", err)
	}
	// Open other files: were the slice's descriptors closed, they would be reused.
	for range 20 {
		f, err := os.CreateTemp(t.TempDir(), "x")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("not a batch")
		defer f.Close()
	}
	var after bytes.Buffer
	if _, err := s.WriteTo(&after); err != nil {
		t.Fatalf("slice unreadable after its segments were deleted: %v", err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) || before.Len() == 0 {
		t.Fatalf("slice bytes changed: %d then %d", before.Len(), after.Len())
	}
	f := s.Ranges[0].File.(vfs.File)
	s.Release()
	if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("file still open after Release: %v", err)
	}
	_ = want
}

func TestConcurrentReadAppend(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		l := openLog(t, t.TempDir(), smallCfg(), env.Index())
		defer closeLog(t, l)
		rng := rand.New(rand.NewPCG(13, 14))
		var mu sync.Mutex
		var want []appended
		done := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for r := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-done:
						return
					default:
					}
					end := l.LogEndOffset()
					if end == 0 {
						continue
					}
					off := int64(i*7+r) % end
					s, err := l.Read(off, 4096, end)
					if err != nil {
						errs <- err
						return
					}
					var buf bytes.Buffer
					if _, err := s.WriteTo(&buf); err != nil {
						errs <- err
						return
					}
					s.Release()
					if err := batch.Split(buf.Bytes(), func(batch.Header, []byte) error { return nil }); err != nil || buf.Len() == 0 {
						errs <- errors.Join(err, errors.New("concurrent read returned no or broken batches"))
						return
					}
				}
			}()
		}
		for range 8 {
			a := appendN(t, l, rng, 30, 5, 1)
			mu.Lock()
			want = append(want, a...)
			mu.Unlock()
		}
		close(done)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		checkLog(t, l, want)
		for i, r := range l.Users() {
			if r != 0 {
				t.Fatalf("segment %d has %d users after all slices were released, want 0", i, r)
			}
		}
	})
}

func TestWriteErrorIsLatched(t *testing.T) {
	l := openLog(t, t.TempDir(), smallCfg(), logstore.NewMemIndex())
	if _, err := l.Append(makeBatch(t, 1, 10, 1), 0); err != nil {
		t.Fatal(err)
	}
	l.BreakActiveFile()
	_, err1 := l.Append(makeBatch(t, 1, 10, 1), 0)
	if err1 == nil {
		t.Fatal("append to a broken file succeeded")
	}
	_, err2 := l.Append(makeBatch(t, 1, 10, 1), 0)
	err3 := l.Sync()
	if err2 != err1 || err3 != err1 {
		t.Fatalf("error not latched: %v / %v / %v", err1, err2, err3)
	}
	if err := l.Close(); err == nil {
		t.Fatal("Close after a failed write returned nil")
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(makeBatch(t, 1, 10, 1), 0); !errors.Is(err, logstore.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
}
