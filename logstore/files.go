package logstore

import (
	"container/list"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Segment files and their descriptors. A node holds thousands of logs, each of
// many segments; keeping every segment file open would need a descriptor per
// segment and run into the process's open-file limit. So only the files that
// can be written are kept open (pinned): each log's active segment, and a
// rolled one until its fdatasync. A sealed segment's file is opened when a
// reader needs it and, once no reader uses it, kept open in a FileCache shared
// by the node's logs, which closes the least recently used idle files beyond
// its capacity. See docs/format/segment.md, "Open files".

// FileCache bounds the open idle descriptors of the sealed segment files of
// every Log that shares it (Config.Files). It closes the least recently used
// idle file once more than its capacity are open and idle; files in use (by a
// Slice, a scan, a sync) or pinned (active segments) are not counted and never
// closed under their user. It is safe for concurrent use.
type FileCache struct {
	capacity int
	open     atomic.Int64 // segment files open: pinned, in use or idle
	opened   atomic.Int64 // files opened again after they had been closed (misses)
	evicted  atomic.Int64 // idle files closed because the cache was full
	peak     atomic.Int64 // the most open at once (tests)

	mu  sync.Mutex
	lru list.List // idle open files (*segFile), least recently used at the front
}

// NewFileCache returns a cache that keeps at most capacity idle sealed segment
// files open (at least 1; 0 or less: DefaultFileCacheSize()).
func NewFileCache(capacity int) *FileCache {
	if capacity <= 0 {
		capacity = DefaultFileCacheSize()
	}
	return &FileCache{capacity: max(capacity, 1)}
}

// DefaultFileCacheSize is the capacity of a FileCache made without one: an
// eighth of the process's open-file limit (RLIMIT_NOFILE, which the Go runtime
// raises to the hard limit at start), at least 64 and at most 65,536. The rest
// is left to the active segments (one per partition), connections and the
// node's other files.
func DefaultFileCacheSize() int { return min(max(openFileLimit()/8, 64), 1<<16) }

// Capacity returns how many idle files the cache keeps open at most.
func (c *FileCache) Capacity() int { return c.capacity }

// OpenFiles returns how many segment files of the cache's logs are open now:
// pinned (active segments, rolled ones not yet synced), in use, and idle.
func (c *FileCache) OpenFiles() int64 { return c.open.Load() }

// Reopened returns how many times a segment file was opened again because its
// descriptor had been closed (a miss of the cache).
func (c *FileCache) Reopened() int64 { return c.opened.Load() }

// Evicted returns how many idle files the cache closed to stay within its
// capacity.
func (c *FileCache) Evicted() int64 { return c.evicted.Load() }

// opening counts a file opened.
func (c *FileCache) opening() {
	n := c.open.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
}

var (
	defaultCacheOnce sync.Once
	defaultCache     *FileCache
)

// sharedDefaultCache is the cache of logs opened without Config.Files: one per
// process, so that such logs too share one bound.
func sharedDefaultCache() *FileCache {
	defaultCacheOnce.Do(func() { defaultCache = NewFileCache(0) })
	return defaultCache
}

// errFileGone: the segment left the log (retention, a truncation, a rewrite's
// swap, Close) and its file was closed; it is not opened again by name, since
// the name may now be another file's. The reader starts over.
var errFileGone = errors.New("logstore: segment file removed")

// segFile is one segment file and its descriptor, open or not. Users (readers,
// a sync, the recovery reading it) hold the descriptor open from acquire to
// release; a pinned file (a segment that can still be written) stays open. An
// idle open file waits in the cache's LRU; the cache may close it, and the next
// acquire opens it again by path. Once retired (its path is about to stop
// naming this file) it is closed when its last user lets go and never opened
// again. Lock order: segFile.mu, then FileCache.mu.
type segFile struct {
	path  string
	fs    vfs.FS
	cache *FileCache

	mu      sync.Mutex
	f       vfs.File // nil when closed
	rw      bool     // f was opened for writing (created, or opened by pin)
	users   int      // acquires not yet released, the pin included
	pinned  bool
	retired bool
	// stale are read-only descriptors that pin replaced with a writable one
	// while readers held them: closed once no user but the pin is left.
	stale []vfs.File
	elem  *list.Element // in cache.lru while idle and open; guarded by cache.mu
}

// newOpenSegFile wraps f, just opened for writing or created at path, with one
// user (the caller's), not pinned.
func newOpenSegFile(c *FileCache, fs vfs.FS, f vfs.File, path string) *segFile {
	c.opening()
	return &segFile{path: path, fs: fs, cache: c, f: f, rw: true, users: 1}
}

// acquire returns the open file for reading or syncing, opening it read-only
// if the cache closed it, and holds it open until release. A retired file that
// is closed is errFileGone.
//
// Read-only, because what the cache closed is a sealed segment, which only
// pin writes again (and reopens for that): a reader cannot write through it,
// and a path that no longer names a file is an error, where opening it for
// writing would create an empty file in its place.
func (s *segFile) acquire() (vfs.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		if err := s.openLocked(false); err != nil {
			return nil, err
		}
	} else if s.users == 0 {
		s.leaveLRULocked()
	}
	s.users++
	return s.f, nil
}

// openLocked opens the closed file at its path, for writing if rw.
func (s *segFile) openLocked(rw bool) error {
	if s.retired {
		return errFileGone
	}
	f, err := s.open(rw)
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		// Out of descriptors (a Fetch of thousands of partitions holds a file
		// for each until it is written): close every idle one and try again.
		// Idle files are in the LRU, and a file being opened is not, so this
		// waits on no segFile.mu held by another open.
		s.cache.evictTo(0)
		f, err = s.open(rw)
	}
	if err != nil {
		return err
	}
	s.f, s.rw = f, rw
	s.cache.opening()
	s.cache.opened.Add(1)
	return nil
}

func (s *segFile) open(rw bool) (vfs.File, error) {
	if rw {
		// The segment is the log's (pin's caller holds appendMu or cleanMu), so
		// its path names it: OpenReadWrite's O_CREATE creates nothing.
		return s.fs.OpenReadWrite(s.path, vfs.WriteCategoryUnspecified)
	}
	return s.fs.Open(s.path)
}

// leaveLRULocked takes the idle file out of the cache's LRU.
func (s *segFile) leaveLRULocked() {
	s.cache.mu.Lock()
	if s.elem != nil {
		s.cache.lru.Remove(s.elem)
		s.elem = nil
	}
	s.cache.mu.Unlock()
}

// closeStaleLocked closes the read-only descriptors pin replaced, once no
// reader can hold one: no user is left but the pin.
func (s *segFile) closeStaleLocked() error {
	if len(s.stale) == 0 || s.users > 1 || s.users == 1 && !s.pinned {
		return nil
	}
	var errs []error
	for _, f := range s.stale {
		errs = append(errs, f.Close())
		s.cache.open.Add(-1)
	}
	s.stale = nil
	return errors.Join(errs...)
}

// release lets go of an acquire. The last user closes a retired file, or hands
// an idle one to the cache (which may close the least recently used). It
// returns the error of closing the file, if it closed it.
func (s *segFile) release() error {
	s.mu.Lock()
	s.users--
	serr := s.closeStaleLocked()
	switch {
	case s.users < 0:
		s.mu.Unlock()
		panic("logstore: segment file released more often than acquired")
	case s.users > 0:
		s.mu.Unlock()
		return serr
	case s.retired:
		err := s.closeLocked()
		s.mu.Unlock()
		return errors.Join(serr, err)
	}
	c := s.cache
	c.mu.Lock()
	s.elem = c.lru.PushBack(s)
	over := c.lru.Len() > c.capacity
	c.mu.Unlock()
	s.mu.Unlock()
	if over {
		c.evictTo(c.capacity)
	}
	return serr
}

func (s *segFile) closeLocked() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	s.cache.open.Add(-1)
	return err
}

// pin acquires the file open for writing and keeps it open until unpin (a
// segment that can be written: the active one, a rolled one until its
// fdatasync). A file that acquire opened read-only is opened again for writing;
// readers holding the read-only descriptor keep it until they let go. Pins
// begin and end under the log's appendMu (or before the log is shared); pinning
// a pinned file does nothing.
func (s *segFile) pin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pinned {
		return nil
	}
	switch {
	case s.f == nil:
		if err := s.openLocked(true); err != nil {
			return err
		}
	case !s.rw:
		if s.retired {
			return errFileGone
		}
		f, err := s.fs.OpenReadWrite(s.path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		s.cache.opening()
		if s.users == 0 {
			s.leaveLRULocked()
			_ = s.f.Close() // read-only: nothing to lose
			s.cache.open.Add(-1)
		} else {
			s.stale = append(s.stale, s.f)
		}
		s.f, s.rw = f, true
	case s.users == 0:
		s.leaveLRULocked()
	}
	s.users++
	s.pinned = true
	return nil
}

// unpin ends a pin, if there is one.
func (s *segFile) unpin() error {
	s.mu.Lock()
	p := s.pinned
	s.pinned = false
	s.mu.Unlock()
	if !p {
		return nil
	}
	return s.release()
}

// writable returns the descriptor of a pinned file, open for writing. The caller
// holds the log's appendMu, under which pins begin and end, so the descriptor
// does not change.
func (s *segFile) writable() vfs.File { return s.f }

// retire marks the file as no longer the log's: it is never opened again, an
// idle descriptor is closed now and one in use when its last user lets go. Call
// it before the path is removed or renamed over, so that a reader that opens the
// file meanwhile still gets this file. A pin ends too.
func (s *segFile) retire() error {
	uerr := s.unpin()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retired = true
	if s.users > 0 {
		return uerr
	}
	s.cache.mu.Lock()
	if s.elem != nil {
		s.cache.lru.Remove(s.elem)
		s.elem = nil
	}
	s.cache.mu.Unlock()
	return errors.Join(uerr, s.closeLocked())
}

// evictTo closes least recently used idle files until at most n are left. A
// file picked may have been acquired meanwhile; it is then left open (its last
// release hands it back).
func (c *FileCache) evictTo(n int) {
	for {
		c.mu.Lock()
		if c.lru.Len() <= n {
			c.mu.Unlock()
			return
		}
		s := c.lru.Remove(c.lru.Front()).(*segFile)
		s.elem = nil
		c.mu.Unlock()

		s.mu.Lock()
		c.mu.Lock()
		back := s.elem != nil // released again since it was picked
		c.mu.Unlock()
		if s.users == 0 && !back && s.f != nil {
			_ = s.closeLocked() // sealed and synced: nothing is lost, and no error to report but a read-only close's
			c.evicted.Add(1)
		}
		s.mu.Unlock()
	}
}
