package kafkaapi

// ListOffsets, key 2, versions 0..7 (6+ flexible; 7 adds -3, KIP-734).
//
// Behaviour: timestamp -1 is the high watermark (the last stable offset under
// read_committed, which is the same while there are no transactions), or
// OFFSET_NOT_AVAILABLE from a new leader whose high watermark has not reached the
// start of its epoch yet (it may lag what the previous leader committed), -2 the log
// start offset, any other timestamp the base offset of the first batch whose max
// timestamp is at or after it (offset -1 and timestamp -1 when there is none, or when
// that batch is at or above the high watermark, or under read_committed the last
// stable offset, as in Kafka), and -3 (v7+, MAX_TIMESTAMP) the largest timestamp
// below the high watermark with the offset of the first record holding it (the
// record's own offset, as Kafka 3.8+ answers, KAFKA-16310; older Kafka answered the
// batch's). v0 answers
// with old_style_offsets holding that one offset. current_leader_epoch (v4+) is checked
// as in Fetch. The leader epoch returned (v4+) is the current leader epoch.
//
// Authorization: DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED for its
// partitions), as in Kafka.
//
// Not implemented: v0's list of segment start offsets (only the one offset is
// returned, which every client uses); -4 and -5 (v8+, tiered storage).

import (
	"bytes"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/internal/batch"
	"skiff/replication"
)

func init() {
	register(api[*kmsg.ListOffsetsRequest]{
		min: 0, max: 7,
		handle: (*Server).handleListOffsets,
		entries: func(r *kmsg.ListOffsetsRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleListOffsets(c *conn, _ *RequestHeader, req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	mayDescribe := c.allowedTopics(acl.OpDescribe)
	for i, t := range req.Topics {
		authorized := mayDescribe(t.Topic)
		rt := &resp.Topics[i]
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(t.Partitions))
		for j, rp := range t.Partitions {
			pr := &rt.Partitions[j]
			*pr = kmsg.NewListOffsetsResponseTopicPartition()
			pr.Partition = rp.Partition
			pr.Timestamp, pr.Offset, pr.LeaderEpoch = -1, -1, -1
			if !authorized {
				pr.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			p, code := s.localPartition(t.Topic, rp.Partition)
			if code == 0 {
				code = checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch())
			}
			if code != 0 {
				pr.ErrorCode = code
				continue
			}
			pr.LeaderEpoch = p.LeaderEpoch()
			switch rp.Timestamp {
			case -1:
				if !p.HighWatermarkKnown() {
					// A new leader that does not know yet what its predecessor
					// committed: an older end would be wrong.
					pr.ErrorCode, pr.LeaderEpoch = kerr.OffsetNotAvailable.Code, -1
					continue
				}
				pr.Offset = p.HighWatermark()
				if req.IsolationLevel == 1 {
					pr.Offset = p.LastStableOffset()
				}
			case -2:
				pr.Offset = p.LogStartOffset()
			case -3:
				if req.Version < 7 {
					pr.ErrorCode = kerr.InvalidRequest.Code
					continue
				}
				off, ts, ok, err := p.MaxTimestampOffset()
				if err != nil {
					pr.ErrorCode = errorCode(err)
					continue
				}
				if ok {
					pr.Offset, pr.Timestamp = maxTimestampRecord(p, off, ts), ts
				}
			default:
				if rp.Timestamp < 0 {
					pr.ErrorCode = kerr.InvalidRequest.Code
					continue
				}
				off, ts, ok, err := p.OffsetForTimestamp(rp.Timestamp)
				if err != nil {
					pr.ErrorCode = errorCode(err)
					continue
				}
				// Kafka answers only offsets a consumer of that isolation
				// may read: below the last stable offset at read_committed.
				if ok && (req.IsolationLevel != 1 || off < p.LastStableOffset()) {
					pr.Offset, pr.Timestamp = off, ts
				}
			}
			if req.Version == 0 {
				if rp.MaxNumOffsets > 0 && pr.Offset >= 0 {
					pr.OldStyleOffsets = []int64{pr.Offset}
				}
			}
		}
	}
	return resp
}

// errFound stops a walk over records at the one sought.
var errFound = errors.New("found")

// maxTimestampRecord is the offset of the first record with timestamp ts in the
// batch at base (the first holding the partition's max timestamp): the batch knows
// only its max timestamp, not which of its records has it. If the batch cannot be
// read (deleted meanwhile), its base offset is the answer.
func maxTimestampRecord(p *replication.Partition, base, ts int64) int64 {
	sl, err := p.Read(base, 1) // the first batch is always whole
	if err != nil {
		return base
	}
	defer sl.Release()
	var b bytes.Buffer
	if _, err := sl.WriteTo(&b); err != nil {
		return base
	}
	off := base
	_ = batch.Records(b.Bytes(), func(r batch.Record) error {
		if r.Timestamp == ts {
			off = r.Offset
			return errFound
		}
		return nil
	})
	return off
}
