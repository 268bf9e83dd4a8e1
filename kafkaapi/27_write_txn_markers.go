package kafkaapi

// WriteTxnMarkers, key 27, versions 0..1.
//
// Behaviour: sent by transaction coordinators (package txn, through the appliance)
// to partition leaders: each marker (producer id, epoch, commit or abort,
// coordinator epoch) is appended as a control batch to each listed partition led
// here, and answered once it is committed there (and, on __consumer_offsets, once
// the group coordinator has applied it, so the offsets it commits are visible).
// A marker of an epoch older than the producer's on the partition gets
// INVALID_PRODUCER_EPOCH; partitions not led here NOT_LEADER_OR_FOLLOWER.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/txn"
)

func init() {
	register(api[*kmsg.WriteTxnMarkersRequest]{
		min: 0, max: 1,
		handle: (*Server).handleWriteTxnMarkers,
		entries: func(r *kmsg.WriteTxnMarkersRequest) (n int) {
			for _, m := range r.Markers {
				for _, t := range m.Topics {
					n += topicEntries(len(t.Partitions))
				}
			}
			return n
		},
	})
}

func (s *Server) handleWriteTxnMarkers(c *conn, _ *RequestHeader, req *kmsg.WriteTxnMarkersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				rp.ErrorCode = s.writeMarker(c.ctx, txn.Marker{Topic: t.Topic, Partition: p, ProducerID: m.ProducerID,
					Epoch: m.ProducerEpoch, Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch})
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}

// writeMarker appends one transaction marker to its partition, led here, and
// returns once it is committed (and applied, on __consumer_offsets), with the
// Kafka code of the outcome.
func (s *Server) writeMarker(ctx context.Context, m txn.Marker) int16 {
	p, code := s.localPartition(m.Topic, m.Partition)
	if code != 0 {
		return code
	}
	return errorCode(txn.WriteMarkerTo(ctx, p, m, s.cfg.Groups.WaitApplied))
}
