package kafkaapi

// What the handlers of several keys share: finding the local partition a request
// names, Kafka error codes, timeouts, and counting a request's entries and names.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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
