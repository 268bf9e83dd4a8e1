package auth

import (
	"strconv"
	"testing"
	"time"
)

func TestFailureDelays(t *testing.T) {
	now := time.Unix(1000, 0)
	d := NewFailureDelays(100 * time.Millisecond)
	d.now = func() time.Time { return now }
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := d.Failed("10.0.0.1"); got != w*time.Millisecond {
			t.Errorf("failure %d: delay %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	if got := d.Failed("10.0.0.2"); got != 100*time.Millisecond {
		t.Errorf("another address: %v", got)
	}
	now = now.Add(time.Minute)
	if got := d.Failed("10.0.0.1"); got != 100*time.Millisecond {
		t.Errorf("a minute later: %v, want a first failure's delay", got)
	}
	// Memory is bounded: with every slot taken by recent failures, a new address
	// gets the longest delay; once they are old, they make room.
	for i := range maxFailureAddrs {
		d.Failed("addr-" + strconv.Itoa(i))
	}
	if got := d.Failed("new"); got != MaxFailureDelay || len(d.addr) > maxFailureAddrs {
		t.Errorf("full: %v with %d addresses", got, len(d.addr))
	}
	now = now.Add(2 * time.Minute)
	if got := d.Failed("new"); got != 100*time.Millisecond || len(d.addr) != 1 {
		t.Errorf("after the old ones expired: %v with %d addresses", got, len(d.addr))
	}
}
