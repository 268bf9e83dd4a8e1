package kafkaapi

// Limits against hostile or broken clients (docs/limits.md). Every resource a client
// can make the server hold is bounded by a setting:
//
//   - connections: Config.MaxConnections in all and Config.MaxConnectionsPerIP per
//     client address, refused at accept (the socket is closed at once);
//   - one request frame: Config.MaxRequestBytes, checked on the length prefix before
//     anything is allocated;
//   - time to send a frame: Config.ReadTimeout from its first byte (slowloris), and
//     Config.IdleTimeout between frames;
//   - request memory of all connections together: Config.QueuedMaxRequestBytes, a
//     FIFO semaphore (budget) on the memory each request may take, acquired before
//     its frame is allocated; readers wait for it, so a flood of large requests slows
//     down instead of exhausting memory;
//   - work per request: Config.MaxPartitionsPerRequest, checked before a request is
//     handled (and for Produce before it is even decoded).
//
// A refusal closes the connection (or refuses the connection) and is logged once per
// client address and reason per refusalLogWindow (refusalLog), so that a client
// reconnecting in a loop cannot flood the log.

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"
)

// decodeFactor bounds the memory kmsg may allocate to decode a request body, as a
// multiple of its size: an array's length is checked against the bytes left (at one
// or two bytes per element) before its elements are allocated, and a decoded element
// (a Go struct) takes up to 32 times the bytes of its smallest encoding; an inner
// array can claim the bytes left again. FuzzDecodeRequest checks the bound for every
// served API. A key that weighsFrame (Produce) is walked before it is decoded
// (its shape), so only its frame counts.
const decodeFactor = 64

// entryBytes is the memory counted per entry (topic, partition, group...) of a
// decoded request once it has been decoded: the Go structs of that entry.
const entryBytes = 128

// requestWeight is the memory a request of key with a frame of size bytes may take
// while it is read and decoded; it is what the request acquires from the budget.
func requestWeight(key int16, size int32) int64 {
	if a := lookup(key); a == nil || a.weighsFrame {
		// Keys not served are answered without being decoded; a key that weighs its
		// frame (Produce) keeps its large fields in it and is walked before it is
		// decoded.
		return int64(size)
	}
	return int64(size) * decodeFactor
}

// heldWeight is what a decoded request keeps of its budget while it is handled (a
// parked Fetch, a held JoinGroup, a Produce waiting for replicas): its frame and its
// decoded entries.
func heldWeight(size int32, entries int, acquired int64) int64 {
	return min(acquired, int64(size)+int64(entries)*entryBytes)
}

// budget is a weighted FIFO semaphore over bytes (queued.max.request.bytes). Waiters
// are served in arrival order, so a large request is not starved by small ones.
type budget struct {
	mu      sync.Mutex
	size    int64 // capacity; 0: unlimited
	used    int64
	waiters []*budgetWaiter
	onUse   func(used int64) // metrics
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once granted
}

func newBudget(size int64, onUse func(int64)) *budget {
	if onUse == nil {
		onUse = func(int64) {}
	}
	return &budget{size: size, onUse: onUse}
}

// acquire takes n bytes, waiting until they are free or ctx ends. n must not exceed
// the capacity.
func (b *budget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if b.size == 0 || (len(b.waiters) == 0 && b.used+n <= b.size) {
		b.used += n
		b.onUse(b.used)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.used -= n
			b.onUse(b.used)
		default:
			for i, x := range b.waiters {
				if x == w {
					b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
					break
				}
			}
		}
		b.grantLocked()
		b.mu.Unlock()
		return ctx.Err()
	}
}

// release returns n bytes and wakes the waiters that now fit, in order.
func (b *budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grantLocked()
	b.onUse(b.used)
	b.mu.Unlock()
}

func (b *budget) grantLocked() {
	for len(b.waiters) > 0 && (b.size == 0 || b.used+b.waiters[0].n <= b.size) {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

// refusalLogWindow is how long repeated refusals of one client address for one
// reason are counted instead of logged.
const refusalLogWindow = time.Minute

// maxRefusalKeys bounds the addresses remembered by refusalLog; refusals from more
// addresses than this within a window are counted and summarised.
const maxRefusalKeys = 4096

// refusalLog logs the first refusal of each (reason, client address) and then at
// most one line per refusalLogWindow with the count of the refusals not logged.
type refusalLog struct {
	logger *slog.Logger
	now    func() time.Time
	mu     struct {
		sync.Mutex
		seen     map[refusalKey]*refusalEntry
		overflow int       // refusals not logged because seen was full
		overLog  time.Time // when overflow was last reported
	}
}

type refusalKey struct{ reason, addr string }

type refusalEntry struct {
	since      time.Time // when it was last logged
	suppressed int
}

func newRefusalLog(logger *slog.Logger) *refusalLog {
	r := &refusalLog{logger: logger, now: time.Now}
	r.mu.seen = make(map[refusalKey]*refusalEntry)
	return r
}

// refuse logs msg with args for client address addr unless the same reason was
// logged for addr within the window. It reports whether it logged.
func (r *refusalLog) refuse(reason, addr, msg string, args ...any) bool {
	now := r.now()
	r.mu.Lock()
	k := refusalKey{reason, addr}
	e := r.mu.seen[k]
	if e != nil && now.Sub(e.since) < refusalLogWindow {
		e.suppressed++
		r.mu.Unlock()
		return false
	}
	if e == nil && len(r.mu.seen) >= maxRefusalKeys {
		for key, old := range r.mu.seen {
			if now.Sub(old.since) >= refusalLogWindow {
				delete(r.mu.seen, key)
			}
		}
		if len(r.mu.seen) >= maxRefusalKeys {
			r.mu.overflow++
			if now.Sub(r.mu.overLog) < refusalLogWindow {
				r.mu.Unlock()
				return false
			}
			n := r.mu.overflow
			r.mu.overflow, r.mu.overLog = 0, now
			r.mu.Unlock()
			r.logger.Warn("refusing requests or connections from too many addresses to log each",
				"reason", reason, "refusals", n, "addresses", maxRefusalKeys)
			return true
		}
	}
	suppressed := 0
	if e != nil {
		suppressed = e.suppressed
	}
	r.mu.seen[k] = &refusalEntry{since: now}
	r.mu.Unlock()
	args = append(args, "client", addr, "reason", reason)
	if suppressed > 0 {
		args = append(args, "refused_unlogged", suppressed, "unlogged_within", refusalLogWindow)
	}
	r.logger.Warn(msg, args...)
	return true
}

// hostOf returns the IP address of a connection's remote address, the key of the
// per-address limits.
func hostOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	s := a.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}
