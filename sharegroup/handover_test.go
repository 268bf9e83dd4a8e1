package sharegroup

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// testClock is a clock moved by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestHandOverLeavesOutEndedLocks: a ShareFetch answer that waited longer than a
// lock (its acknowledgements' write was slow) carries only the records its
// member still holds, and their locks restart from the answer; a record whose
// lock ended meanwhile and that another member acquired is not handed out twice.
// A share-partition no longer led here hands over nothing.
func TestHandOverLeavesOutEndedLocks(t *testing.T) {
	defer goleak.VerifyNone(t)
	clock := &testClock{now: time.Unix(1_000_000, 0)}
	const lock = 3 * time.Second
	store := &flakyStore{state: State{StartOffset: 0, Runs: []Run{{First: 0, Last: 3, State: stateAvailable, Count: 1}}}}
	deposed := new(atomic.Bool)
	log := movingLog{deposed: deposed}
	m := NewManager(Config{Store: store, Clock: clock.Now, RecordLockDuration: lock})
	sp := m.partition(Key{Group: "g", Partition: 0}, "t", log)
	if code := sp.waitLoaded(context.Background()); code != 0 {
		t.Fatalf("load answered %d", code)
	}
	a, code := sp.acquire("a", 2, 1<<20) // offsets 0 and 1, for a
	if code != 0 || len(a.Ranges) != 1 || a.Ranges[0] != (AcquiredRange{First: 0, Last: 1, Count: 2}) {
		t.Fatalf("a acquired %+v, %d", a.Ranges, code)
	}
	clock.advance(lock / 2)
	b, code := sp.acquire("b", 2, 1<<20) // offsets 2 and 3, for b
	if code != 0 || len(b.Ranges) != 1 || b.Ranges[0].First != 2 {
		t.Fatalf("b acquired %+v, %d", b.Ranges, code)
	}
	clock.advance(lock/2 + time.Millisecond) // a's locks ended, b's hold
	c, code := sp.acquire("c", 2, 1<<20)     // a's records, for c
	if code != 0 || len(c.Ranges) != 1 || c.Ranges[0] != (AcquiredRange{First: 0, Last: 1, Count: 3}) {
		t.Fatalf("c acquired %+v, %d, want a's records at count 3", c.Ranges, code)
	}

	if got := sp.handOver("a", a.Ranges); len(got) != 0 {
		t.Fatalf("a's answer would carry %+v, records c holds now", got)
	}
	if got := sp.handOver("b", b.Ranges); len(got) != 1 || got[0] != b.Ranges[0] {
		t.Fatalf("b's answer would carry %+v, want %+v", got, b.Ranges)
	}
	sp.mu.Lock()
	d := sp.mu.w.at(2).deadline
	sp.mu.Unlock()
	if want := clock.Now().Add(lock); !d.Equal(want) {
		t.Fatalf("b's lock ends at %v, want %v (restarted by the answer)", d, want)
	}
	deposed.Store(true)
	if got := sp.handOver("c", c.Ranges); len(got) != 0 {
		t.Fatalf("a deposed share-partition would hand over %+v", got)
	}
}
