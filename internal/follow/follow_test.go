package follow

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"skiff/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// fakeLog wakes its waiters when commit is called.
type fakeLog struct {
	mu      sync.Mutex
	waiters map[chan<- struct{}]bool
}

func newLog() *fakeLog { return &fakeLog{waiters: map[chan<- struct{}]bool{}} }

func (l *fakeLog) AddWaiter(ch chan<- struct{})    { l.mu.Lock(); l.waiters[ch] = true; l.mu.Unlock() }
func (l *fakeLog) RemoveWaiter(ch chan<- struct{}) { l.mu.Lock(); delete(l.waiters, ch); l.mu.Unlock() }
func (l *fakeLog) commit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
func (l *fakeLog) waiting() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.waiters) }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAppliers(t *testing.T) {
	var applied [2]atomic.Int32
	var fail atomic.Bool
	a := &Appliers[*fakeLog]{Retry: time.Millisecond}
	a.Apply = func(id int32, _ *fakeLog) error {
		applied[id].Add(1)
		if fail.Load() {
			return errors.New("disk")
		}
		return nil
	}
	l0, l1 := newLog(), newLog()

	a.Follow(0, l0, nil)
	waitFor(t, "the first apply", func() bool { return applied[0].Load() == 1 && l0.waiting() == 1 })
	a.Follow(0, l0, nil) // the same log: nothing new
	l0.commit()
	waitFor(t, "the apply after a commit", func() bool { return applied[0].Load() == 2 })
	if l0.waiting() != 1 {
		t.Fatalf("%d appliers wait on one log", l0.waiting())
	}

	a.Follow(1, l1, func() bool { return false })
	if a.Followed() != 1 || l1.waiting() != 0 {
		t.Fatalf("a refused follow started: followed %d, waiting %d", a.Followed(), l1.waiting())
	}

	// A failed apply is retried without a wake.
	fail.Store(true)
	l0.commit()
	waitFor(t, "retries", func() bool { return applied[0].Load() >= 5 })
	fail.Store(false)

	// Another log replaces the applier.
	a.Follow(0, l1, nil)
	if l0.waiting() != 0 {
		t.Fatal("the replaced applier still waits on its log")
	}
	waitFor(t, "the new applier", func() bool { return l1.waiting() == 1 })

	a.Close()
	if a.Followed() != 0 || l1.waiting() != 0 {
		t.Fatal("Close left an applier running")
	}
	a.Follow(2, l0, nil)
	if a.Followed() != 0 {
		t.Fatal("Follow after Close started an applier")
	}
}
