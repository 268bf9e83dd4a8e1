package auth

// Delays of failed authentications: repeated failures from one address are
// answered later and later, so that guessing passwords is slow, while a good
// login is never delayed.

import (
	"sync"
	"time"
)

// Defaults of FailureDelays.
const (
	// DefaultFailureDelay is the delay of a first failure: Kafka's
	// connection.failed.authentication.delay.ms.
	DefaultFailureDelay = 100 * time.Millisecond
	// MaxFailureDelay caps the delay of repeated failures.
	MaxFailureDelay = time.Second
	// failureMemory is how long an address's failures count: after this long
	// without one, its next failure is a first one again.
	failureMemory = time.Minute
	// maxFailureAddrs bounds the addresses remembered; when they are all recent,
	// a new address is delayed as much as a repeated one (an attack from many
	// addresses at once).
	maxFailureAddrs = 10000
)

// FailureDelays remembers recent authentication failures per client address.
// Safe for concurrent use.
type FailureDelays struct {
	first, max time.Duration
	now        func() time.Time

	mu   sync.Mutex
	addr map[string]*failures
}

type failures struct {
	n    int
	last time.Time
}

// NewFailureDelays delays a first failure by first (0: DefaultFailureDelay),
// doubling with each failure from the same address within a minute of the last,
// up to MaxFailureDelay (or first, if larger).
func NewFailureDelays(first time.Duration) *FailureDelays {
	if first <= 0 {
		first = DefaultFailureDelay
	}
	return &FailureDelays{first: first, max: max(first, MaxFailureDelay), now: time.Now, addr: map[string]*failures{}}
}

// Failed records a failure from addr and returns how long to wait before
// answering it.
func (d *FailureDelays) Failed(addr string) time.Duration {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.addr[addr]
	if f != nil && now.Sub(f.last) >= failureMemory {
		f.n = 0
	}
	if f == nil {
		if len(d.addr) >= maxFailureAddrs {
			for a, old := range d.addr {
				if now.Sub(old.last) >= failureMemory {
					delete(d.addr, a)
				}
			}
			if len(d.addr) >= maxFailureAddrs {
				return d.max
			}
		}
		f = &failures{}
		d.addr[addr] = f
	}
	f.n++
	f.last = now
	delay := d.first << min(f.n-1, 20)
	return min(delay, d.max)
}
