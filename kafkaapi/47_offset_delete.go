package kafkaapi

// OffsetDelete, key 47, version 0 (its only version).
//
// Behaviour: the committed offsets of the listed partitions are deleted
// (tombstones in __consumer_offsets); partitions without a commit are no error.
// While a consumer group has members, partitions of topics a member subscribes to
// get GROUP_SUBSCRIBED_TO_TOPIC; a non-consumer group with members gets
// NON_EMPTY_GROUP. Unknown group: GROUP_ID_NOT_FOUND; empty group id:
// INVALID_GROUP_ID.
//
// Unlike Kafka, partitions of topics that no longer exist are not refused with
// UNKNOWN_TOPIC_OR_PARTITION, so that the offsets of a deleted topic can be removed.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(api[*kmsg.OffsetDeleteRequest]{
		min: 0, max: 0,
		handle: (*Server).handleOffsetDelete,
		entries: func(r *kmsg.OffsetDeleteRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleOffsetDelete(c *conn, _ *RequestHeader, req *kmsg.OffsetDeleteRequest) kmsg.Response {
	return s.cfg.Groups.OffsetDelete(c.ctx, req)
}
