package e2e

// Share groups (KIP-932) through franz-go's share consumer against real `skiff
// serve` processes: many members on one partition, acknowledgements, redelivery
// after a member dies, and failover of the node leading the partition.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// shareTally counts, per record key, what share consumers received and accepted.
type shareTally struct {
	mu       sync.Mutex
	accepted map[string]int   // key -> accepts
	by       map[string]int   // consumer -> records received
	counts   map[string]int32 // key -> highest delivery count seen
}

func newShareTally() *shareTally {
	return &shareTally{accepted: map[string]int{}, by: map[string]int{}, counts: map[string]int32{}}
}

func (s *shareTally) distinct(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.accepted {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// shareConsumer polls as a share group member until ctx ends, accepting every
// record (explicitly, before the next poll) and tallying it.
func shareConsumer(ctx context.Context, t *testing.T, addr, topic, group, name string, tally *shareTally, opts ...kgo.Opt) *kgo.Client {
	all := append([]kgo.Opt{
		kgo.ClientID(name),
		kgo.ShareGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)
	cl := newClient(t, addr, all...)
	go func() {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				r.Ack(kgo.AckAccept)
				tally.mu.Lock()
				tally.accepted[string(r.Key)]++
				tally.by[name]++
				tally.counts[string(r.Key)] = max(tally.counts[string(r.Key)], r.DeliveryCount())
				tally.mu.Unlock()
			})
			if ctx.Err() == nil {
				cl.FlushAcks(ctx)
			}
		}
	}()
	return cl
}

// warmUp produces records keyed warm-N until one of them is accepted: the
// share-partition then exists, its start offset (share.auto.offset.reset latest)
// below every record produced afterwards.
func warmUp(t *testing.T, ctx context.Context, prod *kgo.Client, topic string, tally *shareTally) {
	t.Helper()
	for i := 0; tally.distinct("warm-") == 0; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("warm-" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("no share consumer got a record")
		case <-time.After(200 * time.Millisecond): // polling a condition with a deadline
		}
	}
}

// waitAccepted waits until n distinct keys with prefix were accepted.
func waitAccepted(t *testing.T, ctx context.Context, tally *shareTally, prefix string, n int) {
	t.Helper()
	for tally.distinct(prefix) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d records accepted", tally.distinct(prefix), n)
		case <-time.After(50 * time.Millisecond): // polling a condition with a deadline
		}
	}
}

// TestShareGroupFiveConsumersOnePartition: five share consumers on one partition
// all get records, and every record is accepted exactly once when none fails.
func TestShareGroupFiveConsumersOnePartition(t *testing.T) {
	n := testnode.Start(t)
	const topic, group, records = "share-five", "share-five-group", 2000
	createTopic(t, n.Addr, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tally := newShareTally()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	for i := range 5 {
		shareConsumer(cctx, t, n.Addr, topic, group, fmt.Sprintf("c%d", i), tally, kgo.ShareMaxRecords(10))
	}
	prod := newClient(t, n.Addr, kgo.ProducerLinger(0))
	warmUp(t, ctx, prod, topic, tally)
	for i := range records {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte("rec-" + strconv.Itoa(i))}, nil)
		if i%50 == 49 {
			if err := prod.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitAccepted(t, ctx, tally, "rec-", records)
	stop()
	tally.mu.Lock()
	defer tally.mu.Unlock()
	for k, c := range tally.accepted {
		if c != 1 {
			t.Errorf("record %s accepted %d times", k, c)
		}
	}
	for i := range 5 {
		if tally.by[fmt.Sprintf("c%d", i)] == 0 {
			t.Errorf("consumer c%d got no record (per consumer: %v)", i, tally.by)
		}
	}
	t.Logf("records per consumer: %v", tally.by)
}
