package crashfs

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

func create(t *testing.T, fs vfs.FS, name string, data []byte, sync bool) vfs.File {
	t.Helper()
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func contents(t *testing.T, fs vfs.FS, name string) ([]byte, bool) {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

func syncDir(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	d.Close()
}

// A restart keeps what was synced: file data once the file is synced, a file's
// existence once its directory is; a truncation once the file is synced.
func TestRestartKeepsSynced(t *testing.T) {
	for seed := range uint64(20) {
		fs := New(seed)
		if err := fs.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		syncDir(t, fs, "/")
		a := create(t, fs, "/d/a", []byte("hello world"), true)
		syncDir(t, fs, "/d")
		if _, err := a.WriteAt([]byte(" and more"), 11); err != nil {
			t.Fatal(err)
		}
		create(t, fs, "/d/b", []byte("never synced"), false).Close()

		r := fs.Restart()
		got, ok := contents(t, r, "/d/a")
		if !ok || !bytes.HasPrefix(got, []byte("hello world")) {
			t.Fatalf("seed %d: synced data lost: %q", seed, got)
		}

		tr := a.(interface{ Truncate(int64) error })
		if err := tr.Truncate(5); err != nil {
			t.Fatal(err)
		}
		if got, _ := contents(t, fs, "/d/a"); string(got) != "hello" {
			t.Fatalf("after Truncate: %q", got)
		}
		if err := a.Sync(); err != nil {
			t.Fatal(err)
		}
		if got, _ := contents(t, fs.Restart(), "/d/a"); string(got) != "hello" {
			t.Fatalf("seed %d: synced truncation lost: %q", seed, got)
		}
		a.Close()
	}
}

// The crash point captures the filesystem at the k-th mutating operation, with a
// torn prefix of the write at that point, while the running code goes on.
func TestCrashPointTearsWrite(t *testing.T) {
	torn := 0
	for seed := range uint64(40) {
		fs := New(seed)
		if err := fs.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		f := create(t, fs, "/d/f", []byte("0123456789"), true)
		syncDir(t, fs, "/")
		syncDir(t, fs, "/d")
		crashed := false
		fs.CrashAt(1, func() { crashed = true })
		if _, err := f.WriteAt([]byte("abcdefghij"), 10); err != nil {
			t.Fatal(err)
		}
		if !crashed || !fs.Crashed() {
			t.Fatal("crash point not reached")
		}
		if got, _ := contents(t, fs, "/d/f"); string(got) != "0123456789abcdefghij" {
			t.Fatalf("the running filesystem lost the write: %q", got)
		}
		got, _ := contents(t, fs.Restart(), "/d/f")
		if !bytes.HasPrefix(got, []byte("0123456789")) || !bytes.HasPrefix([]byte("0123456789abcdefghij"), bytes.TrimRight(got, "\x00")) {
			t.Fatalf("seed %d: image %q is not a prefix of the writes", seed, got)
		}
		if len(got) > 10 && len(got) < 20 {
			torn++
		}
		f.Close()
	}
	if torn == 0 {
		t.Fatal("no image held a torn write")
	}
}

// An injected error on a write may leave a prefix of it, as a full disk does.
func TestInjectedWriteError(t *testing.T) {
	fs := New(1)
	f := create(t, fs, "/f", nil, false)
	enospc := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileWriteAt {
			return syscall.ENOSPC
		}
		return nil
	})
	fs.SetInjector(enospc)
	n, err := f.WriteAt(bytes.Repeat([]byte("x"), 100), 0)
	if !errors.Is(err, syscall.ENOSPC) || n >= 100 {
		t.Fatalf("WriteAt: %d, %v", n, err)
	}
	fs.SetInjector(nil)
	if _, err := f.WriteAt([]byte("ok"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// A truncation never loses synced bytes below the cut: a power failure after it
// leaves the file either as it was on disk before (the truncation not yet
// durable) or cut, with at least the synced bytes below the cut, as ftruncate on
// a real filesystem does (the same inode, only shorter). The replacement file
// that emulates the cut must not come back in place of the old one holding less
// than the old one's synced prefix.
func TestTruncateKeepsSyncedPrefix(t *testing.T) {
	synced := bytes.Repeat([]byte("s"), 3000)
	for seed := range uint64(200) {
		fs := New(seed)
		if err := fs.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		syncDir(t, fs, "/")
		f := create(t, fs, "/d/f", synced, true)
		syncDir(t, fs, "/d")
		if _, err := f.WriteAt(bytes.Repeat([]byte("u"), 900), 3000); err != nil { // unsynced
			t.Fatal(err)
		}
		if err := f.(interface{ Truncate(int64) error }).Truncate(2000); err != nil {
			t.Fatal(err)
		}
		if got, _ := contents(t, fs, "/d/f"); !bytes.Equal(got, synced[:2000]) {
			t.Fatalf("seed %d: after Truncate the file holds %d bytes", seed, len(got))
		}
		got, ok := contents(t, fs.Restart(), "/d/f")
		if !ok || len(got) < 2000 || !bytes.Equal(got[:2000], synced[:2000]) {
			t.Fatalf("seed %d: a crash after the truncation left %d bytes (exists %v), not the %d synced below the cut", seed, len(got), ok, 2000)
		}
		if len(got) > 2000 && !bytes.HasPrefix(got, synced) {
			t.Fatalf("seed %d: an image longer than the cut (%d bytes) is not the file before it", seed, len(got))
		}
		f.Close()
	}
}
