package kafkaapi

// WriteTxnMarkers, key 27, versions 0..1.
//
// Behaviour: sent by transaction coordinators (package txn, through the appliance)
// to partition leaders: each marker (producer id, epoch, commit or abort,
// coordinator epoch) is appended as a control batch to each listed partition led
// here, and answered once it is committed there (and, on __consumer_offsets, once
// the group coordinator has applied it, so the offsets it commits are visible).
// A marker of an epoch older than the producer's on the partition gets
// INVALID_PRODUCER_EPOCH, one of a coordinator epoch older than that of the
// producer's latest marker there TRANSACTION_COORDINATOR_FENCED (as in Kafka);
// partitions not led here NOT_LEADER_OR_FOLLOWER.
//
// Authorization, as in Kafka: CLUSTER_ACTION on the cluster (brokers have it;
// CLUSTER_AUTHORIZATION_FAILED for every partition).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"

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
	var local []txn.LocalMarker
	var codes []*int16 // where each local marker's outcome goes
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	allowed := c.allowedCluster(acl.OpClusterAction)
	// Every partition's marker at once; each answer waits for its own commit.
	for i, m := range req.Markers {
		for j, t := range m.Topics {
			for k, p := range t.Partitions {
				rp := &resp.Markers[i].Topics[j].Partitions[k]
				if !allowed {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					continue
				}
				part, code := s.localPartition(t.Topic, p)
				if code != 0 {
					rp.ErrorCode = code
					continue
				}
				local = append(local, txn.LocalMarker{To: part, Marker: txn.Marker{Topic: t.Topic, Partition: p, ProducerID: m.ProducerID,
					Epoch: m.ProducerEpoch, Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch}})
				codes = append(codes, &rp.ErrorCode)
			}
		}
	}
	for i, err := range txn.WriteLocalMarkers(c.ctx, local, s.cfg.Groups.WaitApplied) {
		*codes[i] = errorCode(err)
	}
	return resp
}
