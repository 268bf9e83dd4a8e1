package e2e

// A share group across the failover of the node holding its share-partition.

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
	"skiff/sharegroup"
)

// confirmingTally records what share consumers accepted, and which acceptances
// the broker confirmed: a record delivered again after a confirmed acceptance is
// a violation, and so is a delivery count outside 1..the group's limit (the
// default, sharegroup.DefaultDeliveryCountLimit) or lower than one seen before
// for the same record (each acquisition counts).
type confirmingTally struct {
	mu         sync.Mutex
	accepted   map[string]int
	confirmed  map[string]bool
	counts     map[string]int32 // key -> highest delivery count seen
	violations []string
	stale      int        // deliveries polled after their acquisition deadline
	staleAfter int        // of those, ones after a confirmed acceptance or a higher count
	hold       *holdPoint // when set, where consumer c0 holds acquired records
}

// holdPoint makes consumer c0, once armed, hold the records of its next poll
// unacknowledged (closing held) until release is closed: a fault then lands
// while they are acquired.
type holdPoint struct {
	armed         atomic.Bool
	held, release chan struct{}
}

func newHoldPoint() *holdPoint {
	return &holdPoint{held: make(chan struct{}), release: make(chan struct{})}
}

// wait holds if h is armed (once), until release or ctx ends.
func (h *holdPoint) wait(ctx context.Context, name string) {
	if h == nil || name != "c0" || !h.armed.CompareAndSwap(true, false) {
		return
	}
	close(h.held)
	select {
	case <-h.release:
	case <-ctx.Done():
	}
}

// isHeld reports whether the consumer holds.
func (h *holdPoint) isHeld() bool {
	select {
	case <-h.held:
		return true
	default:
		return false
	}
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
				if time.Now().After(r.AcquisitionDeadline()) {
					// Buffered in the client past its lock (c0 held, or
					// polled late): the broker may have given it to
					// another member since, so it says nothing of the
					// broker. Released unprocessed, as a careful
					// application would.
					tally.mu.Lock()
					tally.stale++
					if tally.confirmed[k] || r.DeliveryCount() < tally.counts[k] {
						tally.staleAfter++
					}
					tally.mu.Unlock()
					r.Ack(kgo.AckRelease)
					return
				}
				// Violations say which consumer polled the record, and how
				// long its lock had left.
				who := name + " polled " + k + " (lock left " + time.Until(r.AcquisitionDeadline()).Round(time.Millisecond).String() + ")"
				tally.mu.Lock()
				if tally.confirmed[k] {
					tally.violations = append(tally.violations, who+": delivered again (count "+strconv.Itoa(int(r.DeliveryCount()))+") after its acceptance was confirmed")
				}
				dc := r.DeliveryCount()
				if dc < 1 || dc > sharegroup.DefaultDeliveryCountLimit {
					tally.violations = append(tally.violations, who+": delivered with count "+strconv.Itoa(int(dc)))
				}
				if prev := tally.counts[k]; dc < prev {
					tally.violations = append(tally.violations, who+": delivered with count "+strconv.Itoa(int(dc))+" after count "+strconv.Itoa(int(prev)))
				}
				tally.counts[k] = max(tally.counts[k], dc)
				tally.accepted[k]++
				tally.mu.Unlock()
				r.Ack(kgo.AckAccept)
				keys = append(keys, k)
			})
			if len(keys) == 0 || ctx.Err() != nil {
				continue
			}
			tally.hold.wait(ctx, name)
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
	var left []string
	shareFaultRun(t, topic, group, victim, nil, func(n *testnode.Node, nodes []*testnode.Node) {
		n.Kill()
		for _, m := range nodes {
			if m != n {
				left = append(left, m.Addr)
			}
		}
	}, consumerOpts...)
	return left
}

// shareFaultRun is shareKillRun with fault (given the victim and all the nodes)
// in place of the SIGKILL, and consumer c0 holding at hold (if not nil).
func shareFaultRun(t *testing.T, topic, group string, victim func(seeds []string) int32, hold *holdPoint, fault func(victim *testnode.Node, nodes []*testnode.Node), consumerOpts ...kgo.Opt) {
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

	tally := &confirmingTally{accepted: map[string]int{}, confirmed: map[string]bool{}, counts: map[string]int32{}, hold: hold}
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
	var target *testnode.Node
	for _, n := range nodes {
		if n.ID == id {
			target = n
		}
	}
	if target == nil {
		t.Fatalf("no node %d to fault", id)
	}
	t.Logf("fault on node %d with %d records accepted", id, accepted())
	fault(target, nodes)
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
	t.Logf("all %d records accepted %v after the last was produced; %d accepted more than once (their acceptance unconfirmed); %d deliveries polled after their acquisition deadline, released unchecked (%d of them after a confirmed acceptance or a higher count)", records, took.Round(time.Millisecond), dup, tally.stale, tally.staleAfter)
}

// TestShareGroupLeaderPausedThreeNodes: as TestShareGroupLeaderKilledThreeNodes,
// but the node leading the partition (which holds the share-partition) is frozen
// (SIGSTOP) while consumer c0 holds records it acquired there, until another node
// leads it and for at least minPause, and then resumed (SIGCONT) with the
// consumers' fetches still in its sockets; c0 then accepts what it held, through
// the resumed node. That node must neither acquire nor accept on the
// share-partition it no longer leads, so no record is lost, none whose acceptance
// was confirmed comes again, and every delivery count stays within the group's
// limit.
func TestShareGroupLeaderPausedThreeNodes(t *testing.T) {
	const topic = "share-paused"
	leader := func(seeds []string) int32 {
		md, err := metadata(t, seeds[0], topic)
		if err != nil {
			t.Fatal(err)
		}
		return md.Topics[topic].Partitions[0].Leader
	}
	hold := newHoldPoint()
	shareFaultRun(t, topic, "share-paused-group", leader, hold, func(n *testnode.Node, nodes []*testnode.Node) {
		hold.armed.Store(true)
		poll(t, time.Minute, "consumer c0 holding acquired records", hold.isHeld)
		defer close(hold.release) // c0 acknowledges them to the resumed node
		if err := n.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		other := anyRunning(nodes, n)
		took := poll(t, time.Minute, "the partition led by another node", func() bool {
			md, err := metadata(t, other.Addr, topic)
			if err != nil {
				return false
			}
			l := md.Topics[topic].Partitions[0].Leader
			return l >= 0 && l != n.ID
		})
		time.Sleep(minPause - took) // the fault lasts this long at least (no-op when negative)
		if err := n.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		t.Logf("resumed node %d; another node led the partition %v after the freeze", n.ID, took.Round(time.Millisecond))
	})
}
