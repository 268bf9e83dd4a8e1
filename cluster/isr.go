package cluster

import "slices"

// ProposeISR is the partition state a leader (self, in sync under registration
// selfEpoch) writes for the ISR it wants, given st, the state it leads under, and
// brokerEpoch, the epoch of each broker's registration as its metadata shows it (0:
// not registered). Members are stamped with the registration they are in sync
// under: kept ones keep theirs, admitted ones get their current one (Kafka's
// KIP-903).
//
// A replica whose registration the leader has not seen (epoch 0: its session
// lapsed, or the watch has not delivered it yet) is not admitted: the controller
// would drop it again at once as a restarted broker, and the ISR would flap. It is
// admitted on a later try. changed is false when the ISR left to write is st's:
// the replicas of isr missing from st.ISR wait for their registration.
func ProposeISR(st PartitionState, self int32, selfEpoch int64, isr []int32, brokerEpoch func(int32) int64) (next PartitionState, changed bool) {
	keep := make([]int32, 0, len(isr))
	epochs := make(map[int32]int64, len(isr))
	for _, b := range isr {
		var e int64
		switch {
		case b == self:
			e = selfEpoch
		case slices.Contains(st.ISR, b):
			if e = st.EpochOf(b); e == 0 {
				e = brokerEpoch(b) // a state written before broker epochs
			}
		default:
			if e = brokerEpoch(b); e == 0 {
				continue
			}
		}
		keep = append(keep, b)
		epochs[b] = e
	}
	if slices.Equal(slices.Sorted(slices.Values(keep)), slices.Sorted(slices.Values(st.ISR))) {
		return st, false
	}
	next = PartitionState{Leader: self, LeaderEpoch: st.LeaderEpoch}
	return next.WithISR(keep, func(b int32) int64 { return epochs[b] }), true
}
