package kafkaapi

// OffsetFetch, key 9, versions 0..7.
//
// Behaviour: the committed offsets of the listed partitions, read from Pebble (every
// commit is applied before it is acknowledged); a null topic list (v2+) asks for
// every committed offset of the group. A partition without a commit gets offset -1,
// empty metadata and no error; leader epoch (v5+) is -1 when the commit had none.
// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS go in each partition for v0..v1
// and in the top-level error code for v2+.
//
// require_stable (v7, KIP-447): a partition for which an open transaction holds a
// pending offset (TxnOffsetCommit not yet committed or aborted) gets
// UNSTABLE_OFFSET_COMMIT, which the consumer retries; so does the whole request
// when it asks for every offset of the group and one is pending.
//
// Not implemented: v8+ (several groups per request).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(api[*kmsg.OffsetFetchRequest]{
		min: 0, max: 7,
		handle: (*Server).handleOffsetFetch,
		entries: func(r *kmsg.OffsetFetchRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleOffsetFetch(_ *conn, _ *RequestHeader, req *kmsg.OffsetFetchRequest) kmsg.Response {
	return s.cfg.Groups.OffsetFetch(req)
}
