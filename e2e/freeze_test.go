package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"skiff/internal/batchtest"
	"skiff/internal/testnode"
)

// A frozen node (a long GC or VM pause, a stalled disk, SIGSTOP) that comes back must
// cost the cluster no more availability than the freeze itself: three nodes with their
// default settings (6 s broker sessions), a topic of 6 partitions with RF 3 and
// min.insync.replicas 2, an idempotent acks=all producer at 2,000 records/s with a 30 s
// delivery timeout, and each node frozen in turn.
const (
	freezeFor   = 10 * time.Second // how long each node is frozen
	freezeEvery = 15 * time.Second // from one node's freeze to the next one's
	// freezeMaxAckGap is the longest a partition may go without an acknowledged record.
	// A producer cannot do better than the freeze for the partitions the frozen node
	// led: its request to that node stays in flight on an open connection, and an
	// idempotent producer sends a partition's next batch only after it is answered.
	freezeMaxAckGap = freezeFor + time.Second
	// librdkafka takes up to a second longer after the same answers (its retry backoff
	// and leader query; 2.0.2 has no KIP-951 hints): its longest gap was 10.44-11.34 s
	// in 10 runs (docs/performance.md). Issue 21 asks for 10 s; neither client meets it
	// with these settings (docs/operations.md, "A frozen node and producer settings").
	freezeMaxAckGapLibrdkafka = freezeFor + 2*time.Second
)

// SKIFF_FREEZE_TRACE names a directory for a run's timeline: the producer's debug log
// (client.log), each node's log (node-<id>.log) and every node's view of the etcd
// leader and leases every 250 ms (etcd.log).
var freezeTrace = os.Getenv("SKIFF_FREEZE_TRACE")

func TestFaultFreezeFranz(t *testing.T) {
	freezeEach(t, traced(t, workloadConfig{rate: 2000, deliveryTimeout: 30 * time.Second}))
}

func TestFaultFreezeLibrdkafka(t *testing.T) {
	freezeEach(t, traced(t, workloadConfig{rate: 2000, deliveryTimeout: 30 * time.Second, librdkafka: true}))
}

// freezeEach freezes every node in turn for freezeFor while the workload runs, then
// checks the history: nothing acknowledged lost, no record failed, and no partition
// without an acknowledgement for longer than freezeMaxAckGap.
func freezeEach(t *testing.T, cfg workloadConfig) {
	nodes := startFreezeCluster(t)
	w := startWorkloadWith(t, nodes, cfg)
	w.progress(2000, 30*time.Second)
	for i, n := range nodes {
		w.note("SIGSTOP broker %d, leader of partitions %v", n.ID, ledBy(t, anyRunning(nodes, n), n.ID))
		if err := n.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(freezeFor) // the fault lasts this long
		if err := n.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		w.note("SIGCONT broker %d", n.ID)
		if i < len(nodes)-1 {
			time.Sleep(freezeEvery - freezeFor) // the pace of the faults
		}
	}
	resumed := time.Now()
	waitFullISR(t, nodes)
	w.note("every ISR complete")
	// Every partition acknowledged after the last resume: the gaps of the last freeze
	// end with an acknowledgement, not with the end of the run.
	w.progressEach(resumed, 30*time.Second)
	w.progress(2000, 30*time.Second)
	res := w.finish(nodes[0].Addr)
	if res.failed > 0 {
		t.Errorf("%d records failed", res.failed)
	}
	maxGap := freezeMaxAckGap
	if cfg.librdkafka {
		maxGap = freezeMaxAckGapLibrdkafka
	}
	if res.longest.d > maxGap {
		t.Errorf("partition %d went %v without an acknowledged record from %s (at most %v allowed)",
			res.longest.partition, res.longest.d.Round(time.Millisecond), w.since(res.longest.from), maxGap)
	}
}

// startFreezeCluster starts three nodes with their default settings and the fault
// topic with 6 partitions.
func startFreezeCluster(t *testing.T) []*testnode.Node {
	nodes := setUpFaultTopicOf(t, testnode.StartCluster(t, 3), 6)
	if freezeTrace != "" {
		stop := traceEtcd(t, nodes, filepath.Join(freezeTrace, "etcd.log"))
		t.Cleanup(func() {
			stop()
			for _, n := range nodes {
				os.WriteFile(filepath.Join(freezeTrace, "node-"+strconv.Itoa(int(n.ID))+".log"), []byte(n.Logs()), 0o644)
			}
		})
	}
	return nodes
}

// traceEtcd writes, every 250 ms until stop, each node's view of the etcd leader and
// term and the remaining TTL of every lease, to file.
func traceEtcd(t *testing.T, nodes []*testnode.Node, file string) (stop func()) {
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		defer f.Close()
		clients := make([]*clientv3.Client, len(nodes))
		for i, n := range nodes {
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{n.EtcdClient}, DialTimeout: time.Second, Logger: zap.NewNop()})
			if err != nil {
				fmt.Fprintln(f, err)
				return
			}
			defer c.Close()
			clients[i] = c
		}
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for i, n := range nodes {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				line := time.Now().Format("15:04:05.000000 ") + fmt.Sprintf("node %d: ", n.ID)
				if st, err := clients[i].Status(ctx, n.EtcdClient); err != nil {
					line += "status: " + err.Error()
				} else {
					line += fmt.Sprintf("member %x leader %x term %d applied %d", st.Header.MemberId, st.Leader, st.RaftTerm, st.RaftAppliedIndex)
					if ls, err := clients[i].Leases(ctx); err == nil {
						for _, l := range ls.Leases {
							if r, err := clients[i].TimeToLive(ctx, l.ID); err == nil {
								line += fmt.Sprintf(" %x:%d", int64(l.ID), r.TTL)
							}
						}
					}
				}
				cancel()
				fmt.Fprintln(f, line)
			}
		}
	}()
	return func() { close(done); <-ended }
}

// traced adds a debug log of the producer (franz-go's, or librdkafka's idempotence
// and protocol lines) to cfg when SKIFF_FREEZE_TRACE is set.
func traced(t *testing.T, cfg workloadConfig) workloadConfig {
	if freezeTrace == "" {
		return cfg
	}
	f, err := os.Create(filepath.Join(freezeTrace, "client.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if cfg.librdkafka {
		cfg.librdkafkaDebug, cfg.librdkafkaLog = "eos,protocol,msg", f
		return cfg
	}
	stamp := func() string { return time.Now().Format("15:04:05.000000 ") }
	cfg.franzOpts = append(cfg.franzOpts, kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelDebug, stamp)))
	return cfg
}

// ledBy lists the partitions of the fault topic that the metadata of node n names
// broker id as leader of.
func ledBy(t *testing.T, n *testnode.Node, id int32) []int32 {
	t.Helper()
	md, err := metadata(t, n.Addr, faultTopic)
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for _, p := range md.Topics[faultTopic].Partitions.Sorted() {
		if p.Leader == id {
			out = append(out, p.Partition)
		}
	}
	return out
}

// TestFaultFrozenLeaderResumes freezes a leader until its partitions have moved, with
// requests for them waiting in its sockets, and resumes it: within 1 s it refuses
// every Produce for them (NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH), the waiting
// ones and new ones alike, never acknowledging one, and none of its Metadata answers
// names it leader of a partition another node leads now.
func TestFaultFrozenLeaderResumes(t *testing.T) {
	nodes := startFreezeCluster(t)
	w := startWorkloadWith(t, nodes, traced(t, workloadConfig{rate: 1000, deliveryTimeout: 30 * time.Second}))
	w.progress(1000, 30*time.Second)
	victim, other := nodes[0], nodes[1]
	led := ledBy(t, other, victim.ID)
	if len(led) == 0 {
		t.Fatalf("broker %d leads no partition", victim.ID)
	}
	w.note("SIGSTOP broker %d, leader of partitions %v", victim.ID, led)
	if err := victim.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "the frozen broker's partitions led by others", func() bool {
		md, err := metadata(t, other.Addr, faultTopic)
		if err != nil {
			return false
		}
		for _, p := range led {
			if l := md.Topics[faultTopic].Partitions[p].Leader; l < 0 || l == victim.ID {
				return false
			}
		}
		return true
	})
	w.note("partitions %v moved", led)
	// Requests that wait in the frozen broker's sockets.
	type queued struct {
		nc  net.Conn
		req kmsg.Request
	}
	var waiting []queued
	for _, req := range []kmsg.Request{produceTo(led, 1, "zzz-queued-acks1"), produceTo(led, -1, "zzz-queued-acksall"), metadataOf()} {
		nc, err := sendRaw(victim.Addr, req, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		waiting = append(waiting, queued{nc, req})
	}
	if err := victim.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	w.note("SIGCONT broker %d", victim.ID)
	for _, q := range waiting {
		resp, err := readRaw(q.nc, q.req)
		if err != nil {
			t.Fatalf("answer to the %s that waited: %v", kmsg.NameForKey(q.req.Key()), err)
		}
		checkResumed(t, victim.ID, led, resp, time.Since(resumed), "waited")
	}
	// And on new connections, until well after it has caught up.
	for i := 0; time.Since(resumed) < 3*time.Second; i++ {
		for _, req := range []kmsg.Request{produceTo(led, 1, fmt.Sprintf("zzz-new-%d", i)), metadataOf()} {
			sent := time.Now()
			resp, err := rawRequest(t, victim.Addr, req, 10*time.Second)
			if err != nil {
				t.Fatalf("%s at %v after resuming: %v", kmsg.NameForKey(req.Key()), time.Since(resumed), err)
			}
			checkResumed(t, victim.ID, led, resp, time.Since(sent), "new")
		}
	}
	waitFullISR(t, nodes)
	w.progress(1000, 30*time.Second)
	w.finish(other.Addr)
}

// produceTo is a Produce request (v7) of one record with value v to each of the
// partitions of the fault topic.
func produceTo(partitions []int32, acks int16, v string) *kmsg.ProduceRequest {
	return produceRequest(faultTopic, partitions, acks, 10_000, v)
}

// produceRequest is a Produce request (v7) of one record with value v to each of
// the partitions of topic, with the broker's wait bounded by timeoutMs.
func produceRequest(topic string, partitions []int32, acks int16, timeoutMs int32, v string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = acks, timeoutMs
	rt := kmsg.ProduceRequestTopic{Topic: topic}
	for _, p := range partitions {
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{
			Partition: p, Records: batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), v)})
	}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return req
}

// metadataOf is a Metadata request (v8) for the fault topic.
func metadataOf() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(8)
	topic := faultTopic
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	return req
}

// checkResumed checks a resumed old leader's answer to a request for the partitions
// it led before it froze (and that others lead now): a Produce is refused within 1 s,
// a Metadata answer does not name it leader of any of them.
func checkResumed(t *testing.T, self int32, led []int32, resp kmsg.Response, took time.Duration, what string) {
	t.Helper()
	switch resp := resp.(type) {
	case *kmsg.ProduceResponse:
		if took > time.Second {
			t.Errorf("a Produce (%s) was answered %v after the old leader resumed, want within 1 s", what, took)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != kerr.NotLeaderForPartition.Code && rp.ErrorCode != kerr.FencedLeaderEpoch.Code {
					t.Errorf("the resumed old leader answered a Produce (%s) to partition %d with %v (offset %d), want NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH",
						what, rp.Partition, kerr.ErrorForCode(rp.ErrorCode), rp.BaseOffset)
				}
			}
		}
	case *kmsg.MetadataResponse:
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.Leader == self && slices.Contains(led, rp.Partition) {
					t.Errorf("the resumed old leader's Metadata (%s, answered in %v) names it leader of partition %d, which another broker leads",
						what, took, rp.Partition)
				}
			}
		}
	}
}

// TestFaultFreezeGroupCoordinator freezes the coordinator of a group (the leader of
// its __consumer_offsets partition) for 10 s while the group's member commits every
// 200 ms: the commits resume on the new coordinator, and no gap between two
// successful commits is longer than freezeMaxAckGap.
func TestFaultFreezeGroupCoordinator(t *testing.T) {
	nodes := startFreezeCluster(t)
	w := startWorkloadWith(t, nodes, traced(t, workloadConfig{rate: 1000, deliveryTimeout: 30 * time.Second}))
	const group = "freeze-group"
	var mu sync.Mutex
	var commits []time.Time // successful commits
	committed := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(commits)
	}
	member, err := kgo.NewClient(append([]kgo.Opt{seeds(nodes), kgo.ConsumerGroup(group), kgo.ConsumeTopics(faultTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(200 * time.Millisecond),
		kgo.AutoCommitCallback(func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				return
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 {
						return
					}
				}
			}
			mu.Lock()
			commits = append(commits, time.Now())
			mu.Unlock()
		})}, clientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for ctx.Err() == nil {
			member.PollFetches(ctx)
		}
	}()
	defer func() {
		cancel()
		<-polled
		member.Close()
	}()
	poll(t, 60*time.Second, "the group committing", func() bool { return committed() >= 10 })

	coords := kadm.NewClient(newClient(t, nodes[0].Addr)).FindGroupCoordinators(ctx, group)
	if coords[group].Err != nil {
		t.Fatalf("find the coordinator: %v", coords[group].Err)
	}
	var victim *testnode.Node
	for _, n := range nodes {
		if n.ID == coords[group].NodeID {
			victim = n
		}
	}
	before := committed()
	w.note("SIGSTOP broker %d, the coordinator of %s", victim.ID, group)
	if err := victim.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(freezeFor) // the fault lasts this long
	if err := victim.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	w.note("SIGCONT broker %d", victim.ID)
	poll(t, 60*time.Second, "commits after the freeze", func() bool { return committed() >= before+10 })

	mu.Lock()
	var longest time.Duration
	var from time.Time
	for i := 1; i < len(commits); i++ {
		if d := commits[i].Sub(commits[i-1]); d > longest {
			longest, from = d, commits[i-1]
		}
	}
	var first time.Time
	for _, c := range commits {
		if c.After(resumed) {
			first = c
			break
		}
	}
	mu.Unlock()
	t.Logf("longest time without a successful commit: %v from %s; first commit %v after the coordinator resumed",
		longest.Round(time.Millisecond), w.since(from), first.Sub(resumed).Round(time.Millisecond))
	if longest > freezeMaxAckGap {
		t.Errorf("the group went %v without a successful commit (at most %v allowed)", longest.Round(time.Millisecond), freezeMaxAckGap)
	}
	w.finish(nodes[0].Addr)
}
