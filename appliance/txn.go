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
	// Version is the transaction version served and finalized (the
	// transaction.version feature): 2 serves and advertises KIP-890 part 2
	// (kafkaapi.Config.TxnV2, docs/design/txn-v2.md). Every node of a cluster
	// must have the same.
	Version int16
	// FirstEpoch is the producer epoch a new transactional id starts at
	// (txn.Config.FirstEpoch; tests only, for the epoch overflow of V2).
	FirstEpoch int16
}

// startTxn creates the transaction coordinator; it leads nothing until applyTxn.
func (n *Node) startTxn() {
	c := n.cfg.Txn
	n.txn = txn.New(txn.Config{
		AllocateProducerID: n.store.AllocateProducerID,
		WriteMarkers:       n.writeMarkers,
		Notify:             n.notifyTxn,
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
		FirstEpoch:         c.FirstEpoch,
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
// done. It returns the stamp each marker got (zero: unknown).
func (n *Node) writeMarkers(ctx context.Context, markers []txn.Marker) ([]txn.Stamp, error) {
	snap := n.cache.Snapshot()
	byLeader := make(map[int32][]int) // indexes into markers
	for i, m := range markers {
		st, ok := snap.Partition(m.Topic, m.Partition)
		switch {
		case !ok:
			if _, exists := snap.Topic(m.Topic); !exists {
				continue // deleted
			}
			return nil, fmt.Errorf("partition %s-%d: %w", m.Topic, m.Partition, kerr.UnknownTopicOrPartition)
		case st.Leader == cluster.NoLeader:
			return nil, fmt.Errorf("partition %s-%d has no leader: %w", m.Topic, m.Partition, kerr.NotLeaderForPartition)
		}
		byLeader[st.Leader] = append(byLeader[st.Leader], i)
	}
	stamps := make([]txn.Stamp, len(markers))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for leader, idx := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms := make([]txn.Marker, len(idx))
			for j, i := range idx {
				ms[j] = markers[i]
			}
			var got []txn.Stamp
			var err error
			if leader == n.id {
				got, err = n.writeLocalMarkers(ctx, ms)
			} else {
				got, err = n.sendMarkers(ctx, leader, ms)
			}
			for j, i := range idx {
				if j < len(got) {
					stamps[i] = got[j] // each goroutine its own indexes
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return stamps, errors.Join(errs...)
}

func markerDone(err error) bool {
	return err == nil || errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.TransactionCoordinatorFenced) ||
		errors.Is(err, kerr.UnknownTopicOrPartition)
}

// writeLocalMarkers writes markers to partitions led here, all at once, and
// returns their stamps.
func (n *Node) writeLocalMarkers(ctx context.Context, ms []txn.Marker) ([]txn.Stamp, error) {
	var errs []error
	var local []txn.LocalMarker
	var at []int // each local marker's index in ms
	for i, m := range ms {
		p := n.parts.Partition(m.Topic, m.Partition)
		if p == nil || !p.IsLeader() {
			errs = append(errs, fmt.Errorf("marker for %s-%d: %w", m.Topic, m.Partition, kerr.NotLeaderForPartition))
			continue
		}
		local = append(local, txn.LocalMarker{To: p, Marker: m})
		at = append(at, i)
	}
	stamps := make([]txn.Stamp, len(ms))
	written, got := txn.WriteLocalMarkers(ctx, local, n.groups.WaitApplied)
	for i, err := range written {
		stamps[at[i]] = got[i]
		if !markerDone(err) {
			errs = append(errs, fmt.Errorf("marker for %s-%d: %w", local[i].Marker.Topic, local[i].Marker.Partition, err))
		}
	}
	return stamps, errors.Join(errs...)
}

// sendMarkers sends markers in one WriteTxnMarkers request to broker id
// (markersRequest) and returns the stamps its answer gives them.
func (n *Node) sendMarkers(ctx context.Context, id int32, ms []txn.Marker) ([]txn.Stamp, error) {
	resp, err := n.parts.BrokerRequest(ctx, id, markersRequest(ms))
	if err != nil {
		return nil, err
	}
	stamps := make([]txn.Stamp, len(ms))
	var errs []error
	for i, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				err := kerr.ErrorForCode(rp.ErrorCode)
				if !markerDone(err) {
					errs = append(errs, fmt.Errorf("marker for %s-%d on broker %d: %w", rt.Topic, rp.Partition, id, err))
				}
				// One partition per marker: the answer's order is the request's.
				if s, ok := txn.TaggedStamp(&rp.UnknownTags); ok && err == nil && i < len(ms) &&
					rt.Topic == ms[i].Topic && rp.Partition == ms[i].Partition {
					stamps[i] = s
				}
			}
		}
	}
	return stamps, errors.Join(errs...)
}

// markersRequest is the WriteTxnMarkers request of markers, one partition per
// marker: v1, or v2 when one of them is of transaction version 2 (KIP-1228), so
// that a cluster without TV2 sees the requests it always did. Every broker
// serves v2 whatever its own transaction version (advertised only at 2), so a
// TV2 transaction still ends on a leader gone back to 1.
func markersRequest(ms []txn.Marker) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	for _, m := range ms {
		rm := kmsg.NewWriteTxnMarkersRequestMarker()
		rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch
		rm.TransactionVersion = 1 // KIP-890 part 1: Skiff verifies the partitions of every transaction
		if m.TV2 {
			rm.TransactionVersion = 2
			req.SetVersion(2)
		}
		rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		rt.Topic, rt.Partitions = m.Topic, []int32{m.Partition}
		rm.Topics = append(rm.Topics, rt)
		req.Markers = append(req.Markers, rm)
	}
	return req
}

// notifyTxn sends a transaction coordinator's notices to their partitions'
// leaders (txn/notice.go): directly to partitions led here, in one
// WriteTxnMarkers v1 request per other broker. Best effort: a leader without
// the notice asks the coordinator.
func (n *Node) notifyTxn(ctx context.Context, ns []txn.Notice) {
	snap := n.cache.Snapshot()
	byLeader := make(map[int32][]txn.Notice)
	for _, x := range ns {
		if st, ok := snap.Partition(x.Topic, x.Partition); ok && st.Leader != cluster.NoLeader {
			byLeader[st.Leader] = append(byLeader[st.Leader], x)
		}
	}
	for leader, ns := range byLeader {
		if leader == n.id {
			for _, x := range ns {
				if p := n.parts.Partition(x.Topic, x.Partition); p != nil {
					p.NoteTxn(x.ProducerID, x.Epoch, x.At.Stamp, x.At.LeaderEpoch)
				}
			}
			continue
		}
		go func() {
			ctx, cancel := context.WithTimeout(ctx, noticeTimeout)
			defer cancel()
			req := kmsg.NewPtrWriteTxnMarkersRequest()
			req.SetVersion(1)
			for _, x := range ns {
				rm := kmsg.NewWriteTxnMarkersRequestMarker()
				rm.ProducerID, rm.ProducerEpoch, rm.CoordinatorEpoch = x.ProducerID, x.Epoch, -1
				rm.UnknownTags.Set(txn.NoticeTag, txn.AppendNotice(nil, x))
				req.Markers = append(req.Markers, rm)
			}
			if _, err := n.parts.BrokerRequest(ctx, leader, req); err != nil {
				n.logger.Debug("transaction notice", "broker", leader, "err", err)
			}
		}()
	}
}

// noticeTimeout bounds a notice's request: past it, the leader will have asked.
const noticeTimeout = 5 * time.Second

// txnKafkaConfig adds the transaction coordinator and its topic's settings to the
// Kafka server's configuration.
func (n *Node) txnKafkaConfig(k kafkaapi.Config) kafkaapi.Config {
	k.Txn = n.txn
	k.TxnTopicPartitions = n.cfg.Txn.TopicPartitions
	k.TxnV2 = n.cfg.Txn.Version >= 2
	k.TxnTopicReplicationFactor = n.cfg.Txn.TopicReplicationFactor
	return k
}
