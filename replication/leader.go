package replication

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/logstore"
)

// applyState brings the replica's role in line with the partition state from the
// metadata and returns the leader to fetch from, or -1 when this replica does not
// follow anyone.
func (p *Partition) applyState(s PartitionSpec) int32 {
	p.leaderBrokerEpoch.Store(s.LeaderBrokerEpoch)
	switch {
	case s.Leader == p.self:
		p.stateMu.Lock()
		same := p.st.role == roleLeader && p.leaderEpoch.Load() == s.LeaderEpoch
		if same {
			// The same leadership: take the newer ISR (the controller may have removed
			// a member, or this leader's own change came back through the metadata),
			// and the current replicas (a reassignment adds and removes them).
			if s.PartitionEpoch > p.st.partitionEpoch {
				p.st.isr, p.st.partitionEpoch = slices.Clone(s.ISR), s.PartitionEpoch
			}
			p.st.replicas = slices.Clone(s.Replicas)
			now := time.Now()
			for _, r := range s.Replicas {
				if r != p.self && p.st.followers[r] == nil {
					p.st.followers[r] = &followerProgress{leo: -1, logStart: -1, lastCaughtUp: now, lastFetchTime: now}
				}
			}
			for r := range p.st.followers {
				if !slices.Contains(s.Replicas, r) {
					delete(p.st.followers, r)
				}
			}
			p.stateMu.Unlock()
			p.maybeAdvanceHW()
			return -1
		}
		p.stateMu.Unlock()
		p.becomeLeader(s)
		return -1
	case s.Leader < 0:
		p.stateMu.Lock()
		p.st = replicaState{role: roleNone, leaderID: -1, replicas: slices.Clone(s.Replicas), isr: slices.Clone(s.ISR), partitionEpoch: s.PartitionEpoch}
		p.stateMu.Unlock()
		p.leader.Store(false)
		p.leaderEpoch.Store(s.LeaderEpoch)
		p.notify()
		return -1
	default:
		p.stateMu.Lock()
		changed := p.st.role != roleFollower || p.st.leaderID != s.Leader || p.leaderEpoch.Load() != s.LeaderEpoch
		if changed {
			p.st = replicaState{role: roleFollower, leaderID: s.Leader, needTruncate: true}
		}
		p.st.replicas, p.st.isr, p.st.partitionEpoch = slices.Clone(s.Replicas), slices.Clone(s.ISR), s.PartitionEpoch
		p.stateMu.Unlock()
		if changed {
			p.leader.Store(false)
			p.leaderEpoch.Store(s.LeaderEpoch)
			p.logger.Info("following", "leader", s.Leader, "leader_epoch", s.LeaderEpoch)
			p.notify()
		}
		return s.Leader
	}
}

// becomeLeader starts leading at s.LeaderEpoch: the epoch begins at the current log
// end, every follower is given a full lag period to catch up.
func (p *Partition) becomeLeader(s PartitionSpec) {
	p.appendMu.Lock()
	p.epochs.assignUnsaved(s.LeaderEpoch, p.log.LogEndOffset()) // saved by the first append of the epoch
	p.leaderStart.Store(p.log.LogEndOffset())
	p.appendMu.Unlock()
	now := time.Now()
	p.stateMu.Lock()
	p.st = replicaState{
		role: roleLeader, leaderID: p.self, replicas: slices.Clone(s.Replicas),
		isr: slices.Clone(s.ISR), partitionEpoch: s.PartitionEpoch,
		followers: make(map[int32]*followerProgress),
	}
	for _, r := range s.Replicas {
		if r != p.self {
			p.st.followers[r] = &followerProgress{leo: -1, logStart: -1, lastCaughtUp: now, lastFetchTime: now}
		}
	}
	p.stateMu.Unlock()
	p.leaderEpoch.Store(s.LeaderEpoch)
	p.leader.Store(true)
	p.logger.Info("leading", "leader_epoch", s.LeaderEpoch, "isr", s.ISR, "log_end_offset", p.log.LogEndOffset(), "high_watermark", p.hw.Load())
	p.maybeAdvanceHW()
	p.requestSync() // under flush.policy=always the high watermark waits for the log to be synced
	p.notify()
}

// maybeAdvanceHW moves a leader's high watermark to the lowest log end offset of
// its ISR (its own counted as ownEnd: under flush.policy=always, what it synced).
// It never moves back.
func (p *Partition) maybeAdvanceHW() {
	p.stateMu.Lock()
	if p.st.role != roleLeader {
		p.stateMu.Unlock()
		return
	}
	hw := p.ownEnd()
	for _, r := range p.st.isr {
		if r == p.self {
			continue
		}
		f := p.st.followers[r]
		if f == nil || f.leo < 0 {
			hw = min(hw, p.hw.Load())
			continue
		}
		hw = min(hw, f.leo)
	}
	moved := hw > p.hw.Load()
	if moved {
		p.hw.Store(hw)
	}
	p.stateMu.Unlock()
	if moved {
		p.notifyCommitted()
	}
}

// ReadReplica serves a follower's fetch at fetchOffset: the fetch offset is the
// follower's log end offset, which moves the high watermark and the follower's ISR
// standing, and logStart its log start offset (-1: unknown; DeleteRecords waits
// for it); records come up to this leader's log end. currentEpoch (-1: unchecked)
// must be this leader's epoch.
func (p *Partition) ReadReplica(follower int32, currentEpoch int32, fetchOffset, logStart, maxBytes int64) (*logstore.Slice, error) {
	if !p.IsLeader() {
		return nil, fmt.Errorf("%s-%d is not led by this broker: %w", p.Topic, p.ID, kerr.NotLeaderForPartition)
	}
	if ours := p.leaderEpoch.Load(); currentEpoch >= 0 && currentEpoch != ours {
		if currentEpoch < ours {
			return nil, fmt.Errorf("follower epoch %d, leader epoch %d: %w", currentEpoch, ours, kerr.FencedLeaderEpoch)
		}
		return nil, fmt.Errorf("follower epoch %d, leader epoch %d: %w", currentEpoch, ours, kerr.UnknownLeaderEpoch)
	}
	leo := p.log.LogEndOffset()
	if fetchOffset > leo || fetchOffset < p.log.LogStartOffset() {
		return nil, fmt.Errorf("follower fetch at %d outside [%d, %d]: %w", fetchOffset, p.log.LogStartOffset(), leo, kerr.OffsetOutOfRange)
	}
	if err := p.updateFollower(follower, fetchOffset, logStart, leo); err != nil {
		return nil, err
	}
	if fetchOffset == leo {
		return &logstore.Slice{NextOffset: fetchOffset}, nil
	}
	t := p.leaderThrottleFor(follower)
	if t == nil {
		return p.read(fetchOffset, maxBytes, leo)
	}
	if t.wait(time.Now()) > 0 {
		// Over leader.replication.throttled.rate: no data for now, as Kafka
		// answers a throttled replica.
		return &logstore.Slice{NextOffset: fetchOffset}, nil
	}
	// The bytes count when the answer is sent (ReplicaSent), as Kafka records
	// them: a fetch may still leave this read out.
	return p.read(fetchOffset, min(maxBytes, int64(t.partMaxBytes())), leo)
}

// updateFollower records a follower's fetch: its log end offset and log start
// offset, whether it is caught up (Kafka's rule: caught up now if it reached the
// leader's log end, or at its previous fetch if it reached the log end the leader
// had then), and a request to add it to the ISR once it has everything up to the
// high watermark.
func (p *Partition) updateFollower(id int32, fetchOffset, logStart, leo int64) error {
	now := time.Now()
	p.stateMu.Lock()
	f := p.st.followers[id]
	if p.st.role != roleLeader || f == nil {
		p.stateMu.Unlock()
		return fmt.Errorf("broker %d is not a replica of %s-%d: %w", id, p.Topic, p.ID, kerr.NotLeaderForPartition)
	}
	switch {
	case fetchOffset >= leo:
		f.lastCaughtUp = now
	case fetchOffset >= f.lastFetchLEO && f.lastFetchTime.After(f.lastCaughtUp):
		f.lastCaughtUp = f.lastFetchTime
	}
	f.leo, f.lastFetchLEO, f.lastFetchTime = fetchOffset, leo, now
	startMoved := logStart != f.logStart
	f.logStart = logStart
	p.stateMu.Unlock()
	p.maybeAdvanceHW()
	if startMoved {
		p.notifyCommitted() // a DeleteRecords may wait for it
	}
	return nil
}

// isrChange returns the ISR this leader wants now and whether it differs from the
// current one: followers behind for longer than lagMax leave; followers that have
// every record up to the high watermark, and up to the start of this leader's epoch,
// join. It returns the partition epoch the change applies to.
func (p *Partition) isrChange(now time.Time, lagMax time.Duration) (isr []int32, partitionEpoch int32, ok bool) {
	if !p.IsLeader() {
		return nil, 0, false
	}
	_, epochStart := p.epochStart()
	hw := p.hw.Load()
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	if p.st.role != roleLeader || p.st.isrChanging {
		return nil, 0, false
	}
	next := []int32{}
	for _, r := range p.st.replicas {
		if r == p.self {
			next = append(next, r)
			continue
		}
		f := p.st.followers[r]
		if f == nil {
			continue
		}
		in := slices.Contains(p.st.isr, r)
		switch {
		case in && now.Sub(f.lastCaughtUp) <= lagMax:
			next = append(next, r)
		case !in && f.leo >= hw && f.leo >= epochStart && now.Sub(f.lastCaughtUp) <= lagMax:
			next = append(next, r)
		}
	}
	if sameSet(next, p.st.isr) {
		return nil, 0, false
	}
	p.st.isrChanging = true
	return next, p.st.partitionEpoch, true
}

// isrChanged records the outcome of writing an ISR change: on success the new ISR
// and partition epoch take effect at once (the write was a compare-and-swap on the
// partition epoch, so it is the truth); on failure the metadata will tell.
func (p *Partition) isrChanged(isr []int32, partitionEpoch int32, ok bool) {
	p.stateMu.Lock()
	p.st.isrChanging = false
	if ok && p.st.role == roleLeader {
		p.st.isr, p.st.partitionEpoch = isr, partitionEpoch
	}
	p.stateMu.Unlock()
	p.maybeAdvanceHW()
	p.notify()
}

// epochStart returns the current leader epoch and the offset where it started.
func (p *Partition) epochStart() (int32, int64) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if n := len(p.epochs.entries); n > 0 {
		e := p.epochs.entries[n-1]
		return e.epoch, e.startOffset
	}
	return -1, 0
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
