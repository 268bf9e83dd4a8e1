package appliance

// The transaction coordinator's part of the node: its settings, which partitions
// of __transaction_state it coordinates (those this node leads), and the markers it
// writes to partition leaders, here or on other brokers.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
	"skiff/groups"
	"skiff/kafkaapi"
	"skiff/txn"
)

// TxnConfig holds the transaction coordinator's settings. Zero values take the
// defaults of the settings table (settings.go).
type TxnConfig struct {
	// MaxTimeout is transaction.max.timeout.ms.
	MaxTimeout time.Duration
	// AbortCheckInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms.
	AbortCheckInterval time.Duration
	// IDExpiration is transactional.id.expiration.ms.
	IDExpiration time.Duration
	// ProducerIDExpiration is producer.id.expiration.ms (used by the partitions).
	ProducerIDExpiration time.Duration
	// TopicPartitions and TopicReplicationFactor are
	// transaction.state.log.num.partitions and
	// transaction.state.log.replication.factor, used when __transaction_state is
	// created (the replication factor capped at the live brokers).
	TopicPartitions        int32
	TopicReplicationFactor int16
}

// startTxn creates the transaction coordinator; it leads nothing until applyTxn.
func (n *Node) startTxn() {
	c := n.cfg.Txn
	n.txn = txn.New(txn.Config{
		AllocateProducerID: n.store.AllocateProducerID,
		WriteMarkers:       n.writeMarkers,
		TopicPartitions: func(topic string) (int32, bool) {
			t, ok := n.cache.Topic(topic)
			return t.Partitions, ok
		},
		OffsetsPartition: func(group string) (int32, bool) {
			t, ok := n.cache.Topic(cluster.OffsetsTopic)
			if !ok {
				return 0, false
			}
			return groups.PartitionFor(group, t.Partitions), true
		},
		MaxTimeout:         c.MaxTimeout,
		AbortCheckInterval: c.AbortCheckInterval,
		IDExpiration:       c.IDExpiration,
		DB:                 n.db,
		Logger:             n.logger,
	})
}

// applyTxn makes the coordinator lead exactly the partitions of
// __transaction_state whose leader is this node and whose replica is open here,
// and keeps the state of every replica here materialized (txn.Coordinator.Follow).
func (n *Node) applyTxn(snap *cluster.Snapshot) {
	if n.txn == nil {
		return
	}
	t, ok := snap.Topic(cluster.TransactionTopic)
	if !ok {
		for _, p := range n.txn.Led() {
			n.txn.Resign(p)
		}
		for p := range n.txn.Followed() {
			n.txn.Unfollow(p)
		}
		return
	}
	n.txn.SetPartitions(t.Partitions)
	for _, p := range n.txn.Led() {
		if p >= t.Partitions {
			n.txn.Resign(p)
		}
	}
	for p := range max(t.Partitions, n.txn.Followed()) {
		part := n.parts.Partition(cluster.TransactionTopic, p)
		st, ok := snap.Partition(cluster.TransactionTopic, p)
		if part != nil && ok && st.Leader == n.id {
			n.txn.Elect(p, st.LeaderEpoch, part)
		} else {
			n.txn.Resign(p)
		}
		if part != nil && p < t.Partitions {
			n.txn.Follow(p, part)
		} else {
			n.txn.Unfollow(p)
		}
	}
}

// writeMarkers writes markers to their partitions' leaders, in parallel per
// leader: directly to partitions led here, with WriteTxnMarkers to other brokers.
// A partition that refuses a marker as stale (INVALID_PRODUCER_EPOCH: the producer
// moved on, so the transaction is over there; TRANSACTION_COORDINATOR_FENCED: a
// newer coordinator of the producer wrote there) or whose topic is gone counts as
// done.
func (n *Node) writeMarkers(ctx context.Context, markers []txn.Marker) error {
	snap := n.cache.Snapshot()
	byLeader := make(map[int32][]txn.Marker)
	for _, m := range markers {
		st, ok := snap.Partition(m.Topic, m.Partition)
		switch {
		case !ok:
			if _, exists := snap.Topic(m.Topic); !exists {
				continue // deleted
			}
			return fmt.Errorf("partition %s-%d: %w", m.Topic, m.Partition, kerr.UnknownTopicOrPartition)
		case st.Leader == cluster.NoLeader:
			return fmt.Errorf("partition %s-%d has no leader: %w", m.Topic, m.Partition, kerr.NotLeaderForPartition)
		}
		byLeader[st.Leader] = append(byLeader[st.Leader], m)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for leader, ms := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if leader == n.id {
				err = n.writeLocalMarkers(ctx, ms)
			} else {
				err = n.sendMarkers(ctx, leader, ms)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func markerDone(err error) bool {
	return err == nil || errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.TransactionCoordinatorFenced) ||
		errors.Is(err, kerr.UnknownTopicOrPartition)
}

// writeLocalMarkers writes markers to partitions led here, all at once.
func (n *Node) writeLocalMarkers(ctx context.Context, ms []txn.Marker) error {
	var errs []error
	var local []txn.LocalMarker
	for _, m := range ms {
		p := n.parts.Partition(m.Topic, m.Partition)
		if p == nil || !p.IsLeader() {
			errs = append(errs, fmt.Errorf("marker for %s-%d: %w", m.Topic, m.Partition, kerr.NotLeaderForPartition))
			continue
		}
		local = append(local, txn.LocalMarker{To: p, Marker: m})
	}
	for i, err := range txn.WriteLocalMarkers(ctx, local, n.groups.WaitApplied) {
		if !markerDone(err) {
			errs = append(errs, fmt.Errorf("marker for %s-%d: %w", local[i].Marker.Topic, local[i].Marker.Partition, err))
		}
	}
	return errors.Join(errs...)
}

// sendMarkers sends markers in one WriteTxnMarkers v0 request to broker id.
func (n *Node) sendMarkers(ctx context.Context, id int32, ms []txn.Marker) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(0)
	for _, m := range ms {
		rm := kmsg.NewWriteTxnMarkersRequestMarker()
		rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch
		rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		rt.Topic, rt.Partitions = m.Topic, []int32{m.Partition}
		rm.Topics = append(rm.Topics, rt)
		req.Markers = append(req.Markers, rm)
	}
	resp, err := n.parts.BrokerRequest(ctx, id, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); !markerDone(err) {
					errs = append(errs, fmt.Errorf("marker for %s-%d on broker %d: %w", rt.Topic, rp.Partition, id, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// txnKafkaConfig adds the transaction coordinator and its topic's settings to the
// Kafka server's configuration.
func (n *Node) txnKafkaConfig(k kafkaapi.Config) kafkaapi.Config {
	k.Txn = n.txn
	k.TxnTopicPartitions = n.cfg.Txn.TopicPartitions
	k.TxnTopicReplicationFactor = n.cfg.Txn.TopicReplicationFactor
	return k
}
