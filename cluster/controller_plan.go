package cluster

import (
	"slices"
)

// leaderChange is one partition state the controller wants to write.
type leaderChange struct {
	topic     string
	partition int32
	expected  int32 // partition epoch the change applies to
	next      PartitionState
	prev      PartitionState // the state the change replaces, for the log
	reason    string
}

// planLeaders decides leadership from one metadata snapshot, as the controller does.
// An ISR member counts as in sync only while its broker is live under the same
// registration (broker epoch) it was admitted with: a broker that restarted may have
// lost records, so it must catch up and be admitted again (KIP-903).
//   - a partition whose leader has no session, or has restarted, gets a new
//     leader from its in-sync members (replica order, so the preferred replica first),
//     with the next leader epoch;
//   - with none, a live ISR member that restarted is elected (a whole cluster
//     restarted, or the partition's only replica did), since it is the best copy left;
//   - with none of those the partition goes offline (leader -1, next epoch), unless
//     unclean.leader.election.enable lets a live out-of-sync replica lead (ISR reset to
//     it: records only the old ISR had are lost, which is what that setting accepts);
//   - members that are not in sync any more leave the ISR, unless it would be empty
//     (the last member stays, so it can lead again when it returns, as Kafka keeps it);
//   - with rebalance set, a partition whose preferred replica (the first of its
//     assignment) is in sync but does not lead moves back to it.
//
// An election asked for a partition (ElectLeaders, elections.go) plans it as if
// rebalance were set (preferred) or unclean.leader.election.enable were on
// (unclean).
func planLeaders(snap *Snapshot, rebalance bool) []leaderChange {
	var out []leaderChange
	for _, t := range snap.Topics() {
		// The topic's own value, else the one set at runtime for every broker (the
		// controller decides for the cluster, not for one broker).
		unclean := ConfigBool(EffectiveTopicConfig(t, BrokerDefaults{Cluster: snap.BrokerConfigs(ClusterDefault)}, ConfigUncleanLeaderElect))
		for p, replicas := range t.Assignment {
			st, ok := snap.Partition(t.Name, int32(p))
			if !ok {
				continue
			}
			asked, marked := snap.electionAsked(t.Name, int32(p))
			if ch, ok := planPartition(snap, st, replicas, unclean || marked && asked == ElectUnclean, rebalance || marked && asked == ElectPreferred); ok {
				ch.topic, ch.partition, ch.expected, ch.prev = t.Name, int32(p), st.PartitionEpoch, st
				out = append(out, ch)
			}
		}
	}
	return out
}

func planPartition(snap *Snapshot, st PartitionState, replicas []int32, unclean, rebalance bool) (leaderChange, bool) {
	live := func(b int32) bool { _, ok := snap.brokers[b]; return ok }
	inSync := func(b int32) bool { return snap.inSync(st, b) }
	epochs := func(b int32) int64 {
		if inSync(b) && st.EpochOf(b) != 0 {
			return st.EpochOf(b)
		}
		return snap.BrokerEpoch(b)
	}
	// The ISR without members that are not in sync any more (never empty).
	kept := slices.DeleteFunc(slices.Clone(st.ISR), func(b int32) bool { return !inSync(b) })
	shrunk := func(keepAlso int32) []int32 {
		isr := kept
		if keepAlso != NoLeader && !slices.Contains(isr, keepAlso) {
			isr = append(slices.Clone(isr), keepAlso)
		}
		if len(isr) == 0 {
			return slices.Clone(st.ISR)
		}
		return isr
	}
	var ch leaderChange
	next := st
	switch {
	case st.Leader != NoLeader && inSync(st.Leader):
		if len(kept) < len(st.ISR) {
			// Same leader and epoch; members without a session or with a new one leave.
			ch.reason, ch.next = "in-sync replicas restarted or without a session", st.WithISR(kept, epochs)
			return ch, true
		}
		if !rebalance || len(replicas) == 0 || replicas[0] == st.Leader || !inSync(replicas[0]) {
			return ch, false
		}
		next.Leader, ch.reason = replicas[0], "preferred replica is in sync"
		next = next.WithISR(st.ISR, epochs)
	default:
		cand := NoLeader
		for _, r := range replicas {
			if inSync(r) {
				cand = r
				break
			}
		}
		if cand == NoLeader {
			for _, r := range replicas {
				if live(r) && slices.Contains(st.ISR, r) {
					cand, ch.reason = r, "only restarted in-sync replicas are left"
					break
				}
			}
		}
		switch {
		case cand != NoLeader:
			if ch.reason == "" {
				ch.reason = "leader has no session or restarted"
				if st.Leader == NoLeader {
					ch.reason = "an in-sync replica is back"
				}
			}
			next.Leader = cand
			next = next.WithISR(shrunk(cand), snap.BrokerEpoch)
			if !inSync(cand) {
				// The restarted member is the best copy left: stamp its new registration.
				next = next.WithISR(next.ISR, func(b int32) int64 {
					if b == cand {
						return snap.BrokerEpoch(b)
					}
					return epochs(b)
				})
			} else {
				next = next.WithISR(next.ISR, epochs)
			}
		case unclean:
			for _, r := range replicas {
				if live(r) {
					cand = r
					break
				}
			}
			if cand == NoLeader {
				if st.Leader == NoLeader {
					return ch, false
				}
				next.Leader, ch.reason = NoLeader, "no live replica"
			} else {
				next.Leader, ch.reason = cand, "unclean election of an out-of-sync replica"
				next = next.WithISR([]int32{cand}, snap.BrokerEpoch)
			}
		default:
			if st.Leader == NoLeader {
				return ch, false // offline, and stays so until an ISR member returns
			}
			next.Leader, ch.reason = NoLeader, "no live in-sync replica"
		}
	}
	next.LeaderEpoch = st.LeaderEpoch + 1
	ch.next = next
	return ch, true
}

// inSync reports whether broker b is in st's ISR and live under the registration
// (broker epoch) it was admitted with.
func (s *Snapshot) inSync(st PartitionState, b int32) bool {
	_, live := s.brokers[b]
	e := st.EpochOf(b)
	return live && slices.Contains(st.ISR, b) && (e == 0 || e == s.BrokerEpoch(b))
}
