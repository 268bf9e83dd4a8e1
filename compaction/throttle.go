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
	rate float64 // bytes per second; <= 0: unlimited

	mu   sync.Mutex
	next time.Time
}

func newThrottle(bytesPerSecond int64) *throttle { return &throttle{rate: float64(bytesPerSecond)} }

// wait accounts for n bytes and sleeps as long as the rate requires; it returns
// early with ctx's error when ctx ends.
func (t *throttle) wait(ctx context.Context, n int) error {
	if t.rate <= 0 || n <= 0 {
		return ctx.Err()
	}
	now := time.Now()
	t.mu.Lock()
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
