package logstore

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/fileutil"
)

// ringSize is how many of the active segment's latest index entries are kept in
// memory, so that Reads near the log end (caught-up consumers and followers, the
// common case) find their starting position without an index lookup. At the
// default interval this covers the last ~512 KiB of the log.
const ringSize = 128

// Log is one partition replica's log. See the package documentation for the
// concurrency rules and docs/format/segment.md for the format.
type Log struct {
	dir string
	cfg Config
	idx Index
	log *slog.Logger
	fs  vfs.FS

	// cleanMu serialises the writers that remove segments (ApplyRetention,
	// Truncate, Reset, Close, Delete) with a Rewrite's swap, so that the cleaner
	// swaps without blocking appends (clean.go).
	cleanMu sync.Mutex
	// cleanerPoint is the cleaner's first dirty offset (clean.go); written with
	// cleanMu held.
	cleanerPoint atomic.Int64

	// appendMu serialises writers. The fields below it are used only with it held.
	appendMu        sync.Mutex
	err             error // latched failure: an fsync failed, or a failed write could not be undone
	closing         bool  // Close or Delete ran
	bytesSinceIndex int64 // bytes appended to the active segment since its last index entry
	recoveryPoint   int64 // last recovery point handed to the index
	dirChanges      int64 // segment files created in the directory since Open
	dirSynced       int64 // dirChanges as of the last fsync of the directory

	mu struct {
		sync.RWMutex
		closed bool
		segs   []*segment   // ascending base offset; the last one is active
		ring   []IndexEntry // latest index entries of the active segment, ascending
	}
	// gen is bumped under mu by Truncate: byte positions read before may be stale.
	gen atomic.Uint64
	// listGen is bumped under mu when segments leave the list (retention,
	// truncation, a rewrite's swap, Close): a reader whose file was retired
	// (errFileGone) starts over if it moved.
	listGen atomic.Uint64

	// Published copies, updated under mu and readable without any lock.
	logStart atomic.Int64
	logEnd   atomic.Int64
	size     atomic.Int64

	// synced is the recovery point as a published copy: every batch below it is on
	// stable storage. Written with appendMu held.
	synced atomic.Int64
	// written counts the bytes appended since Open; syncedWritten is its value as of
	// the start of the last successful sync. Both only grow; written with appendMu held.
	written, syncedWritten atomic.Int64
	// failed holds the latched error once there is one, for lock-free readers.
	failed atomic.Pointer[error]
	// rolledUnsynced is set while a rolled segment waits for its fdatasync.
	rolledUnsynced atomic.Bool
}

// Open opens the log in dir, creating the directory if needed, and recovers it:
// segments are checked from the recovery point on and cut at the first invalid
// byte, and the index is rebuilt wherever it cannot be verified (see
// docs/format/segment.md). idx holds this partition's derived data.
func Open(dir string, cfg Config, idx Index) (*Log, error) {
	if idx == nil {
		return nil, errors.New("logstore: open: nil Index")
	}
	cfg = cfg.withDefaults()
	if err := fileutil.MkdirAll(cfg.FS, dir, 0o755); err != nil { // durably: a new log's folder must not vanish
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	l := &Log{dir: dir, cfg: cfg, idx: idx, log: cfg.Logger.With("dir", dir), fs: cfg.FS}
	if err := l.recover(); err != nil {
		retireAll(l.mu.segs)
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	return l, nil
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset returns the first offset that can be read.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// LogEndOffset returns the offset the next appended batch will get.
func (l *Log) LogEndOffset() int64 { return l.logEnd.Load() }

// Size returns the bytes of all segments.
func (l *Log) Size() int64 { return l.size.Load() }

// SyncedOffset returns the offset below which every batch is on stable storage
// (the recovery point): Sync, a roll, Close and Open move it up; a Truncate below
// it moves it down to the cut.
func (l *Log) SyncedOffset() int64 { return l.synced.Load() }

// UnsyncedBytes returns how many of the bytes appended since Open were not yet
// covered by a successful fsync (what a power failure could take from this log).
func (l *Log) UnsyncedBytes() int64 { return l.written.Load() - l.syncedWritten.Load() }

// NeedsSync reports whether a rolled segment waits for its fdatasync: a roll does
// not sync (it happens under the append lock), the next Sync does, so the owner
// of the log should call Sync soon.
func (l *Log) NeedsSync() bool { return l.rolledUnsynced.Load() }

// Failed returns the latched error, or nil: once an fsync failed (or a failed write
// could not be undone), the log takes no more writes until it is opened again.
// Reads go on.
func (l *Log) Failed() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// active returns the active segment; the caller holds appendMu or mu.
func (l *Log) active() *segment { return l.mu.segs[len(l.mu.segs)-1] }

// publishLocked copies the log bounds into the atomics; the caller holds mu.
func (l *Log) publishLocked() {
	var size int64
	for _, s := range l.mu.segs {
		size += s.size
	}
	l.size.Store(size)
	l.logEnd.Store(l.active().next)
}

// writableLocked reports why the log cannot be written; the caller holds appendMu.
func (l *Log) writableLocked() error {
	if l.closing {
		return ErrClosed
	}
	return l.err
}

// latchLocked records a failure after which the log's bytes on disk are not known
// (a failed fsync, or a failed write that could not be cut off again); every later
// write returns it.
func (l *Log) latchLocked(err error) error {
	if l.err == nil {
		l.err = err
		l.failed.Store(&err)
		l.log.Error("log storage failed; the log accepts no more writes until it is opened again", "err", err)
	}
	return l.err
}

// failLocked returns err from a writer, latching it first if it is a failed fsync.
// Other failures (a write refused for lack of space, an index error) leave the log
// as it was, and later writes may succeed. The caller holds appendMu.
func (l *Log) failLocked(err error) error {
	var se *syncError
	if errors.As(err, &se) {
		return l.latchLocked(err)
	}
	return err
}

// markSyncedLocked records that the fsync that started when written was w covered
// those bytes. The caller holds appendMu.
func (l *Log) markSyncedLocked(w int64) {
	if w > l.syncedWritten.Load() {
		l.syncedWritten.Store(w)
	}
}

// Close syncs the active segment, records a recovery point at the log end (so a
// clean restart checks nothing) and closes the segment files; files still used
// by unreleased Slices stay open until those are released. Close is idempotent; it
// returns the latched write error, if any.
func (l *Log) Close() error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	return l.closeLocked()
}

func (l *Log) closeLocked() error {
	if l.closing {
		return nil
	}
	l.closing = true
	var errs []error
	if l.err != nil {
		errs = append(errs, l.err)
	} else {
		act := l.active()
		w := l.written.Load()
		if err := l.syncAllLocked(); err != nil {
			errs = append(errs, l.latchLocked(err))
		} else {
			l.markSyncedLocked(w)
			if err := l.idx.PutSegment(act.meta()); err != nil {
				errs = append(errs, err)
			}
			if err := l.setRecoveryPointLocked(act.next, false); err != nil {
				errs = append(errs, err)
			}
		}
	}
	l.mu.Lock()
	l.mu.closed = true
	segs := l.mu.segs
	l.mu.segs = nil
	l.mu.ring = nil
	l.listGen.Add(1)
	l.mu.Unlock()
	for _, s := range segs {
		if err := s.file.retire(); err != nil {
			errs = append(errs, fmt.Errorf("logstore: close %s: %w", s.file.path, err))
		}
	}
	return errors.Join(errs...)
}

// retireAll retires the files of segs (an Open that failed).
func retireAll(segs []*segment) {
	for _, s := range segs {
		_ = s.file.retire()
	}
}

// Delete closes the log and removes its directory and its index data. Files still
// used by unreleased Slices stay readable until released.
func (l *Log) Delete() error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	err := l.closeLocked()
	if errors.Is(err, l.err) {
		err = nil // a latched write error does not matter to a deleted log
	}
	return errors.Join(err, l.idx.Delete(), l.fs.RemoveAll(l.dir))
}

// setRecoveryPointLocked persists a new recovery point; the caller holds appendMu.
func (l *Log) setRecoveryPointLocked(off int64, durable bool) error {
	if off == l.recoveryPoint && !durable {
		return nil
	}
	if err := l.idx.SetRecoveryPoint(off, durable); err != nil {
		return fmt.Errorf("logstore: set recovery point: %w", err)
	}
	l.recoveryPoint = off
	l.synced.Store(off)
	return nil
}
