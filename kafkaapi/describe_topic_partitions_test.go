package kafkaapi_test

// DescribeTopicPartitions (key 75): pages of topics with their ids.

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { conformanceTests[75] = conformDescribeTopicPartitions }

// conformDescribeTopicPartitions: two topics (3 and 2 partitions) and an unknown
// one, named out of order, in pages of 4 partitions: the first page has the
// first topic whole and the second's partition 0, with a cursor at its
// partition 1, from which the second page goes on; ids are Metadata's.
func conformDescribeTopicPartitions(t *testing.T, c *kconn, versions []int16) {
	a, b := topicName(t, "a"), topicName(t, "b")
	createTopic(t, c, a, 3, nil)
	createTopic(t, c, b, 2, nil)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(a)}, {Topic: kmsg.StringPtr(b)}}
	ids := map[string][16]byte{}
	for _, rt := range c.do(md).(*kmsg.MetadataResponse).Topics {
		ids[*rt.Topic] = rt.TopicID
	}
	missing := b + "-none" // sorts after b
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			page := func(cursor *kmsg.DescribeTopicPartitionsRequestCursor) *kmsg.DescribeTopicPartitionsResponse {
				req := kmsg.NewPtrDescribeTopicPartitionsRequest()
				req.SetVersion(v)
				req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: missing}, {Topic: b}, {Topic: a}}
				req.ResponsePartitionLimit, req.Cursor = 4, cursor
				return c.do(req).(*kmsg.DescribeTopicPartitionsResponse)
			}
			first := page(nil)
			if len(first.Topics) != 2 || *first.Topics[0].Topic != a || *first.Topics[1].Topic != b ||
				len(first.Topics[0].Partitions) != 3 || len(first.Topics[1].Partitions) != 1 {
				t.Fatalf("first page %+v, want %s whole and %s's partition 0", first.Topics, a, b)
			}
			for _, rt := range first.Topics {
				wantCode(t, *rt.Topic, rt.ErrorCode, 0)
				if rt.TopicID != ids[*rt.Topic] || rt.TopicID == [16]byte{} {
					t.Errorf("%s: id %x, Metadata says %x", *rt.Topic, rt.TopicID, ids[*rt.Topic])
				}
				for i, p := range rt.Partitions {
					if p.Partition != int32(i) || p.LeaderID != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
						t.Errorf("%s partition %+v", *rt.Topic, p)
					}
				}
			}
			cur := first.NextCursor
			if cur == nil || cur.Topic != b || cur.Partition != 1 {
				t.Fatalf("cursor %+v, want %s partition 1", cur, b)
			}
			second := page(&kmsg.DescribeTopicPartitionsRequestCursor{Topic: cur.Topic, Partition: cur.Partition})
			if len(second.Topics) != 2 || *second.Topics[0].Topic != b || len(second.Topics[0].Partitions) != 1 ||
				second.Topics[0].Partitions[0].Partition != 1 || second.NextCursor != nil {
				t.Fatalf("second page %+v (cursor %+v), want %s's partition 1 and no cursor", second.Topics, second.NextCursor, b)
			}
			wantCode(t, "unknown topic", second.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			bad := page(&kmsg.DescribeTopicPartitionsRequestCursor{Topic: a + "-not-named"})
			if len(bad.Topics) != 1 {
				t.Fatalf("a cursor outside the request: %+v", bad.Topics)
			}
			wantCode(t, "a cursor outside the request", bad.Topics[0].ErrorCode, kerr.InvalidRequest.Code)
		})
	}
}
