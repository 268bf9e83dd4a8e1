package logstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
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

	// appendMu serialises writers. The fields below it are used only with it held.
	appendMu        sync.Mutex
	err             error // latched write or fsync failure
	closing         bool  // Close or Delete ran
	bytesSinceIndex int64 // bytes appended to the active segment since its last index entry
	recoveryPoint   int64 // last recovery point handed to the index

	mu struct {
		sync.RWMutex
		closed bool
		segs   []*segment   // ascending base offset; the last one is active
		ring   []IndexEntry // latest index entries of the active segment, ascending
	}
	// gen is bumped under mu by Truncate: byte positions read before may be stale.
	gen atomic.Uint64

	// Published copies, updated under mu and readable without any lock.
	logStart atomic.Int64
	logEnd   atomic.Int64
	size     atomic.Int64
}

// Open opens the log in dir, creating the directory if needed, and recovers it:
// segments are checked from the recovery point on and cut at the first invalid
// byte, and the index is rebuilt wherever it cannot be verified (see
// docs/format/segment.md). idx holds this partition's derived data.
func Open(dir string, cfg Config, idx Index) (*Log, error) {
	if idx == nil {
		return nil, errors.New("logstore: open: nil Index")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	cfg = cfg.withDefaults()
	l := &Log{dir: dir, cfg: cfg, idx: idx, log: cfg.Logger.With("dir", dir)}
	if err := l.recover(); err != nil {
		for _, s := range l.mu.segs {
			_ = s.file.unref()
		}
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

// latchLocked records a write or fsync failure; every later write returns it.
func (l *Log) latchLocked(err error) error {
	if l.err == nil {
		l.err = err
		l.log.Error("log write failed; the log accepts no more writes", "err", err)
	}
	return l.err
}

// Close syncs the active segment, records a recovery point at the log end (so a
// clean restart checks nothing) and releases the segment files; files still used
// by unreleased Slices stay open until those are released. Close is idempotent; it
// returns the latched write error, if any.
func (l *Log) Close() error {
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
		if err := fdatasync(act.file.f); err != nil {
			errs = append(errs, fmt.Errorf("logstore: sync %s: %w", act.file.path, err))
		} else {
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
	l.mu.Unlock()
	for _, s := range segs {
		if err := s.file.unref(); err != nil {
			errs = append(errs, fmt.Errorf("logstore: close %s: %w", s.file.path, err))
		}
	}
	return errors.Join(errs...)
}

// Delete closes the log and removes its directory and its index data. Files still
// used by unreleased Slices stay readable until released.
func (l *Log) Delete() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	err := l.closeLocked()
	if errors.Is(err, l.err) {
		err = nil // a latched write error does not matter to a deleted log
	}
	return errors.Join(err, l.idx.Delete(), os.RemoveAll(l.dir))
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
	return nil
}
