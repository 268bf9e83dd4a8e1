package kafkaapi

// What the handlers of several keys share: finding the local partition a request
// names, waiting while this node's view of the cluster or its leadership is in doubt,
// Kafka error codes, timeouts, and counting a request's entries and names.

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/cluster"
	"skiff/replication"
)

// defaultRequestTimeout bounds a request whose timeout_ms is not positive
// (Produce, CreateTopics, DeleteTopics, CreatePartitions).
const defaultRequestTimeout = 30 * time.Second

// metadataWriteTimeout bounds a change of the cluster metadata that a request makes
// on the way (auto-created topics, __consumer_offsets, producer ids), and the wait
// until this node serves it.
const metadataWriteTimeout = 10 * time.Second

// requestTimeout is a request's timeout_ms, or defaultRequestTimeout.
func requestTimeout(ms int32) time.Duration {
	if ms <= 0 {
		return defaultRequestTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

// staleViewWait bounds how long a request that names leaders (Metadata,
// FindCoordinator) waits for this node's view of the cluster to become current:
// after a pause of the process its metadata catches up with etcd in well under a
// second when etcd has quorum.
const staleViewWait = 2 * time.Second

// viewCurrent reports whether this node's view of the cluster is current, waiting
// up to staleViewWait for that while it is not.
func (s *Server) viewCurrent(c *conn) bool {
	if s.cfg.ViewCurrent == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(c.ctx, staleViewWait)
	defer cancel()
	return s.cfg.ViewCurrent(ctx)
}

// nameable reports whether leader may be named as the leader of partition p of
// topic: another broker always (whether it still leads is its own to say), this
// broker only while its replica leads (not one whose leadership was given to an
// earlier registration of this broker). A replica not open here (offline, or not
// applied yet) is named: requests for it get KAFKA_STORAGE_ERROR or
// NOT_LEADER_OR_FOLLOWER.
func (s *Server) nameable(topic string, p, leader int32) bool {
	if leader != s.cfg.NodeID {
		return true
	}
	lp := s.parts.Partition(topic, p)
	return lp == nil || lp.IsLeader()
}

// fencedWait bounds how long a Produce or Fetch waits while this node's partitions
// are fenced: its broker session is in doubt, and it is confirming it or registering
// again (milliseconds when etcd has quorum; appliance/session.go). The leadership
// usually stays here, and answering NOT_LEADER_OR_FOLLOWER at once would send the
// client to refresh its metadata, which franz-go does at most every 5 s. Once the
// node knows, the request is served, or refused if a partition moved.
const fencedWait = 500 * time.Millisecond

// waitUnfenced waits up to fencedWait while this node's partitions are fenced. It
// stops early once the node's view of the cluster is current again and names
// another broker as the leader of each partition of the request (parts): the
// answer is NOT_LEADER_OR_FOLLOWER naming that leader either way, and waiting for
// the session to be confirmed (an etcd round, or a registration) only delays the
// client's move. A node back from a pause longer than its session learns this
// first: its partitions moved while it was frozen. parts nil: wait for the fence.
func (s *Server) waitUnfenced(c *conn, parts iter.Seq2[string, int32]) {
	if !s.parts.Fenced() {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, fencedWait)
	defer cancel()
	s.awaitFence(ctx, parts, func(topic string, p int32) (cluster.PartitionState, bool) {
		return s.cache.Snapshot().Partition(topic, p)
	})
}

// fencedPoll is how often awaitFence looks again.
const fencedPoll = 10 * time.Millisecond

// awaitFence is waitUnfenced's wait, with the metadata's partitions as partition
// reads them.
func (s *Server) awaitFence(ctx context.Context, parts iter.Seq2[string, int32], partition func(string, int32) (cluster.PartitionState, bool)) {
	if s.cfg.ViewFresh == nil || parts == nil {
		s.parts.WaitUnfenced(ctx)
		return
	}
	t := time.NewTicker(fencedPoll)
	defer t.Stop()
	for s.parts.Fenced() && !(s.cfg.ViewFresh() && s.ledElsewhere(parts, partition)) {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// ledElsewhere reports whether the metadata names another broker as the leader of
// every partition of parts (none: false).
func (s *Server) ledElsewhere(parts iter.Seq2[string, int32], partition func(string, int32) (cluster.PartitionState, bool)) bool {
	named := false
	for topic, p := range parts {
		st, ok := partition(topic, p)
		if !ok || st.Leader == cluster.NoLeader || st.Leader == s.cfg.NodeID {
			return false
		}
		named = true
	}
	return named
}

// localPartition finds the replica this broker leads, or the error code to answer:
// UNKNOWN_TOPIC_OR_PARTITION when the metadata has no such partition,
// NOT_LEADER_OR_FOLLOWER when it exists but is not served here.
func (s *Server) localPartition(topic string, id int32) (*replication.Partition, int16) {
	if p := s.parts.Partition(topic, id); p != nil && p.IsLeader() {
		return p, 0
	}
	if s.parts.Offline(topic, id) != nil {
		return nil, kerr.KafkaStorageError.Code // its log could not be opened
	}
	if t, ok := s.cache.Topic(topic); ok && id >= 0 && id < t.Partitions {
		return nil, kerr.NotLeaderForPartition.Code
	}
	return nil, kerr.UnknownTopicOrPartition.Code
}

// checkLeaderEpoch compares a client's current_leader_epoch (-1: no check) with ours.
func checkLeaderEpoch(theirs, ours int32) int16 {
	switch {
	case theirs < 0 || theirs == ours:
		return 0
	case theirs < ours:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// errorCode maps an error to the Kafka code it carries; errors without one are
// reported as KAFKA_STORAGE_ERROR by the partition layer, or UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// topicEntries is what a topic with n partitions counts towards
// max.partitions.per.request: its partitions, at least 1. Requests without
// partitions count what they name instead: topics, groups, protocols, config
// resources, members. The count also estimates a decoded request's size
// (entryBytes per entry).
func topicEntries(n int) int { return max(n, 1) }

// countNames counts how often each name occurs in items (a topic listed twice in
// one request is refused).
func countNames[T any](items []T, name func(*T) string) map[string]int {
	n := make(map[string]int, len(items))
	for i := range items {
		n[name(&items[i])]++
	}
	return n
}
