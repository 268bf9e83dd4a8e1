package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestCompressionTypeKcat: kcat (librdkafka) produces batches, plain and with
// another codec (librdkafka's snappy is unframed), to topics whose compression.type
// makes the broker recompress them with each codec (snappy in the xerial framing),
// and reads every line back byte for byte.
func TestCompressionTypeKcat(t *testing.T) {
	n := testnode.Start(t)
	var in bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&in, "line %04d: %s\n", i, strings.Repeat("z", i%100))
	}
	want := bytes.Repeat(in.Bytes(), 2)
	adm := kadm.NewClient(newClient(t, n.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct{ topic, producer string }{
		{"gzip", "snappy"}, {"snappy", "lz4"}, {"lz4", "zstd"}, {"zstd", "gzip"}, {"uncompressed", "snappy"},
	} {
		topic := "recompressed-" + tc.topic
		if r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": &tc.topic}, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
		runKcat(t, in.Bytes(), "-b", n.Addr, "-P", "-t", topic, "-z", "none")
		runKcat(t, in.Bytes(), "-b", n.Addr, "-P", "-t", topic, "-z", tc.producer)
		out := runKcat(t, nil, "-b", n.Addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
		if !bytes.Equal(out, want) {
			t.Errorf("compression.type=%s, produced plain and %s: kcat read %d bytes, produced %d: not identical", tc.topic, tc.producer, len(out), len(want))
		}
	}
}

// TestCompressionLevels: compression.<codec>.level (KIP-390) sets the level at
// which the broker compresses under compression.type: the same plain records
// take fewer bytes on disk at the codec's highest level than at its lowest,
// and franz-go and kcat read them back unchanged at every level.
func TestCompressionLevels(t *testing.T) {
	n := testnode.Start(t)
	cl := newClient(t, n.Addr, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	words := []string{"offset", "partition", "broker", "leader", "replica", "segment", "compaction", "consumer"}
	var values [][]byte
	var lines bytes.Buffer
	for i := range 2000 {
		v := fmt.Appendf(nil, "%d %s %s %s %d", i, words[i%8], words[i*7%8], words[i*3%8], i*i%977)
		values = append(values, v)
		lines.Write(v)
		lines.WriteByte('\n')
	}
	for _, tc := range []struct {
		codec, config string
		low, high     int
	}{{"gzip", "compression.gzip.level", 1, 9}, {"lz4", "compression.lz4.level", 1, 17}, {"zstd", "compression.zstd.level", -5, 22}} {
		size := map[int]int64{}
		for _, level := range []int{tc.low, tc.high} {
			topic := fmt.Sprintf("level-%s-%d", tc.codec, level)
			createTopicWith(t, n.Addr, topic, 1, 1, map[string]string{"compression.type": tc.codec, tc.config: fmt.Sprint(level)})
			recs := make([]*kgo.Record, len(values))
			for i, v := range values {
				recs[i] = &kgo.Record{Topic: topic, Value: v}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce to %s: %v", topic, err)
			}
			dirs, err := adm.DescribeBrokerLogDirs(ctx, n.ID, kadm.TopicsSet{topic: {0: {}}})
			if err != nil {
				t.Fatal(err)
			}
			dirs.Each(func(d kadm.DescribedLogDir) {
				d.Topics.Each(func(p kadm.DescribedLogDirPartition) { size[level] += p.Size })
			})

			rd := newClient(t, n.Addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			var got [][]byte
			for len(got) < len(values) && ctx.Err() == nil {
				rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, r.Value) })
			}
			if len(got) != len(values) || !bytes.Equal(bytes.Join(got, nil), bytes.Join(values, nil)) {
				t.Fatalf("%s: franz-go read %d records, not the %d produced", topic, len(got), len(values))
			}
			if out := runKcat(t, nil, "-b", n.Addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q"); !bytes.Equal(out, lines.Bytes()) {
				t.Fatalf("%s: kcat read %d bytes, produced %d: not identical", topic, len(out), lines.Len())
			}
		}
		if size[tc.high] <= 0 || size[tc.high] >= size[tc.low] {
			t.Errorf("%s: %d bytes on disk at level %d, %d at level %d", tc.codec, size[tc.low], tc.low, size[tc.high], tc.high)
		}
		t.Logf("%s: %d bytes on disk at level %d, %d at level %d", tc.codec, size[tc.low], tc.low, size[tc.high], tc.high)
	}
}
