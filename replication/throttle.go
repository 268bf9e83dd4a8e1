package replication

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Replication throttle (Kafka's replication quotas, KIP-73), on both sides.
// Follower: the replicas a topic lists in follower.replication.throttled.replicas
// ("partition:broker,..." or "*") fetch, while they are not in the ISR, at most
// follower.replication.throttled.rate bytes per second together on this broker.
// Leader: the partitions whose replica on this broker a topic lists in
// leader.replication.throttled.replicas answer followers not in the ISR at most
// leader.replication.throttled.rate bytes per second together; a fetch that
// finds that budget spent gets no data for them, and the bytes count when the
// answer is written (ReplicaSent), as Kafka records them. A reassignment's new
// replicas catch up at the lower of the two rates; replicas in sync are never
// held back, so acks=all producers are not either (nor, unlike Kafka, are their
// bytes counted).

// byteThrottle is the broker's byte budget of one side's throttled replicas:
// each byte moves a shared "next free" time 1/rate seconds ahead, and throttled
// replicas get no data while it is in the future. Unused time does not
// accumulate beyond throttleBurst, so a move after a quiet spell starts at the rate.
type byteThrottle struct {
	mu   sync.Mutex
	rate float64 // bytes per second; <= 0: no throttle
	next time.Time
}

const throttleBurst = 100 * time.Millisecond

// SetFollowerThrottleRate sets follower.replication.throttled.rate in bytes per
// second (0 or less: no limit).
func (m *Manager) SetFollowerThrottleRate(bytesPerSecond int64) { m.throttle.setRate(bytesPerSecond) }

// SetLeaderThrottleRate sets leader.replication.throttled.rate in bytes per
// second (0 or less: no limit).
func (m *Manager) SetLeaderThrottleRate(bytesPerSecond int64) {
	m.leaderThrottle.setRate(bytesPerSecond)
}

func (t *byteThrottle) setRate(bytesPerSecond int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rate = float64(bytesPerSecond)
}

// limits reports whether a rate is set.
func (t *byteThrottle) limits() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate > 0
}

// wait is how long throttled replicas must still wait; 0: they may fetch.
func (t *byteThrottle) wait(now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate <= 0 {
		return 0
	}
	return max(t.next.Sub(now), 0)
}

// partMaxBytes bounds a throttled replica's share of one fetch to a tenth of a
// second of the rate, so one answer does not overshoot the budget by much.
func (t *byteThrottle) partMaxBytes() int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate <= 0 {
		return fetchPartMaxBytes
	}
	return int32(min(max(t.rate/10, 1024), fetchPartMaxBytes))
}

// charge accounts for n bytes fetched by throttled replicas.
func (t *byteThrottle) charge(now time.Time, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate <= 0 || n <= 0 {
		return
	}
	if floor := now.Add(-throttleBurst); t.next.Before(floor) {
		t.next = floor
	}
	t.next = t.next.Add(time.Duration(float64(n) / t.rate * float64(time.Second)))
}

// throttledHere reports whether list (a throttled-replicas config) names
// partition p's replica on broker.
func throttledHere(list string, p, broker int32) bool {
	list = strings.TrimSpace(list)
	if list == "" { // most topics: no allocation on the fetch path
		return false
	}
	if list == "*" {
		return true
	}
	want := strconv.Itoa(int(p)) + ":" + strconv.Itoa(int(broker))
	return slices.ContainsFunc(strings.Split(list, ","), func(e string) bool { return strings.TrimSpace(e) == want })
}

// followerThrottled reports whether this replica's fetches are throttled now:
// the topic lists it and it is not in the ISR.
func (p *Partition) followerThrottled(broker int32) bool {
	return throttledHere(p.cfg.Load().FollowerThrottledReplicas, p.ID, broker) && !slices.Contains(p.ISR(), broker)
}

// leaderThrottleFor returns the leader's throttle when follower's fetches of
// this partition are throttled now: the topic lists this broker's replica in
// leader.replication.throttled.replicas and follower is not in the ISR; nil
// otherwise.
func (p *Partition) leaderThrottleFor(follower int32) *byteThrottle {
	// The topic's list first: it is empty for almost every partition, and
	// limits takes the broker-wide throttle's lock.
	if p.leaderThrottle == nil || !throttledHere(p.cfg.Load().LeaderThrottledReplicas, p.ID, p.self) || !p.leaderThrottle.limits() || slices.Contains(p.ISR(), follower) {
		return nil
	}
	return p.leaderThrottle
}

// LeaderThrottleWait is how long follower's fetches of this partition still
// get no data for the leader's replication throttle (0: not held back).
func (p *Partition) LeaderThrottleWait(follower int32) time.Duration {
	if t := p.leaderThrottleFor(follower); t != nil {
		return t.wait(time.Now())
	}
	return 0
}

// LeaderThrottleShare is how many record bytes of the partitions under the
// leader's replication throttle one answer to follower carries (a tenth of a
// second of the rate; the first batch goes whole), or 0 when this partition is
// not throttled for follower. A share per answer rather than per partition
// keeps the copy smooth: four partitions' batches at once came in 2 s steps.
func (p *Partition) LeaderThrottleShare(follower int32) int64 {
	if t := p.leaderThrottleFor(follower); t != nil {
		return int64(t.partMaxBytes())
	}
	return 0
}

// ReplicaSent records n record bytes of this partition answered to follower:
// they count against leader.replication.throttled.rate when follower is
// throttled. Kafka records them when the response is sent too; charging at the
// read counted bytes a fetch then dropped (KIP-74 sends only the first
// partition over its limit), and copied at 0.63-0.7 of the rate.
func (p *Partition) ReplicaSent(follower int32, n int64) {
	if t := p.leaderThrottleFor(follower); t != nil {
		t.charge(time.Now(), int(n))
	}
}
