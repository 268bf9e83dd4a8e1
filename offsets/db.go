// Package offsets is the node's Pebble database (<data>/meta): committed consumer
// group offsets, group metadata, producer state and the derived per-partition log
// indexes. One DB owns the Pebble instance; every keyspace is a prefixed byte
// range described, with its value layout, in docs/format/meta-index.md (in the
// repository root).
//
// Writes on the append path (log index entries) do not fsync: Pebble's own WAL may
// lose its latest writes on power failure, and the log never trusts its index
// past what it can verify against the segment files (see docs/format/segment.md).
package offsets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultCacheBytes is the default size of Pebble's block cache. The node is meant
// to idle under 64 MiB RSS; the index data it reads on Fetch is small and mostly in
// memtables, so a modest cache suffices.
const DefaultCacheBytes = 16 << 20

// DefaultMemTableBytes is the default size of one Pebble memtable (Pebble keeps up
// to two, plus the one being flushed).
const DefaultMemTableBytes = 4 << 20

// FormatVersion is the version of the key and value layouts written by this
// package, stored under the format key. Must not change meaning: a new layout
// gets a new number and a migration.
const FormatVersion = 1

// ErrFormat: the database was written in a format this version does not read.
var ErrFormat = errors.New("offsets: unsupported database format")

// ErrClosed: the DB was closed.
var ErrClosed = errors.New("offsets: database closed")

// Options configure Open. The zero value is valid.
type Options struct {
	// Logger receives Pebble's log lines (at Info and Error level, with
	// component=pebble) and this package's own. Default: discard.
	Logger *slog.Logger
	// CacheBytes is the block cache size. Default DefaultCacheBytes (16 MiB).
	CacheBytes int64
	// MemTableBytes is the memtable size. Default DefaultMemTableBytes (4 MiB).
	MemTableBytes uint64
	// FS is the filesystem the database lives on; the node's segment files share
	// it (logstore.Config.FS), and crash tests pass one that loses unsynced data.
	// Default vfs.Default.
	FS vfs.FS
}

// DB is the node's Pebble database. It is safe for concurrent use.
type DB struct {
	log *slog.Logger

	// mu is held in read mode around every Pebble call and in write mode by Close,
	// so that no call races with (or follows) Pebble's Close.
	mu     sync.RWMutex
	db     *pebble.DB
	closed bool
}

// Open opens (creating if needed) the database in dir.
func Open(dir string, opts Options) (*DB, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	if opts.MemTableBytes == 0 {
		opts.MemTableBytes = DefaultMemTableBytes
	}
	cache := pebble.NewCache(opts.CacheBytes)
	defer cache.Unref() // Pebble holds its own reference
	popts := &pebble.Options{
		Cache:              cache,
		Logger:             pebbleLogger{opts.Logger.With("component", "pebble")},
		MemTableSize:       opts.MemTableBytes,
		FormatMajorVersion: pebble.FormatNewest,
		FS:                 opts.FS,
	}
	pdb, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("offsets: open %s: %w", dir, err)
	}
	d := &DB{log: opts.Logger, db: pdb}
	if err := d.checkFormat(); err != nil {
		return nil, errors.Join(fmt.Errorf("offsets: open %s: %w", dir, err), pdb.Close())
	}
	return d, nil
}

// checkFormat reads the format key, writing it (durably) into a new database.
func (d *DB) checkFormat() error {
	v, closer, err := d.db.Get(formatKey)
	if errors.Is(err, pebble.ErrNotFound) {
		it, err := d.db.NewIter(nil)
		if err != nil {
			return err
		}
		empty := !it.First()
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: data without a format key", ErrFormat)
		}
		return d.db.Set(formatKey, binary.BigEndian.AppendUint32(nil, FormatVersion), pebble.Sync)
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	if len(v) != 4 || binary.BigEndian.Uint32(v) != FormatVersion {
		return fmt.Errorf("%w: format key %x", ErrFormat, v)
	}
	return nil
}

// Close closes the database. It is idempotent.
func (d *DB) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if err := d.db.Close(); err != nil {
		return fmt.Errorf("offsets: close: %w", err)
	}
	return nil
}

// with runs fn with the open Pebble DB, or returns ErrClosed.
func (d *DB) with(fn func(db *pebble.DB) error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return ErrClosed
	}
	return fn(d.db)
}

// pebbleLogger routes Pebble's logging (which otherwise goes to Go's log package)
// to slog.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) { p.l.Info(fmt.Sprintf(format, args...)) }

func (p pebbleLogger) Errorf(format string, args ...any) { p.l.Error(fmt.Sprintf(format, args...)) }

// Fatalf is called by Pebble on invariant violations it cannot continue from.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "fatal", true)
	panic("offsets: pebble: " + msg)
}
