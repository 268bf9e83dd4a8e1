package replication

import (
	"testing"
	"time"
)

func TestThrottledHere(t *testing.T) {
	for _, tc := range []struct {
		list      string
		p, broker int32
		want      bool
	}{
		{"*", 3, 7, true},
		{"", 0, 1, false},
		{"0:1,1:2", 1, 2, true},
		{"0:1, 1:2", 1, 2, true},
		{"0:1,1:2", 1, 1, false},
		{"10:1", 1, 1, false},
		{"0:11", 0, 1, false},
	} {
		if got := throttledHere(tc.list, tc.p, tc.broker); got != tc.want {
			t.Errorf("throttledHere(%q, %d, %d) = %v, want %v", tc.list, tc.p, tc.broker, got, tc.want)
		}
	}
}

// TestFollowerThrottleBudget: bytes charged at rate r hold throttled replicas
// back for bytes/r, a quiet spell gives at most throttleBurst of credit, and no
// rate holds nothing back.
func TestFollowerThrottleBudget(t *testing.T) {
	var th followerThrottle
	now := time.Unix(1000, 0)
	th.charge(now, 1<<20)
	if w := th.wait(now); w != 0 {
		t.Fatalf("wait %v without a rate", w)
	}
	th.rate = 1 << 20 // 1 MiB/s
	th.charge(now, 1<<20)
	if w := th.wait(now); w < 900*time.Millisecond || w > time.Second {
		t.Fatalf("after 1 MiB at 1 MiB/s: wait %v, want about 1s less the burst", w)
	}
	later := now.Add(time.Minute)
	if w := th.wait(later); w != 0 {
		t.Fatalf("a minute later: wait %v", w)
	}
	th.charge(later, 1<<19)
	if w := th.wait(later); w < 400*time.Millisecond || w > 500*time.Millisecond {
		t.Fatalf("after a quiet minute and 0.5 MiB: wait %v, want 0.5s less at most the 100ms burst", w)
	}
	if got := th.partMaxBytes(); got != (1<<20)/10 {
		t.Errorf("part max bytes %d, want a tenth of the rate", got)
	}
}
