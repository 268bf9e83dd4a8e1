// Package follow runs one background applier per followed partition of an
// internal topic: each keeps a local store current with its replica's committed
// records, waking whenever the replica's high watermark moves. The group and
// transaction coordinators use it, so that an election on this node only applies
// what came after.
package follow

import (
	"context"
	"sync"
	"time"
)

// Log is a local replica that wakes waiters when its committed records grow.
type Log interface {
	comparable
	AddWaiter(ch chan<- struct{})
	RemoveWaiter(ch chan<- struct{})
}

// Appliers keeps one applier goroutine per followed partition. Its zero value is
// not usable: set Apply (and Retry) first.
type Appliers[L Log] struct {
	// Apply brings partition id's store up to log's committed records. An error
	// makes the applier try again after Retry (or at the next wake).
	Apply func(id int32, log L) error
	// Retry is the pause after a failed Apply.
	Retry time.Duration

	mu      sync.Mutex
	closed  bool
	running map[int32]*applier[L]
}

type applier[L Log] struct {
	log    L
	cancel context.CancelFunc
	done   chan struct{}
}

// Follow starts applying partition id from log, replacing an applier of another
// log. Following with the same log again does nothing. allow, when not nil, is
// asked under the set's lock just before the applier is registered: a false
// answer (for example "this node now leads the partition") starts nothing, and
// a caller that changes that answer and then calls Unfollow cannot race it.
func (a *Appliers[L]) Follow(id int32, log L, allow func() bool) {
	a.mu.Lock()
	f := a.running[id]
	same := f != nil && f.log == log
	a.mu.Unlock()
	if same {
		return
	}
	a.Unfollow(id)
	ctx, cancel := context.WithCancel(context.Background())
	f = &applier[L]{log: log, cancel: cancel, done: make(chan struct{})}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.running[id] != nil || allow != nil && !allow() {
		cancel()
		return
	}
	if a.running == nil {
		a.running = make(map[int32]*applier[L])
	}
	a.running[id] = f
	go a.run(ctx, id, f)
}

// Unfollow stops applying partition id; it returns once the applier is done.
func (a *Appliers[L]) Unfollow(id int32) {
	a.mu.Lock()
	f := a.running[id]
	delete(a.running, id)
	a.mu.Unlock()
	if f != nil {
		f.cancel()
		<-f.done
	}
}

// Followed returns one more than the highest partition followed (0: none).
func (a *Appliers[L]) Followed() int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := int32(0)
	for id := range a.running {
		n = max(n, id+1)
	}
	return n
}

// Close stops every applier and refuses new ones. It is idempotent.
func (a *Appliers[L]) Close() {
	a.mu.Lock()
	a.closed = true
	ids := make([]int32, 0, len(a.running))
	for id := range a.running {
		ids = append(ids, id)
	}
	a.mu.Unlock()
	for _, id := range ids {
		a.Unfollow(id)
	}
}

func (a *Appliers[L]) run(ctx context.Context, id int32, f *applier[L]) {
	defer close(f.done)
	wake := make(chan struct{}, 1)
	f.log.AddWaiter(wake)
	defer f.log.RemoveWaiter(wake)
	for {
		var retry <-chan time.Time
		if err := a.Apply(id, f.log); err != nil {
			retry = time.After(a.Retry)
		}
		select {
		case <-wake:
		case <-retry:
		case <-ctx.Done():
			return
		}
	}
}
