package groups

import "time"

// Clock is the coordinator's time source: session and rebalance timeouts, the
// initial rebalance delay and offset expiry are timers on it. Tests use a fake one
// to step through timeouts without sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// stopTimer stops t if it is set.
func stopTimer(t Timer) {
	if t != nil {
		t.Stop()
	}
}
