package kafkaapi

// TxnOffsetCommit, key 28, versions 0..3.
//
// Behaviour (package groups): the offsets are appended to the group's
// __consumer_offsets partition inside the producer's transaction and become
// visible to OffsetFetch only when the transaction commits (its marker reaches the
// partition); an abort drops them. From v3 a member of the group gives its member
// id and generation, checked as OffsetCommit checks them (KIP-447: ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID). A producer fenced on the partition gets
// INVALID_PRODUCER_EPOCH.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(api[*kmsg.TxnOffsetCommitRequest]{
		min: 0, max: 3,
		handle: (*Server).handleTxnOffsetCommit,
		entries: func(r *kmsg.TxnOffsetCommitRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleTxnOffsetCommit(c *conn, _ *RequestHeader, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	return s.cfg.Groups.TxnOffsetCommit(c.ctx, req)
}
