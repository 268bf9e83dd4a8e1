package kafkaapi

// DeleteRecords, key 21, versions 0..2 (2 is flexible).
//
// Behaviour: for each partition its leader moves the log start offset up to the
// offset asked for (-1: the high watermark): records below it are gone for
// consumers at once (a fetch below it is OFFSET_OUT_OF_RANGE, ListOffsets
// earliest answers it) and retention deletes the segments wholly below it
// (replication.Partition.DeleteRecords, durable in the log's index). Followers
// learn the new start from their fetch responses. The answer comes once every
// in-sync replica has moved its log start that far: low_watermark is the lowest
// log start of them, at least the offset asked for; when timeout_ms passes first
// the partition is REQUEST_TIMED_OUT with the low watermark reached so far. An
// offset at or below the log start changes nothing. Errors: an offset past the high
// watermark or negative (but -1) OFFSET_OUT_OF_RANGE; a partition not led here
// NOT_LEADER_OR_FOLLOWER; an unknown one UNKNOWN_TOPIC_OR_PARTITION; a topic whose
// cleanup.policy does not include delete POLICY_VIOLATION (as Kafka refuses it for
// compacted topics).
//
// Authorization, as in Kafka: DELETE on the topic (TOPIC_AUTHORIZATION_FAILED for
// each of its partitions), before anything else is checked.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
	"skiff/replication"
)

func init() {
	register(api[*kmsg.DeleteRecordsRequest]{
		min: 0, max: 2,
		handle: (*Server).handleDeleteRecords,
		entries: func(r *kmsg.DeleteRecordsRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleDeleteRecords(c *conn, _ *RequestHeader, req *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	type waiting struct {
		out    *kmsg.DeleteRecordsResponseTopicPartition
		p      *replication.Partition
		offset int64
	}
	var waits []waiting
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(req.Topics))
	mayDelete := c.allowedTopics(acl.OpDelete)
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(t.Partitions))
		topic, known := s.cache.Topic(t.Topic)
		_, del := cluster.CleanupPolicies(cluster.EffectiveTopicConfig(topic, s.brokerDefaults(), cluster.ConfigCleanupPolicy))
		compacted := known && !del
		for j, rp := range t.Partitions {
			out := &rt.Partitions[j]
			*out = kmsg.NewDeleteRecordsResponseTopicPartition()
			out.Partition, out.LowWatermark = rp.Partition, -1
			if !mayDelete(t.Topic) {
				out.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			p, code := s.localPartition(t.Topic, rp.Partition)
			if code == 0 && compacted {
				code = kerr.PolicyViolation.Code
			}
			if code != 0 {
				out.ErrorCode = code
				continue
			}
			offset, err := p.DeleteRecords(rp.Offset)
			if err != nil {
				out.ErrorCode = errorCode(err)
				continue
			}
			waits = append(waits, waiting{out, p, offset})
		}
	}
	ctx, cancel := context.WithTimeout(c.ctx, time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond)
	defer cancel()
	for _, w := range waits {
		low, err := w.p.WaitLowWatermark(ctx, w.offset)
		w.out.LowWatermark = low
		switch {
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			w.out.ErrorCode = kerr.RequestTimedOut.Code
		case err != nil:
			w.out.ErrorCode, w.out.LowWatermark = errorCode(err), -1
		}
	}
	return resp
}
