package sharegroup

// Dead-letter topics (KIP-1191): a share group with errors.deadletterqueue.topic.name
// set gets a copy of every record it archives, rejected or over its delivery count,
// before the record is archived. The copy carries the original key, value and
// headers, and headers naming the group, the original topic, partition and offset,
// the delivery count and the reason.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultDeadLetterPrefix is errors.deadletterqueue.topic.name.prefix, KIP-1191's
// default: a group's dead-letter topic must start with it.
const DefaultDeadLetterPrefix = "dlq."

// Headers of a dead-letter record.
const (
	HeaderGroup         = "__dlq.errors.group.id"
	HeaderTopic         = "__dlq.errors.topic"
	HeaderPartition     = "__dlq.errors.partition"
	HeaderOffset        = "__dlq.errors.offset"
	HeaderDeliveryCount = "__dlq.errors.delivery.count"
	HeaderReason        = "__dlq.errors.reason"
)

// Reasons, the values of HeaderReason.
const (
	ReasonRejected      = "REJECTED"
	ReasonDeliveryLimit = "MAX_DELIVERY_ATTEMPTS_REACHED"
)

// DeadLetter copies archived records of topic/partition, read from log, to the
// dead-letter topic dlq, and returns once they are written (acks=all).
func (s *TopicStore) DeadLetter(ctx context.Context, group, topic string, partition int32, log Log, recs []Archived, dlq string) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	want := make(map[int64]Archived, len(recs))
	for _, a := range recs {
		want[a.Offset] = a
	}
	var out []*kgo.Record
	for _, a := range recs {
		if _, pending := want[a.Offset]; !pending {
			continue // copied with an earlier batch
		}
		raw, err := readLog(log, a.Offset, 1<<20)
		if err != nil {
			return fmt.Errorf("read %s-%d at %d: %w", topic, partition, a.Offset, err)
		}
		fp := kmsg.NewFetchResponseTopicPartition()
		fp.Partition, fp.RecordBatches = partition, raw
		p, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: partition}, &fp, kgo.DefaultDecompressor(), nil)
		for _, r := range p.Records {
			arc, ok := want[r.Offset]
			if !ok {
				continue
			}
			delete(want, r.Offset)
			hs := append(r.Headers[:len(r.Headers):len(r.Headers)],
				kgo.RecordHeader{Key: HeaderGroup, Value: []byte(group)},
				kgo.RecordHeader{Key: HeaderTopic, Value: []byte(topic)},
				kgo.RecordHeader{Key: HeaderPartition, Value: []byte(strconv.Itoa(int(partition)))},
				kgo.RecordHeader{Key: HeaderOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
				kgo.RecordHeader{Key: HeaderDeliveryCount, Value: []byte(strconv.Itoa(int(arc.Count)))},
				kgo.RecordHeader{Key: HeaderReason, Value: []byte(arc.Reason)},
			)
			out = append(out, &kgo.Record{Topic: dlq, Partition: -1, Key: r.Key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp})
		}
	}
	if len(out) == 0 {
		return nil
	}
	return s.dlq.ProduceSync(ctx, out...).FirstErr()
}
