package e2e

// A share group across the failover of the node holding its share-partition.

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// confirmingTally records what share consumers accepted, and which acceptances
// the broker confirmed: a record delivered again after a confirmed acceptance is
// a violation.
type confirmingTally struct {
	mu         sync.Mutex
	accepted   map[string]int
	confirmed  map[string]bool
	violations []string
}

// confirmingConsumer polls as a share group member, accepts every record, flushes
// the acknowledgements after each poll and counts them confirmed when no
// acknowledgement failed meanwhile.
func confirmingConsumer(ctx context.Context, t *testing.T, seeds []string, topic, group, name string, tally *confirmingTally, opts ...kgo.Opt) {
	var ackErrs atomic.Int64
	cl := newClient(t, seeds[0], append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(name),
		kgo.ShareGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ShareMaxRecords(50),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			for _, r := range rs {
				if r.Err != nil {
					ackErrs.Add(1)
				}
			}
		}),
	}, opts...)...)
	go func() {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			before := ackErrs.Load()
			var keys []string
			fs.EachRecord(func(r *kgo.Record) {
				k := string(r.Key)
				tally.mu.Lock()
				if tally.confirmed[k] {
					tally.violations = append(tally.violations, k+" delivered again (count "+strconv.Itoa(int(r.DeliveryCount()))+") after its acceptance was confirmed")
				}
				tally.accepted[k]++
				tally.mu.Unlock()
				r.Ack(kgo.AckAccept)
				keys = append(keys, k)
			})
			if len(keys) == 0 || ctx.Err() != nil {
				continue
			}
			fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := cl.FlushAcks(fctx)
			cancel()
			if err == nil && ackErrs.Load() == before {
				tally.mu.Lock()
				for _, k := range keys {
					tally.confirmed[k] = true
				}
				tally.mu.Unlock()
			}
		}
	}()
}

// TestShareGroupLeaderKilledThreeNodes: three nodes, a topic of one partition with
// RF 3, three share consumers; the node leading the partition (which holds the
// share-partition) is SIGKILLed mid-stream. Every acknowledged produce is accepted
// at least once, and no record whose acceptance the broker confirmed is delivered
// again.
func TestShareGroupLeaderKilledThreeNodes(t *testing.T) {
	const topic = "share-failover"
	shareKillRun(t, topic, "share-failover-group", func(seeds []string) int32 {
		md, err := metadata(t, seeds[0], topic)
		if err != nil {
			t.Fatal(err)
		}
		return md.Topics[topic].Partitions[0].Leader
	})
}

// shareKillRun starts three nodes, a topic of one partition with RF 3 and three
// share consumers of group (with consumerOpts), and produces a steady stream of
// records; once a fifth are accepted it SIGKILLs the node victim names. Every
// acknowledged produce must be accepted, and no record whose acceptance the
// broker confirmed may be delivered again. It returns the addresses of the nodes
// left.
func shareKillRun(t *testing.T, topic, group string, victim func(seeds []string) int32, consumerOpts ...kgo.Opt) []string {
	nodes := testnode.StartCluster(t, 3, append(clusterArgs, "--group-share-record-lock-duration", "3s")...)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.Addr)
	}
	const records = 3000
	createTopicRF(t, seeds[0], topic, 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prod := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()))
	setShareGroupConfig(t, prod, group, "share.auto.offset.reset", "earliest")

	tally := &confirmingTally{accepted: map[string]int{}, confirmed: map[string]bool{}}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	for i := range 3 {
		confirmingConsumer(cctx, t, seeds, topic, group, "c"+strconv.Itoa(i), tally, consumerOpts...)
	}
	// A steady stream of records (10 every 20 ms) while the consumers work.
	produced := make(chan error, 1)
	go func() {
		for i := range records {
			prod.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte("rec-" + strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
			if i%10 == 9 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		produced <- prod.Flush(ctx)
	}()
	accepted := func() int {
		tally.mu.Lock()
		defer tally.mu.Unlock()
		return len(tally.accepted)
	}
	poll(t, time.Minute, "a fifth of the records accepted", func() bool { return accepted() >= records/5 })

	id := victim(seeds)
	var left []string
	for _, n := range nodes {
		if n.ID == id {
			n.Kill()
			t.Logf("killed node %d with %d records accepted", n.ID, accepted())
		} else {
			left = append(left, n.Addr)
		}
	}
	if len(left) != 2 {
		t.Fatalf("no node %d to kill", id)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	took := poll(t, 2*time.Minute, "every record accepted", func() bool { return accepted() >= records })
	stop()
	tally.mu.Lock()
	defer tally.mu.Unlock()
	for _, v := range tally.violations {
		t.Error(v)
	}
	dup := 0
	for _, c := range tally.accepted {
		if c > 1 {
			dup++
		}
	}
	t.Logf("all %d records accepted %v after the last was produced; %d accepted more than once (their acceptance unconfirmed)", records, took.Round(time.Millisecond), dup)
	return left
}
