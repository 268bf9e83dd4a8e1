package compaction

import (
	"context"
	"sync"
	"time"
)

// throttle holds the cleaner threads together to a rate of bytes read plus
// written (log.cleaner.io.max.bytes.per.second): each use of n bytes moves a
// shared "next free" time n/rate seconds ahead, and a caller that finds it in
// the future sleeps until then. Unused time does not accumulate beyond one
// second, so a burst after a quiet spell stays short.
type throttle struct {
	mu   sync.Mutex
	rate float64 // bytes per second; <= 0: unlimited
	next time.Time
}

func newThrottle(bytesPerSecond int64) *throttle { return &throttle{rate: float64(bytesPerSecond)} }

// setRate changes the rate from the next use on (0: unlimited).
func (t *throttle) setRate(bytesPerSecond int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rate = float64(bytesPerSecond)
}

// wait accounts for n bytes and sleeps as long as the rate requires; it returns
// early with ctx's error when ctx ends.
func (t *throttle) wait(ctx context.Context, n int) error {
	now := time.Now()
	t.mu.Lock()
	if t.rate <= 0 || n <= 0 {
		t.mu.Unlock()
		return ctx.Err()
	}
	if t.next.Before(now.Add(-time.Second)) {
		t.next = now.Add(-time.Second)
	}
	t.next = t.next.Add(time.Duration(float64(n) / t.rate * float64(time.Second)))
	until := t.next
	t.mu.Unlock()
	d := until.Sub(now)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
