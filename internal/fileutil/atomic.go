// Package fileutil holds small file helpers shared by the packages that own on-disk files.
//
// The data directory's files (segments, Pebble, node.json, leader-epoch checkpoints,
// partition.metadata) are written through a vfs.FS (Pebble's filesystem interface):
// production passes vfs.Default, crash tests an in-memory filesystem that can lose
// what was not synced (internal/crashfs). Files outside the data directory (CLI
// output) use the os-based WriteFileAtomic.
package fileutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// WriteFileAtomic replaces path with data so that a crash leaves either the old or
// the new contents: write a temporary file, fsync it, rename it over path, fsync the
// folder.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(vfs.Default, filepath.Dir(path))
}

// ReplaceFile is WriteFileAtomic on fs: path is replaced by data so that a crash
// leaves either the old or the new contents (temporary file written and fsynced,
// renamed over path, folder fsynced). The file mode is the filesystem's default.
func ReplaceFile(fs vfs.FS, path string, data []byte) error {
	if err := RenameSynced(fs, path, data); err != nil {
		return err
	}
	return SyncDir(fs, fs.PathDir(path))
}

// RenameSynced is ReplaceFile without the fsync of the folder: the file's
// contents are on stable storage before it takes the name path, but the name
// is durable only once the caller fsyncs the folder (for a file written just
// before something else in the same folder, whose fsync of the folder covers
// both).
func RenameSynced(fs vfs.FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		fs.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		fs.Remove(tmp)
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		fs.Remove(tmp)
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := fs.Rename(tmp, path); err != nil {
		fs.Remove(tmp)
		return err
	}
	return nil
}

// ReadFile returns the contents of path on fs. A missing file is an error that
// matches os.ErrNotExist.
func ReadFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	return b, errors.Join(err, f.Close())
}

// MkdirAll creates dir and its missing parents on fs with mode perm, durably: the
// entry of every folder it creates is fsynced in its parent (else a power failure
// could take a new folder, with every synced file in it, away).
func MkdirAll(fs vfs.FS, dir string, perm os.FileMode) error {
	var missing []string
	for d := dir; ; {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		p := fs.PathDir(d)
		if p == d {
			break
		}
		d = p
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, perm); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := SyncDir(fs, fs.PathDir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

// SyncDir fsyncs a folder so that entries created, renamed or removed in it are durable.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}
