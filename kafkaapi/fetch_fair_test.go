package kafkaapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchCounter counts the Fetch requests a franz-go client writes.
type fetchCounter struct{ n atomic.Int64 }

func (f *fetchCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		f.n.Add(1)
	}
}

// TestFetchBoundedReachesEveryPartition: a consumer catching up on partitions
// that each hold many sealed segments, on a node whose Fetch answers hold at
// most two sealed files (segment file cache 8): each Fetch answers one or two
// partitions, always the first with data. franz-go starts each Fetch one
// partition further on (Skiff has no fetch sessions, so each Fetch lists them
// all), so every partition gets records within a bounded number of fetches,
// not only once the first ones are drained. A client asking always in one
// order would wait about sealed/2 fetches per pair of partitions before it.
func TestFetchBoundedReachesEveryPartition(t *testing.T) {
	const (
		partitions = 8
		sealed     = 8 // sealed segments per partition, one batch each
		size       = 32 << 10
	)
	n := startCachedNode(t, t.TempDir(), 8)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, partitions, map[string]string{"internal.segment.bytes": "1"})
	for p := range int32(partitions) {
		for i := range sealed + 1 { // each batch rolls a segment: all but the last are sealed
			mustProduce(t, c, topic, p, makeBatch(noProducer, fmt.Sprintf("%d-%d-%s", p, i, strings.Repeat("v", size))))
		}
	}

	// Exact offsets: every partition is in the client's first Fetch (no offset
	// lookups that could add some later).
	from := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		from[p] = kgo.NewOffset().At(0)
	}
	var fetches fetchCounter
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.WithHooks(&fetches),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxPartitionBytes(size)) // one batch per partition per Fetch
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := map[int32]bool{}
	for len(seen) < partitions {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("partitions with records after %d fetches: %d of %d", fetches.n.Load(), len(seen), partitions)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[r.Partition] = true })
	}
	got := fetches.n.Load()
	t.Logf("every partition had records after %d fetches", got)
	// Rotation gives each partition its turn first within partitions fetches;
	// one or two more may be in flight when the last one is polled.
	if bound := int64(partitions + 3); got > bound {
		t.Errorf("every partition had records only after %d fetches, want at most %d", got, bound)
	}
}
