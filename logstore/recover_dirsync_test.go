package logstore_test

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// dirSyncFS counts the directories opened, which the log does only to fsync them.
type dirSyncFS struct {
	vfs.FS
	opened atomic.Int64
}

func (f *dirSyncFS) OpenDir(name string) (vfs.File, error) {
	f.opened.Add(1)
	return f.FS.OpenDir(name)
}

// TestReopenSyncsDirOnlyWhenNeeded: opening a log closed cleanly fsyncs no
// folder (it was synced before its recovery point was recorded), while opening
// one that crashed with unsynced batches, which recovery records as synced,
// does.
func TestReopenSyncsDirOnlyWhenNeeded(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		dir := t.TempDir()
		fs := &dirSyncFS{FS: vfs.Default}
		cfg := crashCfg()
		cfg.FS = fs
		l := openLog(t, dir, cfg, env.Index())
		rng := rand.New(rand.NewPCG(1, 2))
		want := appendN(t, l, rng, 30, 5, 1_000_000) // several segments
		closeLog(t, l)

		fs.opened.Store(0)
		l = openLog(t, dir, cfg, env.Index())
		if n := fs.opened.Load(); n != 0 {
			t.Errorf("reopening a cleanly closed log fsynced the folder %d times, want 0", n)
		}
		checkLog(t, l, want)
		want = append(want, appendN(t, l, rng, 3, 5, 2_000_000)...)
		l.Crash()

		fs.opened.Store(0)
		l = openLog(t, dir, cfg, env.Index())
		defer closeLog(t, l)
		if n := fs.opened.Load(); n == 0 {
			t.Error("recovering unsynced batches fsynced no folder")
		}
		checkLog(t, l, want)
	})
}
