package kafkaapi_test

// The version ceilings of issue 19, through kadm, which asks for the newest
// version the node advertises: ListOffsets v7 (MAX_TIMESTAMP) and
// CreatePartitions v3 (with an assignment, as franz-go's request).

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func sharedAdmin(t *testing.T, opts ...kgo.Opt) (*kgo.Client, *kadm.Client, context.Context) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(sharedNode(t).KafkaAddr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return cl, kadm.NewClient(cl), ctx
}

// TestListMaxTimestampOffsets: kadm's ListMaxTimestampOffsets (ListOffsets v7,
// timestamp -3) finds the record with the largest timestamp, not the last one.
func TestListMaxTimestampOffsets(t *testing.T) {
	topic := topicName(t, "")
	cl, adm, ctx := sharedAdmin(t, kgo.DefaultProduceTopic(topic))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if offs, err := adm.ListMaxTimestampOffsets(ctx, topic); err != nil {
		t.Fatal(err)
	} else if o, _ := offs.Lookup(topic, 0); o.Err != nil || o.Offset != -1 {
		t.Fatalf("empty log: %+v, want offset -1", o)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for _, s := range []int{1, 5, 3, 2, 4} { // one batch each
		if err := cl.ProduceSync(ctx, &kgo.Record{Timestamp: t0.Add(time.Duration(s) * time.Second)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offs, err := adm.ListMaxTimestampOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup(topic, 0); o.Err != nil || o.Offset != 1 || o.Timestamp != t0.Add(5*time.Second).UnixMilli() {
		t.Fatalf("max timestamp: %+v, want offset 1 at %d", o, t0.Add(5*time.Second).UnixMilli())
	}
}

// TestListMaxTimestampRecord: MAX_TIMESTAMP answers the offset of the record with
// the largest timestamp, not its batch's base offset (Kafka 3.8+, KAFKA-16310), in
// plain and compressed batches; of two records with it, the first.
func TestListMaxTimestampRecord(t *testing.T) {
	c := dial(t, sharedNode(t).KafkaAddr())
	base := time.Now().Add(-time.Hour).UnixMilli()
	for _, tc := range []struct {
		name   string
		attrs  int16
		deltas []int64
		want   int64 // offset in the batch
	}{
		{"plain", 0, []int64{0, 2000, 5000, 1000}, 2},
		{"gzip", 1, []int64{0, 5000, 3000}, 1},
		{"tie", 0, []int64{0, 4000, 4000}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := topicName(t, "")
			createTopic(t, c, topic, 1, nil)
			values := make([]string, len(tc.deltas))
			for i := range values {
				values[i] = fmt.Sprint("v", i)
			}
			// A batch at the base before, so that the batch holding the max starts at 1.
			mustProduce(t, c, topic, 0, makeBatch(batchOpts{producerID: -1, epoch: -1, seq: -1, timestamp: base}, "first"))
			mustProduce(t, c, topic, 0, makeBatchTimed(batchOpts{producerID: -1, epoch: -1, seq: -1, timestamp: base}, tc.attrs, tc.deltas, values...))
			p := listOffsetsAt(t, c, 7, topic, 0, -3)
			wantCode(t, "max timestamp", p.ErrorCode, 0)
			if p.Offset != 1+tc.want || p.Timestamp != base+slices.Max(tc.deltas) {
				t.Fatalf("max timestamp at offset %d, timestamp base%+d; want offset %d, base%+d", p.Offset, p.Timestamp-base, 1+tc.want, slices.Max(tc.deltas))
			}
		})
	}
}

// TestCreatePartitionsV3: a v3 request with an assignment adds the partition on
// the broker named, and kadm's CreatePartitions (v3) adds one more.
func TestCreatePartitionsV3(t *testing.T) {
	topic := topicName(t, "")
	cl, adm, ctx := sharedAdmin(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.SetVersion(3)
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, 2
	rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{sharedNode(t).ID()}}}
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreatePartitions v3: %+v %v", resp, err)
	}
	if rs, err := adm.CreatePartitions(ctx, 1, topic); err != nil || rs[topic].Err != nil {
		t.Fatalf("kadm CreatePartitions: %+v %v", rs, err)
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil || len(md.Topics[topic].Partitions) != 3 {
		t.Fatalf("after adding two: %+v %v", md.Topics[topic], err)
	}
}

// TestDescribeTopicPartitionsClient: franz-go's request for every topic
// (DescribeTopicPartitions v0, which kadm does not send yet) lists a new topic
// with its id and partitions.
func TestDescribeTopicPartitionsClient(t *testing.T) {
	topic := topicName(t, "")
	cl, adm, ctx := sharedAdmin(t)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, topic) // v12: the topic's id
	if err != nil || md.Topics[topic].ID == (kadm.TopicID{}) {
		t.Fatalf("metadata of %s: %+v %v", topic, md.Topics[topic], err)
	}
	id := [16]byte(md.Topics[topic].ID)
	resp, err := kmsg.NewPtrDescribeTopicPartitionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic != nil && *rt.Topic == topic {
			if rt.ErrorCode != 0 || rt.TopicID != id || len(rt.Partitions) != 2 {
				t.Fatalf("%s: %+v, want id %x and 2 partitions", topic, rt, id)
			}
			return
		}
	}
	t.Fatalf("%s is not among %d topics", topic, len(resp.Topics))
}
