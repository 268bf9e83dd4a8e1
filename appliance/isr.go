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
// members the leader proposed (see cluster.ProposeISR).
func (n *Node) alterISR(ctx context.Context, topic string, partition, partitionEpoch int32, isr []int32) ([]int32, int32, error) {
	st, ok := n.cache.Partition(topic, partition)
	if !ok {
		return nil, 0, fmt.Errorf("no state for %s-%d", topic, partition)
	}
	if st.Leader != n.id || st.PartitionEpoch != partitionEpoch {
		return nil, 0, fmt.Errorf("%s-%d moved on (leader %d, partition epoch %d)", topic, partition, st.Leader, st.PartitionEpoch)
	}
	next, changed := cluster.ProposeISR(st, n.id, n.selfEpoch(), isr, n.cache.Snapshot().BrokerEpoch)
	if !changed {
		waiting := slices.DeleteFunc(slices.Clone(isr), func(b int32) bool { return slices.Contains(st.ISR, b) })
		return nil, 0, fmt.Errorf("%s-%d: %w: replicas %v have no broker registration yet", topic, partition, replication.ErrISRUnchanged, waiting)
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
