package cluster

import (
	"slices"
	"strconv"
)

// leaderChange is one partition state the controller wants to write.
type leaderChange struct {
	topic     string
	partition int32
	expected  int32 // partition epoch the change applies to
	next      PartitionState
	reason    string
}

// planLeaders decides leadership from one metadata snapshot, as the controller does:
//   - a partition whose leader has no live session gets a new leader from its ISR
//     (replica order, so the preferred replica first), with the next leader epoch; the
//     dead leader leaves the ISR unless it is the last member (then it stays, so it can
//     lead again when it returns, as Kafka keeps the last ISR member);
//   - with no live ISR member the partition goes offline (leader -1, next epoch), unless
//     unclean.leader.election.enable lets a live out-of-sync replica lead (ISR reset to
//     it: records only the old ISR had are lost, which is what that setting accepts);
//   - an offline partition whose ISR member is back gets it as leader;
//   - a live leader's ISR loses the brokers that have no session, at the same leader
//     epoch (KRaft's controller does the same for fenced brokers);
//   - with rebalance set, a partition whose preferred replica (the first of its
//     assignment) is live and in the ISR but does not lead moves back to it.
func planLeaders(snap *Snapshot, rebalance bool) []leaderChange {
	live := make(map[int32]bool)
	for _, b := range snap.Brokers() {
		live[b.ID] = true
	}
	var out []leaderChange
	for _, t := range snap.Topics() {
		unclean, _ := strconv.ParseBool(EffectiveTopicConfig(t, nil, ConfigUncleanLeaderElect))
		for p, replicas := range t.Assignment {
			st, ok := snap.Partition(t.Name, int32(p))
			if !ok {
				continue
			}
			ch := leaderChange{topic: t.Name, partition: int32(p), expected: st.PartitionEpoch}
			next := PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: slices.Clone(st.ISR)}
			switch {
			case st.Leader != NoLeader && live[st.Leader]:
				if dead := slices.DeleteFunc(slices.Clone(next.ISR), func(b int32) bool { return live[b] }); len(dead) > 0 {
					// Brokers without a session leave the ISR at once (as KRaft's
					// controller fences them), so acks=all does not wait a whole
					// replica lag period for them; the leader keeps its epoch.
					next.ISR = slices.DeleteFunc(next.ISR, func(b int32) bool { return !live[b] })
					ch.reason, ch.next = "in-sync replicas without a session", next
					out = append(out, ch)
					continue
				}
				if !rebalance || len(replicas) == 0 || replicas[0] == st.Leader ||
					!live[replicas[0]] || !slices.Contains(st.ISR, replicas[0]) {
					continue
				}
				next.Leader, ch.reason = replicas[0], "preferred replica is back"
			default:
				cand := NoLeader
				for _, r := range replicas {
					if live[r] && slices.Contains(st.ISR, r) {
						cand = r
						break
					}
				}
				switch {
				case cand != NoLeader:
					next.Leader, ch.reason = cand, "leader has no session"
					if st.Leader == NoLeader {
						ch.reason = "an in-sync replica is back"
					}
				case unclean:
					for _, r := range replicas {
						if live[r] {
							cand = r
							break
						}
					}
					if cand == NoLeader {
						if st.Leader == NoLeader {
							continue
						}
						next.Leader, ch.reason = NoLeader, "no live replica"
					} else {
						next.Leader, next.ISR, ch.reason = cand, []int32{cand}, "unclean election of an out-of-sync replica"
					}
				default:
					if st.Leader == NoLeader {
						continue // offline, and stays so until an ISR member returns
					}
					next.Leader, ch.reason = NoLeader, "no live in-sync replica"
				}
				// The dead leader leaves the ISR unless it is its last member.
				if st.Leader != NoLeader && !live[st.Leader] && len(next.ISR) > 1 && next.Leader != NoLeader {
					next.ISR = slices.DeleteFunc(next.ISR, func(b int32) bool { return b == st.Leader })
				}
			}
			next.LeaderEpoch = st.LeaderEpoch + 1
			ch.next = next
			out = append(out, ch)
		}
	}
	return out
}
