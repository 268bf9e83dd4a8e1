package logstore_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"skiff/internal/batch"
	"skiff/internal/crashfs"
	"skiff/logstore"
)

// failWhen injects err into operations on segment files that match kind, while on.
type failWhen struct {
	on   atomic.Bool
	kind errorfs.OpKind
	err  error
}

func (f *failWhen) String() string { return "failWhen" }

func (f *failWhen) MaybeError(op errorfs.Op) error {
	if f.on.Load() && op.Kind == f.kind && strings.HasSuffix(op.Path, ".log") {
		return f.err
	}
	return nil
}

// appendedOf describes a batch as Append stored it.
func appendedOf(tb testing.TB, b []byte) appended {
	tb.Helper()
	h, err := batch.Check(b)
	if err != nil {
		tb.Fatal(err)
	}
	return appended{base: h.BaseOffset, next: h.NextOffset(), maxTs: h.MaxTimestamp, raw: b}
}

// memLog opens a log in /t-0 of a crash-test filesystem.
func memLog(t *testing.T, fs vfs.FS, idx logstore.Index) *logstore.Log {
	t.Helper()
	cfg := smallCfg()
	cfg.FS = fs
	return openLog(t, "/t-0", cfg, idx)
}

func segmentBytesOn(t *testing.T, fs vfs.FS) int64 {
	t.Helper()
	names, err := fs.List("/t-0")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			fi, err := fs.Stat("/t-0/" + name)
			if err != nil {
				t.Fatal(err)
			}
			n += fi.Size()
		}
	}
	return n
}

// TestAppendFullDisk: a write the disk refuses (ENOSPC, here after writing part of
// the batch) fails that append only: nothing of it stays in the file, reads go on,
// the error is not latched, and appends succeed again once there is room. The
// same for a segment roll that cannot create its new file.
func TestAppendFullDisk(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind errorfs.OpKind
	}{
		{"write", errorfs.OpFileWriteAt},
		{"roll", errorfs.OpCreate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := crashfs.New(7)
			inj := &failWhen{kind: tc.kind, err: syscall.ENOSPC}
			fs.SetInjector(inj)
			idx := logstore.NewMemIndex()
			l := memLog(t, fs, idx)
			rng := rand.New(rand.NewPCG(1, 2))
			want := appendN(t, l, rng, 20, 5, 1_000)
			inj.on.Store(true)
			failed := 0
			for i := 0; i < 200 && failed < 3; i++ { // a roll fails only when one is due
				b := makeBatch(t, 1+rng.IntN(5), 50+rng.IntN(250), 2_000)
				end := l.LogEndOffset()
				_, err := l.Append(b, 7)
				if err == nil {
					if tc.kind == errorfs.OpFileWriteAt {
						t.Fatal("append succeeded on a full disk")
					}
					want = append(want, appendedOf(t, b))
					continue
				}
				failed++
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("append error %v, want ENOSPC", err)
				}
				if l.Failed() != nil || l.LogEndOffset() != end {
					t.Fatalf("after a refused write: latched %v, log end %d (was %d)", l.Failed(), l.LogEndOffset(), end)
				}
				if got := segmentBytesOn(t, fs); got != l.Size() {
					t.Fatalf("segment files hold %d bytes, the log %d: part of the refused batch stayed", got, l.Size())
				}
				checkLog(t, l, want) // reads go on
			}
			if failed == 0 {
				t.Fatal("no append failed")
			}
			inj.on.Store(false)
			want = append(want, appendN(t, l, rng, 30, 5, 3_000)...)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			checkLog(t, l, want)
			l.Crash()
			l = memLog(t, fs.Restart(), idx)
			defer closeLog(t, l)
			checkLog(t, l, want)
		})
	}
}

// TestSyncFailureIsLatched: a failed fdatasync is never retried as if it could
// succeed: Sync keeps failing, appends fail, reads go on, and the log recovers
// what was synced before once it is opened again.
func TestSyncFailureIsLatched(t *testing.T) {
	fs := crashfs.New(9)
	inj := &failWhen{kind: errorfs.OpFileSyncData, err: syscall.EIO}
	fs.SetInjector(inj)
	idx := logstore.NewMemIndex()
	l := memLog(t, fs, idx)
	rng := rand.New(rand.NewPCG(3, 4))
	want := appendN(t, l, rng, 30, 5, 1_000)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	synced := len(want)
	want = append(want, appendN(t, l, rng, 5, 5, 2_000)...)
	inj.on.Store(true)
	err := l.Sync()
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync: %v, want EIO", err)
	}
	inj.on.Store(false) // the disk "works" again: the failure must stay
	if err2 := l.Sync(); err2 != err {
		t.Fatalf("second Sync: %v, want the latched %v", err2, err)
	}
	if _, err2 := l.Append(makeBatch(t, 1, 10, 1), 0); err2 != err {
		t.Fatalf("Append after a failed sync: %v, want the latched %v", err2, err)
	}
	if l.Failed() != err || l.SyncedOffset() != want[synced].base {
		t.Fatalf("Failed %v, SyncedOffset %d (want %d)", l.Failed(), l.SyncedOffset(), want[synced].base)
	}
	checkLog(t, l, want) // reads go on
	if err := l.Close(); err == nil {
		t.Fatal("Close after a failed sync returned nil")
	}
	l = memLog(t, fs.Restart(), idx)
	defer closeLog(t, l)
	if l.LogEndOffset() < want[synced].base {
		t.Fatalf("log end %d after reopening, below the synced %d", l.LogEndOffset(), want[synced].base)
	}
	checkLog(t, l, want[:countBelow(want, l.LogEndOffset())])
}

func countBelow(want []appended, end int64) int {
	n := 0
	for n < len(want) && want[n].next <= end {
		n++
	}
	return n
}

// TestRangeFiles: segments on the OS filesystem give Ranges whose File has a
// descriptor for sendfile (syscall.Conn); segments on other filesystems give
// Ranges that are copied, and read the same bytes.
func TestRangeFiles(t *testing.T) {
	disk := openLog(t, t.TempDir(), smallCfg(), logstore.NewMemIndex())
	defer closeLog(t, disk)
	mem := memLog(t, crashfs.New(1), logstore.NewMemIndex())
	defer closeLog(t, mem)
	for _, l := range []*logstore.Log{disk, mem} {
		want := appendN(t, l, rand.New(rand.NewPCG(5, 6)), 10, 3, 1)
		checkLog(t, l, want)
	}
	s, err := disk.Read(0, 1<<20, disk.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Ranges[0].File.(syscall.Conn); !ok {
		t.Fatalf("a segment on disk is a %T, which sendfile cannot use", s.Ranges[0].File)
	}
	s.Release()
	s, err = mem.Read(0, 1<<20, mem.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Ranges[0].File.(syscall.Conn); ok {
		t.Fatal("an in-memory segment claims a descriptor")
	}
	s.Release()
}

// TestSyncedOffset: SyncedOffset and UnsyncedBytes follow Sync, rolls (synced by
// the next Sync) and Close.
func TestSyncedOffset(t *testing.T) {
	fs := crashfs.New(11)
	idx := logstore.NewMemIndex()
	l := memLog(t, fs, idx)
	rng := rand.New(rand.NewPCG(7, 8))
	want := appendN(t, l, rng, 5, 3, 1)
	if l.SyncedOffset() != 0 || l.UnsyncedBytes() == 0 {
		t.Fatalf("before Sync: synced %d, unsynced bytes %d", l.SyncedOffset(), l.UnsyncedBytes())
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if l.SyncedOffset() != l.LogEndOffset() || l.UnsyncedBytes() != 0 {
		t.Fatalf("after Sync: synced %d of %d, unsynced bytes %d", l.SyncedOffset(), l.LogEndOffset(), l.UnsyncedBytes())
	}
	for !l.NeedsSync() { // until a roll
		want = append(want, appendN(t, l, rng, 1, 3, 2)...)
	}
	before := l.SyncedOffset()
	if before >= l.LogEndOffset() {
		t.Fatal("a roll synced")
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if l.NeedsSync() || l.SyncedOffset() != l.LogEndOffset() {
		t.Fatalf("after Sync: needs sync %v, synced %d of %d", l.NeedsSync(), l.SyncedOffset(), l.LogEndOffset())
	}
	// A crash now keeps everything, in every image.
	for range 10 {
		r := memLog(t, fs.Restart(), idx.Clone())
		checkLog(t, r, want)
		closeLog(t, r)
	}
	closeLog(t, l)
}
