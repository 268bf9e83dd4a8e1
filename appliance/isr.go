package appliance

import (
	"context"
	"fmt"
	"slices"

	"skiff/cluster"
	"skiff/replication"
)

// alterISR writes a leader's ISR change with a compare-and-swap on the partition
// epoch (Kafka's AlterPartition): it fails if the controller or another leader
// changed the partition meanwhile. It returns the ISR it wrote, which can lack
// members the leader proposed (see proposeISR).
func (n *Node) alterISR(ctx context.Context, topic string, partition, partitionEpoch int32, isr []int32) ([]int32, int32, error) {
	st, ok := n.cache.Partition(topic, partition)
	if !ok {
		return nil, 0, fmt.Errorf("no state for %s-%d", topic, partition)
	}
	if st.Leader != n.id || st.PartitionEpoch != partitionEpoch {
		return nil, 0, fmt.Errorf("%s-%d moved on (leader %d, partition epoch %d)", topic, partition, st.Leader, st.PartitionEpoch)
	}
	snap := n.cache.Snapshot()
	next, err := proposeISR(st, n.id, n.selfEpoch(), isr, snap.BrokerEpoch)
	if err != nil {
		return nil, 0, fmt.Errorf("%s-%d: %w", topic, partition, err)
	}
	done, rev, err := n.store.AlterPartition(ctx, topic, partition, partitionEpoch, next)
	if err != nil {
		return nil, 0, err
	}
	if err := n.cache.WaitRevision(ctx, rev); err != nil {
		return nil, 0, err
	}
	return done.ISR, done.PartitionEpoch, nil
}

// proposeISR is the partition state a leader (self, in sync under registration
// selfEpoch) writes for the ISR it wants. Members are stamped with the
// registration they are in sync under: kept ones keep theirs, admitted ones get
// their current one. A replica whose registration this node has not seen (epoch
// 0: its session lapsed, or the watch has not delivered it yet) is not admitted:
// the controller would drop it again at once as a restarted broker, and the ISR
// would flap. It is admitted on a later try. When nothing is left to change the
// error wraps replication.ErrISRUnchanged.
func proposeISR(st cluster.PartitionState, self int32, selfEpoch int64, isr []int32, brokerEpoch func(int32) int64) (cluster.PartitionState, error) {
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
		return st, fmt.Errorf("%w: replicas %v have no broker registration yet", replication.ErrISRUnchanged, without(isr, keep))
	}
	next := cluster.PartitionState{Leader: self, LeaderEpoch: st.LeaderEpoch}
	return next.WithISR(keep, func(b int32) int64 { return epochs[b] }), nil
}

// without returns the members of all that are not in some.
func without(all, some []int32) []int32 {
	var out []int32
	for _, x := range all {
		if !slices.Contains(some, x) {
			out = append(out, x)
		}
	}
	return out
}
