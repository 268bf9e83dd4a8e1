package kafkaapi

// WriteTxnMarkers, key 27, versions 0..1 advertised (0..2 with Config.TxnV2);
// 2 served whatever Config.TxnV2 (api.brokerMax): a coordinator at transaction
// version 2 still finishing a TV2 transaction after its leaders went back to 1
// would otherwise be refused until they ran 2 again, its partitions open.
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
// Between Skiff brokers, v1 carries tagged fields of Skiff's own (txn/notice.go):
// each partition's answer holds the producer's marker stamp after its marker
// (txn.StampTag), and a marker entry tagged txn.NoticeTag is a transaction
// coordinator's notice instead (replication.Partition.NoteTxn), for the one
// partition its tag names: nothing is written, and the answer names that
// partition with 0 if it kept the notice, INVALID_TXN_STATE if the producer's
// marker stamp or the leader epoch no longer match.
//
// v2 (KIP-1228) adds each marker's transaction_version: a marker of transaction
// version 2 or later carries the transaction's epoch plus one (KIP-890 part 2),
// and one at or below the epoch of the producer's open transaction on a
// partition is stale there: nothing is appended and the partition answers 0
// (replication.Partition.WriteMarker; Kafka answers INVALID_PRODUCER_EPOCH,
// which Skiff's coordinator counts as done as well). Below v2, and for
// transaction versions 0 and 1, markers keep the rules above.
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
		min: 0, max: 1, txnV2Max: 2, brokerMax: 2,
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
	var answers []*kmsg.WriteTxnMarkersResponseMarkerTopicPartition // each local marker's
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
		if tp, stamp, ok := txn.TaggedNotice(&m.UnknownTags); ok && req.Version >= 1 {
			resp.Markers[i].Topics = []kmsg.WriteTxnMarkersResponseMarkerTopic{{Topic: tp.Topic,
				Partitions: []kmsg.WriteTxnMarkersResponseMarkerTopicPartition{{Partition: tp.Partition, ErrorCode: s.noteTxn(allowed, m, tp, stamp)}}}}
			continue
		}
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
					Epoch: m.ProducerEpoch, Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch,
					TV2: req.Version >= 2 && m.TransactionVersion >= 2}})
				answers = append(answers, rp)
			}
		}
	}
	errs, stamps := txn.WriteLocalMarkers(c.ctx, local, s.cfg.Groups.WaitApplied)
	for i, err := range errs {
		answers[i].ErrorCode = errorCode(err)
		if err == nil && stamps[i].Stamp != 0 && req.Version >= 1 {
			answers[i].UnknownTags.Set(txn.StampTag, txn.AppendStamp(nil, stamps[i]))
		}
	}
	return resp
}

// noteTxn hands a coordinator's notice (a marker entry tagged txn.NoticeTag)
// to the partition it names and returns the partition's answer.
func (s *Server) noteTxn(allowed bool, m kmsg.WriteTxnMarkersRequestMarker, tp txn.TopicPartition, stamp txn.Stamp) int16 {
	if !allowed {
		return kerr.ClusterAuthorizationFailed.Code
	}
	part, code := s.localPartition(tp.Topic, tp.Partition)
	switch {
	case code != 0:
		return code
	case !part.NoteTxn(m.ProducerID, m.ProducerEpoch, stamp.Stamp, stamp.LeaderEpoch):
		return kerr.InvalidTxnState.Code
	}
	return 0
}
