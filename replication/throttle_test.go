package replication

import (
	"strings"
	"testing"
	"time"

	"skiff/internal/batchtest"
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
	var th byteThrottle
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

// TestLeaderThrottle: a leader answers a follower not in the ISR, for a
// partition leader.replication.throttled.replicas lists on it, until the bytes
// sent to it (ReplicaSent) spend its leader.replication.throttled.rate budget,
// then with no data; a read that was not sent costs nothing; a follower in the
// ISR, or no rate, is never held back.
func TestLeaderThrottle(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	s := spec("t", 1, 1)
	s.Config.LeaderThrottledReplicas = "0:0" // partition 0's replica on broker 0, the leader
	s.Partitions[0].Replicas, s.Partitions[0].ISR = []int32{0, 1}, []int32{0}
	if err := m.Apply(1, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	for range 4 {
		if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, strings.Repeat("x", 10_000)), 1); err != nil {
			t.Fatal(err)
		}
	}
	// read is follower 1's fetch at offset 0: the record bytes it gets.
	read := func() int64 {
		t.Helper()
		sl, err := p.ReadReplica(1, 0, 0, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer sl.Release()
		return sl.Bytes
	}
	if got := read(); got < 40_000 {
		t.Fatalf("without a rate the follower read %d B, want all 4 batches", got)
	}
	m.SetLeaderThrottleRate(10_000) // 10 kB/s: a fetch takes a tenth of a second of it, at least one batch
	first := read()
	if first <= 0 || first >= 20_000 {
		t.Fatalf("throttled follower's first fetch read %d B, want one batch", first)
	}
	if got := read(); got != first {
		t.Fatalf("a fetch after one whose data was not sent read %d B, want %d: unsent bytes must not count", got, first)
	}
	if w := p.LeaderThrottleWait(1); w != 0 {
		t.Fatalf("nothing sent yet, but the follower waits %v", w)
	}
	if got := p.LeaderThrottleShare(1); got != 1024 {
		t.Fatalf("one answer's share of a 10 kB/s throttle is %d B, want a tenth of a second (at least 1 KiB)", got)
	}
	p.ReplicaSent(1, first)
	if got := read(); got != 0 {
		t.Fatalf("throttled follower's fetch over the budget read %d B, want none", got)
	}
	if w := p.LeaderThrottleWait(1); w < 500*time.Millisecond {
		t.Fatalf("after a 10 kB batch sent at 10 kB/s the budget is free again in %v, want about 1s less the burst", w)
	}
	s.Partitions[0].ISR, s.Partitions[0].PartitionEpoch = []int32{0, 1}, 1
	if err := m.Apply(2, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	if got := read(); got < 40_000 {
		t.Fatalf("a follower in the ISR read %d B while the budget was spent, want all 4 batches", got)
	}
	if w, share := p.LeaderThrottleWait(1), p.LeaderThrottleShare(1); w != 0 || share != 0 {
		t.Fatalf("a follower in the ISR waits %v, its answers' share is %d B; want neither", w, share)
	}
	before := m.leaderThrottle.wait(time.Now())
	p.ReplicaSent(1, 1<<20)
	if after := m.leaderThrottle.wait(time.Now()); after > before {
		t.Fatalf("bytes sent to a follower in the ISR moved the budget from %v to %v", before, after)
	}
}

// TestThrottledHereEmptyListFree: the check runs for every partition of every
// follower fetch; a topic without a throttled-replicas list costs no allocation.
func TestThrottledHereEmptyListFree(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { throttledHere("", 3, 2) }); n != 0 {
		t.Fatalf("%v allocations for an empty list", n)
	}
	if !throttledHere("1:1, 3:2", 3, 2) || throttledHere("1:1", 3, 2) || !throttledHere(" * ", 0, 9) {
		t.Fatal("throttledHere answers wrong")
	}
}
