package logstore_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/batch"
	"skiff/internal/crashfs"
	"skiff/logstore"
)

// sealedLog returns a log in dir on fs with count batches appended and synced,
// so that every segment but the active one is sealed.
func sealedLog(t *testing.T, fs vfs.FS, dir string, idx logstore.Index, seed uint64, count int) (*logstore.Log, []appended) {
	t.Helper()
	cfg := smallCfg()
	cfg.FS = fs
	l := openLog(t, dir, cfg, idx)
	want := appendN(t, l, rand.New(rand.NewPCG(seed, 1)), count, 5, 1_000)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	return l, want
}

// rewrite replaces the first n sealed segments of l by one holding the batches
// that keep selects among them (and their last batch, always: it ends the run)
// and returns want with the dropped batches removed.
func rewrite(t *testing.T, l *logstore.Log, n int, want []appended, keep func(i int) bool) []appended {
	t.Helper()
	rw, kept := beginRewrite(t, l, n, want, keep)
	if err := rw.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return kept
}

// beginRewrite writes the rewrite of rewrite without committing it.
func beginRewrite(t *testing.T, l *logstore.Log, n int, want []appended, keep func(i int) bool) (*logstore.Rewrite, []appended) {
	t.Helper()
	segs := l.Segments()
	var bases []int64
	for _, s := range segs[:n] {
		if !s.Sealed {
			t.Fatalf("segment %d is not sealed", s.Base)
		}
		bases = append(bases, s.Base)
	}
	rw, err := l.BeginRewrite(bases)
	if err != nil {
		t.Fatal(err)
	}
	end := rw.End()
	if err := appendKept(l, rw, bases, keep); err != nil {
		t.Fatal(err)
	}
	var kept []appended
	i := 0
	for _, a := range want {
		if a.next > end || a.next == end || keep(i) {
			kept = append(kept, a)
		}
		if a.next <= end {
			i++
		}
	}
	return rw, kept
}

// appendKept appends to rw the batches of the segments bases that keep selects
// (by their index among them) and the last one, which ends the run.
func appendKept(l *logstore.Log, rw *logstore.Rewrite, bases []int64, keep func(i int) bool) error {
	end := rw.End()
	i := 0
	for _, base := range bases {
		if err := l.ScanSegment(base, func(h batch.Header, b []byte) error {
			if h.NextOffset() == end || keep(i) {
				if err := rw.Append(b); err != nil {
					return err
				}
			}
			i++
			return nil
		}); err != nil {
			return fmt.Errorf("ScanSegment(%d): %w", base, err)
		}
	}
	return nil
}

// checkGaps verifies what a read at every offset of a gap returns: the next
// batch kept, whole.
func checkGaps(t *testing.T, l *logstore.Log, want []appended) {
	t.Helper()
	prev := l.LogStartOffset()
	for _, a := range want {
		if a.next <= prev {
			continue
		}
		for off := prev; off < a.base; off++ {
			got, _ := readAll(t, l, off, 1, math.MaxInt64)
			if !bytes.Equal(got, a.raw) {
				t.Fatalf("Read(%d) in a gap returned %d bytes, want the batch at %d", off, len(got), a.base)
			}
		}
		prev = a.next
	}
}

// TestRewrite: segments rewritten with every other batch (and merged into one
// file) read back as exactly the batches kept, at their offsets; offsets in the
// gaps read the next batch; the segment files still tile the offsets; appends
// go on; and the same holds after a restart, with the index kept, stale or lost.
func TestRewrite(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		dir := t.TempDir()
		l, want := sealedLog(t, vfs.Default, dir, env.Index(), 1, 300)
		before := l.Segments()
		if len(before) < 8 {
			t.Fatalf("only %d segments", len(before))
		}
		closeLog(t, l)
		stale := env.Snapshot(t) // the index before the rewrites
		l = openLog(t, dir, smallCfg(), env.Index())
		want = rewrite(t, l, 4, want, func(i int) bool { return i%2 == 0 })
		after := l.Segments()
		if len(after) != len(before)-3 || after[0].Base != before[0].Base || after[0].Next != before[3].Next || !after[0].Sealed {
			t.Fatalf("segments after the rewrite %+v, before %+v", after[:2], before[:5])
		}
		if files := segmentFiles(t, dir); len(files) != len(after) {
			t.Fatalf("%d segment files for %d segments", len(files), len(after))
		}
		checkLog(t, l, want)
		checkGaps(t, l, want)

		// Once more, over the rewritten segment and the next two.
		want = rewrite(t, l, 3, want, func(i int) bool { return i%3 == 1 })
		checkLog(t, l, want)
		checkGaps(t, l, want)
		want = append(want, appendN(t, l, rand.New(rand.NewPCG(2, 2)), 20, 5, 50_000)...)
		checkLog(t, l, want)
		closeLog(t, l)

		for _, what := range []string{"index kept", "index stale", "index lost"} {
			switch what {
			case "index stale":
				stale()
			case "index lost":
				env.Wipe(t)
			}
			cfg := smallCfg()
			l = openLog(t, dir, cfg, env.Index())
			checkLog(t, l, want)
			checkGaps(t, l, want)
			checkIndex(t, env.Index(), dir, l.LogEndOffset())
			closeLog(t, l)
		}
	})
}

// TestRewriteReaderBeforeSwap: a reader that took its file ranges before the
// swap (as a Fetch does for sendfile) reads the replaced segments' bytes whole
// after the swap, through the descriptors it holds; the replaced files are gone
// from the directory and closed once it lets go.
func TestRewriteReaderBeforeSwap(t *testing.T) {
	dir := t.TempDir()
	filesBefore := 0
	l, s, old, want := readBeforeRewrite(t, dir, func() { filesBefore = len(segmentFiles(t, dir)) })
	if got := segmentFiles(t, dir); len(got) != filesBefore-4 {
		t.Fatalf("%d segment files after the swap, %d before", len(got), filesBefore)
	}
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), old) {
		t.Fatalf("a reader from before the swap read %d bytes, want the %d it was given", buf.Len(), len(old))
	}
	checkLog(t, l, want)
}

// readBeforeRewrite opens a sealed log in dir, takes a Slice of all of it (as a
// Fetch does), runs before (if any), and rewrites its first 5 segments keeping
// every fourth batch. The log and the Slice are closed with the test; it
// returns the bytes the Slice was given and the batches the log now holds.
func readBeforeRewrite(t *testing.T, dir string, before func()) (*logstore.Log, *logstore.Slice, []byte, []appended) {
	t.Helper()
	l, want := sealedLog(t, vfs.Default, dir, logstore.NewMemIndex(), 3, 300)
	t.Cleanup(func() { closeLog(t, l) })
	var old []byte
	for _, a := range want {
		old = append(old, a.raw...)
	}
	s, err := l.Read(0, math.MaxInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Release)
	if before != nil {
		before()
	}
	return l, s, old, rewrite(t, l, 5, want, func(i int) bool { return i%4 == 0 })
}

// TestRewriteRefused: a rewrite whose segments changed before its commit
// (retention deleted one, a truncation cut into them, the log closed) is
// refused with ErrSegmentsChanged, its file removed and the log unchanged; a
// rewrite that does not end where its segments did is refused too.
func TestRewriteRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, l *logstore.Log)
		want   error
	}{
		{"retention", func(t *testing.T, l *logstore.Log) {
			if n, err := l.ApplyRetention(time.UnixMilli(math.MaxInt64 / 2)); err != nil || n == 0 {
				t.Fatalf("retention: %d, %v", n, err)
			}
		}, logstore.ErrSegmentsChanged},
		{"truncate", func(t *testing.T, l *logstore.Log) {
			if err := l.Truncate(3); err != nil {
				t.Fatal(err)
			}
		}, logstore.ErrSegmentsChanged},
		{"close", func(t *testing.T, l *logstore.Log) { closeLog(t, l) }, logstore.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := smallCfg()
			cfg.RetentionMs = 1
			l := openLog(t, dir, cfg, logstore.NewMemIndex())
			want := appendN(t, l, rand.New(rand.NewPCG(4, 4)), 60, 5, 1_000)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			rw, _ := beginRewrite(t, l, 2, want, func(int) bool { return false })
			tc.change(t, l)
			if err := rw.Commit(); !errors.Is(err, tc.want) {
				t.Fatalf("Commit: %v, want %v", err, tc.want)
			}
			if leftovers := leftoverFiles(t, vfs.Default, dir); len(leftovers) > 0 {
				t.Fatalf("files left: %v", leftovers)
			}
			if tc.name != "close" {
				closeLog(t, l)
			}
		})
	}
	t.Run("wrong end", func(t *testing.T) {
		l, want := sealedLog(t, vfs.Default, t.TempDir(), logstore.NewMemIndex(), 5, 60)
		defer closeLog(t, l)
		segs := l.Segments()
		rw, err := l.BeginRewrite([]int64{segs[0].Base})
		if err != nil {
			t.Fatal(err)
		}
		if err := rw.Append(want[0].raw); err != nil {
			t.Fatal(err)
		}
		if err := rw.Commit(); err == nil || !strings.Contains(err.Error(), "ends at") {
			t.Fatalf("Commit of a rewrite ending early: %v", err)
		}
		checkLog(t, l, want)
	})
}

func leftoverFiles(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".cleaned") || strings.HasSuffix(n, ".swap") {
			out = append(out, n)
		}
	}
	return out
}

// TestRewriteCrash crashes a machine at every filesystem operation of a rewrite
// and its swap (with the unsynced data lost, or part of it, and the write at the
// crash torn), restarts it and opens the log: it holds either every batch it had
// before or exactly the rewritten set, never a mix and never a missing range;
// no .cleaned or .swap file is left; and it appends and reopens normally.
func TestRewriteCrash(t *testing.T) {
	const count = 250
	// How many operations a rewrite takes, from a dry run.
	probe := crashfs.New(1)
	l, want := sealedLog(t, probe, "/t-0", logstore.NewMemIndex(), 7, count)
	ops0 := probe.Ops()
	rewrite(t, l, 4, want, func(i int) bool { return i%3 == 0 })
	ops := probe.Ops() - ops0
	closeLog(t, l)

	outcomes := map[string]int{}
	for k := 1; k <= ops+1; k++ {
		for seed := uint64(0); seed < 3; seed++ {
			fs, atCrash, old, cleaned := crashedRewrite(t, seed*1000+uint64(k), k, count)
			if atCrash == nil { // the crash point is past the rewrite: a lost index then
				atCrash = logstore.NewMemIndex()
			}
			rfs := fs.Restart()
			r := memLog(t, rfs, atCrash)
			got := readBatches(t, r)
			switch {
			case sameBatches(got, old):
				outcomes["old"]++
			case sameBatches(got, cleaned):
				outcomes["new"]++
			default:
				t.Fatalf("crash at operation %d of %d (seed %d): the log holds %d batches, neither the %d before nor the %d rewritten",
					k, ops, seed, len(got), len(old), len(cleaned))
			}
			if left := leftoverFiles(t, rfs, "/t-0"); len(left) > 0 {
				t.Fatalf("crash at operation %d: files left after recovery: %v", k, left)
			}
			more := appendN(t, r, rand.New(rand.NewPCG(seed, 9)), 3, 3, 90_000)
			closeLog(t, r)
			r = memLog(t, rfs, atCrash)
			if got2 := readBatches(t, r); !sameBatches(got2, append(slices.Clone(got), more...)) {
				t.Fatalf("crash at operation %d: reopened log differs", k)
			}
			closeLog(t, r)
		}
	}
	if outcomes["old"] == 0 || outcomes["new"] == 0 {
		t.Fatalf("outcomes %v: both the old and the new set must occur", outcomes)
	}
	t.Logf("%d operations per rewrite; outcomes %v", ops, outcomes)
}

// crashedRewrite builds a sealed log of count batches on a fresh crash-test
// filesystem (seed), arms a crash at its k-th operation from then on, rewrites
// its first 4 segments keeping every third batch and abandons the log as a
// killed process would. It returns the filesystem, the index as it was at the
// crash (nil if the crash point was not reached), and the batches before and
// after the rewrite.
func crashedRewrite(t *testing.T, seed uint64, k, count int) (fs *crashfs.FS, atCrash *logstore.MemIndex, old, cleaned []appended) {
	t.Helper()
	fs = crashfs.New(seed)
	idx := logstore.NewMemIndex()
	l, old := sealedLog(t, fs, "/t-0", idx, 7, count)
	fs.CrashAt(k, func() { atCrash = idx.Clone() })
	rw, cleaned := beginRewrite(t, l, 4, old, func(i int) bool { return i%3 == 0 })
	if err := rw.Commit(); err != nil {
		t.Fatal(err)
	}
	l.Crash()
	return fs, atCrash, old, cleaned
}

// readBatches returns every batch of l in order.
func readBatches(t *testing.T, l *logstore.Log) []appended {
	t.Helper()
	all, _ := readAll(t, l, l.LogStartOffset(), math.MaxInt64, math.MaxInt64)
	var out []appended
	if err := batch.Split(all, func(h batch.Header, raw []byte) error {
		out = append(out, appended{base: h.BaseOffset, next: h.NextOffset(), maxTs: h.MaxTimestamp, raw: bytes.Clone(raw)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameBatches(a, b []appended) bool {
	return slices.EqualFunc(a, b, func(x, y appended) bool { return x.base == y.base && bytes.Equal(x.raw, y.raw) })
}

// TestScanSegment: ScanSegment hands over every batch of a sealed segment, whole
// and in order, also batches larger than its read chunk; the active segment is
// refused.
func TestScanSegment(t *testing.T) {
	cfg := smallCfg()
	cfg.SegmentBytes = 4 << 20
	l := openLog(t, t.TempDir(), cfg, logstore.NewMemIndex())
	defer closeLog(t, l)
	var want []appended
	for i := range 12 {
		b := makeBatch(t, 1+i%3, []int{100, 700_000, 5}[i%3], int64(i))
		if _, err := l.Append(b, 1); err != nil {
			t.Fatal(err)
		}
		want = append(want, appendedOf(t, b))
	}
	for !l.NeedsSync() {
		b := makeBatch(t, 1, 1_000_000, 99)
		if _, err := l.Append(b, 1); err != nil {
			t.Fatal(err)
		}
		want = append(want, appendedOf(t, b))
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	var got []appended
	for _, s := range segs[:len(segs)-1] {
		if err := l.ScanSegment(s.Base, func(h batch.Header, b []byte) error {
			got = append(got, appended{base: h.BaseOffset, next: h.NextOffset(), maxTs: h.MaxTimestamp, raw: bytes.Clone(b)})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) < 6 || !sameBatches(got, want[:len(got)]) || !slices.ContainsFunc(got, func(a appended) bool { return len(a.raw) > 1<<20 }) {
		t.Fatalf("ScanSegment read %d batches, not the first %d appended, or none over 1 MiB", len(got), len(got))
	}
	if err := l.ScanSegment(segs[len(segs)-1].Base, func(batch.Header, []byte) error { return nil }); !errors.Is(err, logstore.ErrSegmentsChanged) {
		t.Fatalf("ScanSegment of the active segment: %v", err)
	}
}

// TestRewriteCrashInRecovery: a crash after a rewrite's commit point leaves a
// .swap file that recovery finishes; a second crash at every operation of that
// recovery still leaves the rewritten set, whole, for the next one.
func TestRewriteCrashInRecovery(t *testing.T) {
	const count = 250
	swapped := 0
	for k := 1; k <= 12; k++ {
		fs, atCrash, _, cleaned := crashedRewrite(t, uint64(k), k, count)
		if atCrash == nil {
			continue
		}
		img := fs.Restart()
		if len(leftoverFiles(t, img, "/t-0")) == 0 || !slices.ContainsFunc(leftoverFiles(t, img, "/t-0"), func(n string) bool { return strings.HasSuffix(n, ".swap") }) {
			continue
		}
		swapped++
		// Count the operations of the recovery that finishes the swap.
		probe := img.Restart()
		before := probe.Ops()
		closeLog(t, memLog(t, probe, atCrash.Clone()))
		recoveryOps := probe.Ops() - before
		for j := 1; j <= recoveryOps; j++ {
			again := img.Restart()
			again.CrashAt(j, nil)
			r := memLog(t, again, atCrash.Clone())
			r.Crash()
			rfs := again.Restart()
			final := memLog(t, rfs, atCrash.Clone())
			if got := readBatches(t, final); !sameBatches(got, cleaned) {
				t.Fatalf("crash at operation %d, then at operation %d of recovery: %d batches, want the %d rewritten", k, j, len(got), len(cleaned))
			}
			if left := leftoverFiles(t, rfs, "/t-0"); len(left) > 0 {
				t.Fatalf("files left: %v", left)
			}
			closeLog(t, final)
		}
	}
	if swapped == 0 {
		t.Fatal("no crash point left a .swap file")
	}
	t.Logf("%d crash points left a .swap file", swapped)
}

// TestReplicaAcrossGaps: a follower copying a compacted log fetch by fetch (as
// replication does, from its own log end) stores the leader's batches with their
// gaps, rolls its segments at its log end (so its files still tile the offsets,
// a gap at the start of a segment), reopens to the same log, and a truncation
// into a gap cuts back to the end of the batch before it.
func TestReplicaAcrossGaps(t *testing.T) {
	leader, want := sealedLog(t, vfs.Default, t.TempDir(), logstore.NewMemIndex(), 11, 300)
	defer closeLog(t, leader)
	want = rewrite(t, leader, 6, want, func(i int) bool { return i%5 == 0 })
	dir := t.TempDir()
	cfg := smallCfg()
	cfg.SegmentBytes = 3000 // many rolls, some right after a gap
	f := openLog(t, dir, cfg, logstore.NewMemIndex())
	for f.LogEndOffset() < leader.LogEndOffset() {
		got, _ := readAll(t, leader, f.LogEndOffset(), 5000, math.MaxInt64)
		if err := f.AppendReplica(got); err != nil {
			t.Fatalf("AppendReplica at %d: %v", f.LogEndOffset(), err)
		}
	}
	checkLog(t, f, want)
	checkGaps(t, f, want)
	closeLog(t, f)
	f = openLog(t, dir, cfg, logstore.NewMemIndex()) // index lost: every segment checked
	defer closeLog(t, f)
	checkLog(t, f, want)
	// Truncate at an offset inside the first gap.
	for i := 1; i < len(want); i++ {
		if want[i].base > want[i-1].next {
			if err := f.Truncate(want[i].base - 1); err != nil {
				t.Fatal(err)
			}
			if f.LogEndOffset() != want[i-1].next {
				t.Fatalf("truncated in a gap to %d, want %d", f.LogEndOffset(), want[i-1].next)
			}
			checkLog(t, f, want[:i])
			return
		}
	}
	t.Fatal("no gap")
}

// TestScanSegmentSkipping: the batches skip selects are handed over without
// their bytes and without their CRC checked (each one's body is corrupted on
// disk, which a full scan reports), small and large alike; the others whole, as
// ScanSegment hands them over.
func TestScanSegmentSkipping(t *testing.T) {
	cfg := smallCfg()
	cfg.SegmentBytes = 5 << 20 // the 24 batches, not the filler after them
	dir := t.TempDir()
	l := openLog(t, dir, cfg, logstore.NewMemIndex())
	defer closeLog(t, l)
	var want []appended
	for i := range 24 {
		b := makeBatch(t, 1+i%3, []int{100, 300_000, 5, 90_000}[i%4], int64(i))
		if _, err := l.Append(b, 1); err != nil {
			t.Fatal(err)
		}
		want = append(want, appendedOf(t, b))
	}
	if _, err := l.Append(makeBatch(t, 1, 1_000_000, 99), 1); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	// Skip every batch of an odd index but the first four, and corrupt the
	// last byte of each on disk.
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%020d.log", 0)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	skipped := map[int64]bool{}
	var pos int64
	for i, a := range want {
		pos += int64(len(a.raw))
		if i%2 == 1 && i > 4 {
			skipped[a.base] = true
			if _, err := f.WriteAt([]byte{^a.raw[len(a.raw)-1]}, pos-1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if segs := l.Segments(); len(segs) != 2 || segs[0].Next != want[len(want)-1].next {
		t.Fatalf("segments %+v: want all batches in the first", segs)
	}
	var got []appended
	err = l.ScanSegmentSkipping(0, func(h *batch.Header) bool { return skipped[h.BaseOffset] }, func(h batch.Header, b []byte) error {
		if skipped[h.BaseOffset] != (b == nil) {
			t.Fatalf("batch %d: skipped %v, bytes %d", h.BaseOffset, skipped[h.BaseOffset], len(b))
		}
		got = append(got, appended{base: h.BaseOffset, next: h.NextOffset(), maxTs: h.MaxTimestamp, raw: bytes.Clone(b)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		if g.base != w.base || g.next != w.next || g.maxTs != w.maxTs || !skipped[w.base] && !bytes.Equal(g.raw, w.raw) {
			t.Fatalf("batch %d: got %d..%d, want %d..%d (or other bytes)", i, g.base, g.next, w.base, w.next)
		}
	}
	var ce *logstore.CorruptionError
	if err := l.ScanSegment(0, func(batch.Header, []byte) error { return nil }); !errors.As(err, &ce) || !errors.Is(err, batch.ErrCRC) {
		t.Fatalf("a full scan of the corrupted segment: %v", err)
	}
}

// TestScanSkippingDamage: damage to a segment is an error of a skipping scan as
// of a full one, whether or not the damaged batch is skipped (a skip reads its
// header alone, so the header's checks are all there is): a torn last batch, a
// header cut short, a length past the file's end, a bad magic, a record count
// its offsets cannot hold, a zeroed header, a base offset going back.
func TestScanSkippingDamage(t *testing.T) {
	var seg []byte
	var starts []int
	for i, b := range [][]byte{makeBatch(t, 2, 10, 1), makeBatch(t, 1, 70_000, 2), makeBatch(t, 3, 5, 3)} {
		b = bytes.Clone(b)
		batch.SetBaseOffset(b, int64(10*i))
		starts = append(starts, len(seg))
		seg = append(seg, b...)
	}
	last := starts[2]
	damaged := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(seg)) }
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"torn last batch", seg[:len(seg)-1]},
		{"last header cut short", seg[:last+batch.HeaderSize-1]},
		{"length past the end", damaged(func(b []byte) []byte { binary.BigEndian.PutUint32(b[last+8:], 1<<20); return b })},
		{"bad magic", damaged(func(b []byte) []byte { b[last+16] = 1; return b })},
		{"record count over its offsets", damaged(func(b []byte) []byte { binary.BigEndian.PutUint32(b[last+57:], 9); return b })},
		{"zeroed header", damaged(func(b []byte) []byte { clear(b[last : last+batch.HeaderSize]); return b })},
		{"base offset going back", damaged(func(b []byte) []byte { batch.SetBaseOffset(b[last:], 5); return b })},
	} {
		for _, skipAll := range []bool{false, true} {
			n := 0
			err := logstore.ScanBatches(c.data, func(*batch.Header) bool { return skipAll }, func(batch.Header, []byte) error {
				n++
				return nil
			})
			var ce *logstore.CorruptionError
			if !errors.As(err, &ce) || ce.Pos != int64(last) || n != 2 {
				t.Errorf("%s, skipping %v: %d batches, %v; want 2 and a CorruptionError at %d", c.name, skipAll, n, err, last)
			}
		}
	}
}
