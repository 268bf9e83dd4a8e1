// Package crashfs is a filesystem for crash tests (a vfs.FS, the seam that
// logstore, Pebble and node.json writes go through). It is Pebble's crashable
// in-memory filesystem (vfs.NewCrashableMem) with three additions:
//
//   - files can be truncated (logstore needs Truncate, which vfs.File lacks);
//   - every operation is first offered to an errorfs.Injector, so a test can fail
//     the k-th operation (errorfs.OnIndex), a class of them, or all of them from
//     some moment on; an injected error on a write leaves a random prefix of the
//     write in the file, as a full disk does;
//   - a crash point: at the k-th mutating operation (write, sync, create, remove,
//     rename, truncate) the filesystem captures what a machine that lost power at
//     that moment would find on disk: everything synced (vfs.MemFS.CrashClone),
//     some or none of what was not, and, when that operation is a write, a random
//     prefix of it (a torn write). The running test goes on undisturbed; Restart
//     then returns the captured image, for the restarted process to open.
//
// Sync semantics are MemFS's: a file's data is durable once the file is synced,
// a directory entry (a created, removed or renamed file) once its directory is.
// A truncation is durable once the truncated file is synced; until then a crash
// image holds the file either as it was or cut, and in both cases with every byte
// below the cut that was synced before it (as ftruncate: same inode, shorter).
package crashfs

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// FS is a crash-test filesystem. It is safe for concurrent use. Paths are
// slash-separated and absolute ("/data/meta").
type FS struct {
	mem *vfs.MemFS

	mu      sync.Mutex
	rng     *rand.Rand
	inj     errorfs.Injector
	ops     int // mutating operations so far
	crashAt int // capture the crash image at this operation; 0: not armed
	onCrash func()
	img     *vfs.MemFS // the captured image
}

var _ vfs.FS = (*FS)(nil)

// New returns an empty filesystem whose random choices (torn writes, which unsynced
// data survives a crash) follow seed.
func New(seed uint64) *FS {
	return &FS{mem: vfs.NewCrashableMem(), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// NewWithDir is New with dir already created and made durable, as a node finds its
// data directory after installation.
func NewWithDir(seed uint64, dir string) (*FS, error) {
	fs := New(seed)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d, err := fs.OpenDir("/")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return nil, err
	}
	return fs, nil
}

// SetInjector makes every later operation first ask inj whether it fails (nil:
// none does). Truncate is offered as an errorfs.OpFileWrite (errorfs has no kind
// for it).
func (fs *FS) SetInjector(inj errorfs.Injector) {
	fs.mu.Lock()
	fs.inj = inj
	fs.mu.Unlock()
}

// Ops returns how many mutating operations ran so far.
func (fs *FS) Ops() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.ops
}

// CrashAt arms the crash point at the k-th mutating operation from now (k >= 1).
// onCrash, when set, runs just before the image is captured, in the goroutine of
// that operation; it must not use the filesystem. Whatever a test records there
// (say, the offsets acknowledged so far) happened before the crash.
func (fs *FS) CrashAt(k int, onCrash func()) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.crashAt, fs.onCrash, fs.img = fs.ops+k, onCrash, nil
}

// Crashed reports whether the armed crash point was reached.
func (fs *FS) Crashed() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.img != nil
}

// Restart returns the filesystem as a restarted machine finds it: the image
// captured at the crash point, or, if none was reached, a crash image of now.
// The returned filesystem is a new FS (seeded from this one), able to crash again.
func (fs *FS) Restart() *FS {
	fs.mu.Lock()
	img := fs.img
	seed := fs.rng.Uint64()
	if img == nil {
		img = fs.captureLocked()
	}
	fs.mu.Unlock()
	n := New(seed)
	n.mem = img
	return n
}

// captureLocked takes a crash image: all synced data, and of the unsynced data
// none (half of the time) or a random share, block by block.
func (fs *FS) captureLocked() *vfs.MemFS {
	cfg := vfs.CrashCloneCfg{}
	if fs.rng.IntN(2) == 1 {
		cfg.UnsyncedDataPercent = 1 + fs.rng.IntN(100)
		cfg.RNG = rand.New(rand.NewPCG(fs.rng.Uint64(), fs.rng.Uint64()))
	}
	return fs.mem.CrashClone(cfg)
}

// before runs ahead of every operation: it counts mutating ones, captures the
// crash image at the crash point and asks the injector. For a write, data and off
// (-1: unknown) describe it, so that the image can hold a torn prefix of it.
func (fs *FS) before(op errorfs.Op, data []byte, off int64) error {
	fs.mu.Lock()
	if mutating(op.Kind) {
		fs.ops++
		if fs.ops == fs.crashAt && fs.img == nil {
			if fs.onCrash != nil {
				fs.onCrash()
			}
			fs.img = fs.captureLocked()
			if len(data) > 0 && off >= 0 && fs.rng.IntN(2) == 1 {
				tear(fs.img, op.Path, data[:fs.rng.IntN(len(data))], off)
			}
		}
	}
	inj := fs.inj
	fs.mu.Unlock()
	if inj == nil {
		return nil
	}
	return inj.MaybeError(op)
}

// randomPrefix returns how many bytes of an n-byte write a failed write leaves.
func (fs *FS) randomPrefix(n int) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if n == 0 {
		return 0
	}
	return fs.rng.IntN(n)
}

// tear writes a torn prefix of a write into the crash image, durably (if the file
// made it into the image at all).
func tear(img *vfs.MemFS, name string, prefix []byte, off int64) {
	if _, err := img.Stat(name); err != nil || len(prefix) == 0 {
		return
	}
	f, err := img.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.WriteAt(prefix, off); err == nil {
		_ = f.Sync()
	}
}

func mutating(k errorfs.OpKind) bool {
	switch k {
	case errorfs.OpCreate, errorfs.OpLink, errorfs.OpRemove, errorfs.OpRemoveAll, errorfs.OpRename,
		errorfs.OpReuseForWrite, errorfs.OpMkdirAll, errorfs.OpFileWrite, errorfs.OpFileWriteAt,
		errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo, errorfs.OpFilePreallocate:
		return true
	}
	return false
}

func (fs *FS) wrap(name string, f vfs.File) vfs.File {
	return &file{fs: fs, name: name, inner: f}
}

// Create implements vfs.FS.
func (fs *FS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpCreate, Path: name}, nil, -1); err != nil {
		return nil, err
	}
	f, err := fs.mem.Create(name, cat)
	if err != nil {
		return nil, err
	}
	return fs.wrap(name, f), nil
}

// Link implements vfs.FS.
func (fs *FS) Link(oldname, newname string) error {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpLink, Path: oldname}, nil, -1); err != nil {
		return err
	}
	return fs.mem.Link(oldname, newname)
}

// Open implements vfs.FS.
func (fs *FS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpOpen, Path: name}, nil, -1); err != nil {
		return nil, err
	}
	f, err := fs.mem.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return fs.wrap(name, f), nil
}

// OpenReadWrite implements vfs.FS.
func (fs *FS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpOpen, Path: name}, nil, -1); err != nil {
		return nil, err
	}
	f, err := fs.mem.OpenReadWrite(name, cat, opts...)
	if err != nil {
		return nil, err
	}
	return fs.wrap(name, f), nil
}

// OpenDir implements vfs.FS.
func (fs *FS) OpenDir(name string) (vfs.File, error) {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpOpenDir, Path: name}, nil, -1); err != nil {
		return nil, err
	}
	f, err := fs.mem.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return fs.wrap(name, f), nil
}

// Remove implements vfs.FS.
func (fs *FS) Remove(name string) error {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpRemove, Path: name}, nil, -1); err != nil {
		return err
	}
	return fs.mem.Remove(name)
}

// RemoveAll implements vfs.FS.
func (fs *FS) RemoveAll(name string) error {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpRemoveAll, Path: name}, nil, -1); err != nil {
		return err
	}
	return fs.mem.RemoveAll(name)
}

// Rename implements vfs.FS.
func (fs *FS) Rename(oldname, newname string) error {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpRename, Path: oldname}, nil, -1); err != nil {
		return err
	}
	return fs.mem.Rename(oldname, newname)
}

// ReuseForWrite implements vfs.FS.
func (fs *FS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpReuseForWrite, Path: oldname}, nil, -1); err != nil {
		return nil, err
	}
	f, err := fs.mem.ReuseForWrite(oldname, newname, cat)
	if err != nil {
		return nil, err
	}
	return fs.wrap(newname, f), nil
}

// MkdirAll implements vfs.FS.
func (fs *FS) MkdirAll(dir string, perm os.FileMode) error {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpMkdirAll, Path: dir}, nil, -1); err != nil {
		return err
	}
	return fs.mem.MkdirAll(dir, perm)
}

// Lock implements vfs.FS.
func (fs *FS) Lock(name string) (io.Closer, error) {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpLock, Path: name}, nil, -1); err != nil {
		return nil, err
	}
	return fs.mem.Lock(name)
}

// List implements vfs.FS.
func (fs *FS) List(dir string) ([]string, error) {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpList, Path: dir}, nil, -1); err != nil {
		return nil, err
	}
	return fs.mem.List(dir)
}

// Stat implements vfs.FS.
func (fs *FS) Stat(name string) (vfs.FileInfo, error) {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpStat, Path: name}, nil, -1); err != nil {
		return nil, err
	}
	return fs.mem.Stat(name)
}

// PathBase implements vfs.FS.
func (fs *FS) PathBase(p string) string { return fs.mem.PathBase(p) }

// PathJoin implements vfs.FS.
func (fs *FS) PathJoin(elem ...string) string { return fs.mem.PathJoin(elem...) }

// PathDir implements vfs.FS.
func (fs *FS) PathDir(p string) string { return fs.mem.PathDir(p) }

// GetDiskUsage implements vfs.FS.
func (fs *FS) GetDiskUsage(p string) (vfs.DiskUsage, error) {
	if err := fs.before(errorfs.Op{Kind: errorfs.OpGetDiskUsage, Path: p}, nil, -1); err != nil {
		return vfs.DiskUsage{}, err
	}
	return fs.mem.GetDiskUsage(p)
}

// Unwrap implements vfs.FS.
func (fs *FS) Unwrap() vfs.FS { return nil }

// String lists the files and their sizes (for test failure messages).
func (fs *FS) String() string { return fs.mem.String() }

// file wraps a MemFS file. Truncation replaces the MemFS file by a new one holding
// the kept prefix (MemFS files cannot shrink), so inner is guarded by mu.
type file struct {
	fs   *FS
	name string

	mu       sync.RWMutex
	inner    vfs.File
	pos      int64 // offset of the next Write
	replaced bool  // truncated since the last sync: syncing makes the new file durable
}

var _ vfs.File = (*file)(nil)

func (f *file) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fs.before(errorfs.Op{Kind: errorfs.OpFileClose, Path: f.name}, nil, -1); err != nil {
		return err
	}
	return f.inner.Close()
}

func (f *file) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fs.before(errorfs.Op{Kind: errorfs.OpFileRead, Path: f.name}, nil, -1); err != nil {
		return 0, err
	}
	n, err := f.inner.ReadAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if err := f.fs.before(errorfs.Op{Kind: errorfs.OpFileReadAt, Path: f.name, Offset: off}, nil, -1); err != nil {
		return 0, err
	}
	return f.inner.ReadAt(p, off)
}

func (f *file) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.writeAtLocked(p, f.pos, errorfs.OpFileWrite)
	f.pos += int64(n)
	return n, err
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writeAtLocked(p, off, errorfs.OpFileWriteAt)
}

func (f *file) writeAtLocked(p []byte, off int64, kind errorfs.OpKind) (int, error) {
	if err := f.fs.before(errorfs.Op{Kind: kind, Path: f.name, Offset: off}, p, off); err != nil {
		// A failed write may still have written a part (a full disk does that).
		n, _ := f.inner.WriteAt(p[:f.fs.randomPrefix(len(p))], off)
		return n, err
	}
	return f.inner.WriteAt(p, off)
}

func (f *file) Preallocate(off, n int64) error {
	if err := f.fs.before(errorfs.Op{Kind: errorfs.OpFilePreallocate, Path: f.name}, nil, -1); err != nil {
		return err
	}
	return nil
}

func (f *file) Stat() (vfs.FileInfo, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if err := f.fs.before(errorfs.Op{Kind: errorfs.OpFileStat, Path: f.name}, nil, -1); err != nil {
		return nil, err
	}
	return f.inner.Stat()
}

func (f *file) Sync() error     { return f.sync(errorfs.OpFileSync) }
func (f *file) SyncData() error { return f.sync(errorfs.OpFileSyncData) }

func (f *file) SyncTo(length int64) (bool, error) {
	if err := f.sync(errorfs.OpFileSyncTo); err != nil {
		return false, err
	}
	return true, nil
}

func (f *file) sync(kind errorfs.OpKind) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fs.before(errorfs.Op{Kind: kind, Path: f.name}, nil, -1); err != nil {
		return err
	}
	if err := f.inner.Sync(); err != nil {
		return err
	}
	if f.replaced {
		d, err := f.fs.mem.OpenDir(path.Dir(f.name))
		if err != nil {
			return err
		}
		err = d.Sync()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		f.replaced = false
	}
	return nil
}

// syncedData returns what a crash now leaves of the file at name when no
// unsynced data survives: its synced bytes, reached through its synced directory
// entry (nil if there is none). The caller holds the file's mu, under which the
// file is synced together with its directory after a truncation, so this is the
// synced data of the file the caller truncates, or of the one its unsynced
// replacement stands in for. It copies the filesystem: truncations are rare.
func (fs *FS) syncedData(name string) ([]byte, error) {
	img := fs.mem.CrashClone(vfs.CrashCloneCfg{})
	f, err := img.Open(name)
	if err != nil {
		return nil, nil // no synced directory entry: nothing of it is durable
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (f *file) Prefetch(off, n int64) error { return nil }

func (f *file) Fd() uintptr { return vfs.InvalidFd }

// Truncate cuts (or extends with zeros) the file to size. The MemFS file is
// replaced by a new one under the same name holding the kept bytes; until this
// file is synced, a crash image may have the old one (the cut not yet durable)
// or the new one (the cut durable).
//
// Either must be what ftruncate on a real filesystem can leave, which changes
// the size of the same inode and nothing below the cut: the new file starts out
// with the old one's synced bytes below the cut already synced, and only the
// rest of the kept bytes unsynced. (A crash image may take an unsynced directory
// entry in place of a synced one, so a new file holding nothing synced could
// come back empty, losing synced data that no real truncation loses.)
func (f *file) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fs.before(errorfs.Op{Kind: errorfs.OpFileWrite, Path: f.name}, nil, -1); err != nil {
		return err
	}
	keep := make([]byte, size)
	if _, err := f.inner.ReadAt(keep, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	durable, err := f.fs.syncedData(f.name)
	if err != nil {
		return err
	}
	nf, err := f.fs.mem.Create(f.name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if len(durable) > 0 {
		if _, err := nf.WriteAt(durable[:min(int64(len(durable)), size)], 0); err == nil {
			err = nf.Sync() // the new file's data only: its directory entry stays unsynced
		}
		if err != nil {
			nf.Close()
			return err
		}
	}
	if _, err := nf.WriteAt(keep, 0); err != nil {
		nf.Close()
		return err
	}
	old := f.inner
	f.inner, f.replaced = nf, true
	return old.Close()
}
