package kafkaapi_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/batch"
)

// TestCompressionType: with compression.type other than producer the broker
// stores every batch with that codec, whatever the producer used; franz-go reads
// the records back unchanged. producer keeps each batch as produced.
func TestCompressionType(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	values := []string{"one", strings.Repeat("compressible ", 200), "", "three"}
	for _, tc := range []struct {
		config string
		want   int16 // codec bits of the stored batches; -1: as produced
	}{
		{"producer", -1}, {"uncompressed", 0}, {"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4},
	} {
		topic := topicName(t, tc.config)
		createTopic(t, c, topic, 1, map[string]string{"compression.type": tc.config})
		// An uncompressed batch and a gzip one, as produced.
		mustProduce(t, c, topic, 0, makeBatch(noProducer, values...))
		mustProduce(t, c, topic, 0, makeBatchAttrs(noProducer, 1, values...))
		p := fetchedPartition(t, fetchNow(t, c, 1<<20, fetchPart{topic: topic}), topic, 0)
		var codecs []int16
		if err := batch.Split(p.RecordBatches, func(h batch.Header, _ []byte) error {
			codecs = append(codecs, h.Attributes&batch.AttrCompressionMask)
			return nil
		}); err != nil || len(codecs) != 2 {
			t.Fatalf("%s: batches %v: %v", tc.config, codecs, err)
		}
		for i, codec := range codecs {
			want := tc.want
			if want < 0 {
				want = int16(i) // none, then gzip
			}
			if codec != want {
				t.Errorf("compression.type=%s: batch %d stored with codec %d, want %d", tc.config, i, codec, want)
			}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var got []string
		for len(got) < 2*len(values) && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(_ string, _ int32, err error) {
				if ctx.Err() == nil {
					t.Errorf("%s: fetch: %v", tc.config, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		cancel()
		cl.Close()
		if want := append(slices.Clone(values), values...); !slices.Equal(got, want) {
			t.Errorf("compression.type=%s: franz-go read %d values, want the %d produced", tc.config, len(got), len(want))
		}
	}
	// Recompressed batches count against max.message.bytes as stored.
	topic := topicName(t, "max")
	createTopic(t, c, topic, 1, map[string]string{"compression.type": "uncompressed", "max.message.bytes": "1000"})
	big := makeBatchAttrs(noProducer, 1, strings.Repeat("x", 5000))
	if len(big) > 1000 {
		t.Fatalf("the gzip batch has %d bytes", len(big))
	}
	wantCode(t, "a batch over max.message.bytes once uncompressed", produce(t, c, topic, 0, big).ErrorCode, kerr.MessageTooLarge.Code)
}
