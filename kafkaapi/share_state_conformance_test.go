package kafkaapi_test

// Conformance of the node-to-node share state keys (83, 86), which a share
// group's coordinator sends to a partition's leader, at every advertised version.

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	conformanceTests[83] = conformInitializeShareGroupState
	conformanceTests[86] = conformDeleteShareGroupState
}

// initializeShareState sends InitializeShareGroupState v for partition of id and
// returns that partition's code.
func initializeShareState(t *testing.T, c *kconn, v int16, group string, id [16]byte, partition int32, start int64) int16 {
	t.Helper()
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.SetVersion(v)
	req.GroupID = group
	req.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: id,
		Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: partition, StartOffset: start}}}}
	resp := c.do(req).(*kmsg.InitializeShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].TopicID != id || resp.Topics[0].Partitions[0].Partition != partition {
		t.Fatalf("answer %+v, want partition %d of %x", resp.Topics, partition, id)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func conformInitializeShareGroupState(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			topic, group := shareOffsetsFixture(t, c)
			id := topicIDOf(t, c, topic)
			wantCode(t, "initialize", initializeShareState(t, c, v, group, id, 0, 6), 0)
			if p := describeShareOffset(t, c, 1, group, topic); p.StartOffset != 6 || p.Lag != 4 {
				t.Errorf("described %+v, want start offset 6 and lag 4", p)
			}
			wantCode(t, "beyond the end", initializeShareState(t, c, v, group, id, 0, 11), kerr.OffsetOutOfRange.Code)
			wantCode(t, "below -1", initializeShareState(t, c, v, group, id, 0, -2), kerr.InvalidRequest.Code)
			wantCode(t, "no such partition", initializeShareState(t, c, v, group, id, 3, 0), kerr.UnknownTopicOrPartition.Code)
			wantCode(t, "unknown topic id", initializeShareState(t, c, v, group, [16]byte{1, 2, 3}, 0, 0), kerr.UnknownTopicOrPartition.Code)
			if p := describeShareOffset(t, c, 1, group, topic); p.StartOffset != 6 {
				t.Errorf("start offset %d after refused changes, want 6", p.StartOffset)
			}
			// -1 is Kafka's uninitialized start offset (its group coordinator sends it):
			// accepted, the state starts again from share.auto.offset.reset.
			wantCode(t, "uninitialized (-1)", initializeShareState(t, c, v, group, id, 0, -1), 0)
			dreq := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			dreq.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
			wantCode(t, "describe after -1", c.do(dreq).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound.Code)
		})
	}
}

func conformDeleteShareGroupState(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			topic, group := shareOffsetsFixture(t, c)
			id := topicIDOf(t, c, topic)
			wantCode(t, "initialize", initializeShareState(t, c, 0, group, id, 0, 3), 0)
			req := kmsg.NewPtrDeleteShareGroupStateRequest()
			req.SetVersion(v)
			req.GroupID = group
			req.Topics = []kmsg.DeleteShareGroupStateRequestTopic{
				{TopicID: id, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 3}}},
				{TopicID: [16]byte{1, 2, 3}, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}},
			}
			resp := c.do(req).(*kmsg.DeleteShareGroupStateResponse)
			if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 || len(resp.Topics[1].Partitions) != 1 {
				t.Fatalf("answer %+v, want 2 topics of 2 and 1 partitions", resp.Topics)
			}
			wantCode(t, "delete", resp.Topics[0].Partitions[0].ErrorCode, 0)
			wantCode(t, "no such partition", resp.Topics[0].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			wantCode(t, "unknown topic id", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			// The group has neither members nor states left.
			dreq := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			dreq.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
			wantCode(t, "describe after deletion", c.do(dreq).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound.Code)
		})
	}
}
