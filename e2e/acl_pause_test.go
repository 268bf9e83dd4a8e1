package e2e

// ACLs and SCRAM credentials changed while a node is paused.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"skiff/internal/testnode"
)

const aclPauseTopic = "acl-pause"

// TestACLChangedWhilePaused: three nodes with the ACL authorizer (SASL_PLAINTEXT
// with SCRAM for User:alice, PLAINTEXT for the super user), alice allowed to
// write a topic of 3 partitions with RF 3 and min.insync.replicas 2, and
// producing to it (acks=all) in the background. The leader of partition 0 is
// frozen (SIGSTOP) for longer than its session timeout; meanwhile, through the
// other nodes, alice's ACL is deleted and her password changed. While it is
// frozen, none of alice's records produced after the deletion applied on the
// other two nodes may be acknowledged: they refuse her with
// TOPIC_AUTHORIZATION_FAILED. Resumed (SIGCONT), the node must within 30 s
// refuse a new connection's produce with her new password
// (TOPIC_AUTHORIZATION_FAILED) and a login with her old one
// (SASL_AUTHENTICATION_FAILED), and acknowledge nothing of hers meanwhile.
// Afterwards every record of hers that was acknowledged is in the log, and none
// produced after the deletion is.
//
// The nodes run on loopback (a pause needs no network namespace): no root needed.
func TestACLChangedWhilePaused(t *testing.T) {
	start := time.Now()
	nodes := testnode.StartCluster(t, 3, append([]string{"--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"--authorizer", "acl", "--super-users", "User:ANONYMOUS"}, faultArgs...)...)
	const oldPass, newPass = "alice-secret", "alice-new-secret"
	createSCRAMUser(t, nodes[0].Addr, "alice", oldPass)
	createTopicWith(t, nodes[0].Addr, aclPauseTopic, 3, 3, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr, seeds(nodes)))
	if rs, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics(aclPauseTopic).
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite, kadm.OpDescribe)); err != nil || rs[0].Err != nil {
		t.Fatalf("create alice's ACL: %v %v", err, rs)
	}
	// Clients that send each request to one node only (seedRequest): alice
	// through its SASL listener, the super user through its PLAINTEXT one.
	alice, super := map[int32]*kgo.Client{}, map[int32]*kgo.Client{}
	for _, n := range nodes {
		alice[n.ID] = aliceClient(t, n)
		super[n.ID] = newClient(t, n.Addr)
	}
	for _, n := range nodes {
		poll(t, 30*time.Second, fmt.Sprintf("node %d allowing alice", n.ID), func() bool {
			md, err := topicMetadata(ctx, alice[n.ID], aclPauseTopic)
			return err == nil && md.topic == 0
		})
	}

	p := startAliceProducer(t, nodes, oldPass)
	poll(t, 30*time.Second, "alice's producer acknowledged on every partition", func() bool {
		acked := p.ackedBy()
		return len(acked) == 3 && slices.Min(slices.Collect(maps.Values(acked))) >= 5
	})
	var victim *testnode.Node
	poll(t, 30*time.Second, "a leader of partition 0", func() bool {
		md, err := topicMetadata(ctx, super[nodes[0].ID], aclPauseTopic)
		if err != nil || len(md.leaders) == 0 || super[md.leaders[0]] == nil {
			return false
		}
		victim = nodeByID(t, nodes, md.leaders[0])
		return true
	})
	var others []*testnode.Node
	for _, n := range nodes {
		if n != victim {
			others = append(others, n)
		}
	}
	other := others[0]

	if err := victim.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	t.Logf("%v: froze node %d, the leader of %s-0, after %d of alice's records were acknowledged",
		time.Since(start).Round(time.Millisecond), victim.ID, aclPauseTopic, p.ackedCount())
	poll(t, 30*time.Second, "the other nodes leading partition 0 and naming a controller among them", func() bool {
		md, err := metadata(t, other.Addr, aclPauseTopic)
		if err != nil {
			return false
		}
		l := md.Topics[aclPauseTopic].Partitions[0].Leader
		return l >= 0 && l != victim.ID && md.Controller >= 0 && md.Controller != victim.ID
	})
	poll(t, 30*time.Second, "alice's ACL deleted through another node", func() bool {
		return deleteACLs(ctx, super[other.ID], "User:alice", aclPauseTopic) == nil
	})
	for _, n := range others {
		poll(t, 30*time.Second, fmt.Sprintf("node %d refusing alice", n.ID), func() bool {
			md, err := topicMetadata(ctx, alice[n.ID], aclPauseTopic) // no write: nothing to undo if allowed
			return err == nil && md.topic == kerr.TopicAuthorizationFailed.Code
		})
	}
	// From here on every node that is not frozen refuses alice: no record of
	// hers produced after this may be acknowledged, or written.
	deleted := time.Now()
	t.Logf("%v after the freeze: the other nodes refuse alice", deleted.Sub(paused).Round(time.Millisecond))
	poll(t, 30*time.Second, "alice's producer refused with TOPIC_AUTHORIZATION_FAILED", func() bool {
		if n := p.ackedAfter(deleted); n > 0 {
			t.Fatalf("%d of alice's records produced after her ACL was deleted were acknowledged while node %d was frozen", n, victim.ID)
		}
		return p.refusedAfter(deleted, kerr.TopicAuthorizationFailed) > 0
	})

	// Her new password, written through a client that knows only the other nodes
	// (kadm sends it to the controller, which the poll above saw among them).
	ch := kadm.NewClient(newClient(t, other.Addr, kgo.SeedBrokers(other.Addr, others[1].Addr)))
	res, err := ch.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: newPass},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: newPass},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("change alice's password: %v", err)
	}
	time.Sleep(minPause - time.Since(paused)) // the fault lasts this long at least (no-op when negative)
	if n := p.ackedAfter(deleted); n > 0 {
		t.Errorf("%d of alice's records produced after her ACL was deleted were acknowledged while node %d was frozen", n, victim.ID)
	}
	t.Logf("%v after the freeze: alice's password changed; alice's producer meanwhile: %v",
		time.Since(paused).Round(time.Millisecond), p.summary(deleted))

	// Resumed, the node answers from its stale view until its etcd member and its
	// metadata cache have caught up. Each attempt is a new connection, so that
	// its login is checked again.
	if err := victim.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	all := []int32{0, 1, 2}
	seen := map[string]int{}
	defer func() { t.Logf("node %d answered alice after it resumed: %v", victim.ID, seen) }()
	var refusedNew, refusedOld time.Duration
	probes := 0
	poll(t, 30*time.Second, fmt.Sprintf("node %d refusing alice's produce with her new password and her login with the old one", victim.ID), func() bool {
		probes++
		if refusedNew == 0 {
			codes, err := aliceLoginProduce(ctx, t, victim, newPass, all, fmt.Sprintf("probe-new-%d", probes))
			seen[answer("new password", codes, err, all)]++
			for _, q := range all {
				if err == nil && codes[q] == 0 {
					t.Fatalf("node %d acknowledged alice's record to %s-%d %v after it resumed, her ACL deleted", victim.ID, aclPauseTopic, q, time.Since(resumed))
				}
			}
			if err == nil && refusedAll(codes, all) {
				refusedNew = time.Since(resumed)
			}
		}
		if refusedOld == 0 {
			codes, err := aliceLoginProduce(ctx, t, victim, oldPass, all, fmt.Sprintf("probe-old-%d", probes))
			seen[answer("old password", codes, err, all)]++
			for _, q := range all {
				if err == nil && codes[q] == 0 {
					t.Fatalf("node %d acknowledged alice's record to %s-%d (her old password) %v after it resumed", victim.ID, aclPauseTopic, q, time.Since(resumed))
				}
			}
			if errors.Is(err, kerr.SaslAuthenticationFailed) {
				refusedOld = time.Since(resumed)
			}
		}
		return refusedNew > 0 && refusedOld > 0
	})
	t.Logf("node %d refused alice's produce %v and her old password %v after it resumed",
		victim.ID, refusedNew.Round(time.Millisecond), refusedOld.Round(time.Millisecond))

	// Nothing of hers can be acknowledged any more: stop the producer and read
	// the log back through the super user.
	p.stop(ctx)
	if n := p.ackedAfter(deleted); n > 0 {
		t.Errorf("%d of alice's records produced after her ACL was deleted were acknowledged", n)
	}
	logged := readPartitions(t, ctx, nodes, aclPauseTopic, endOffsets(t, ctx, adm, aclPauseTopic))
	missing, written := 0, 0
	for i, r := range p.snapshot() {
		v := aliceValue(i)
		switch {
		case r.acked && !logged[v]:
			missing++
			if missing <= 5 {
				t.Errorf("alice's acknowledged record %s is not in the log", v)
			}
		case r.produced.After(deleted) && logged[v]:
			written++
			if written <= 5 {
				t.Errorf("alice's record %s, produced %v after her ACL was deleted, is in the log", v, r.produced.Sub(deleted))
			}
		}
	}
	for i := 1; i <= probes; i++ {
		for _, v := range []string{fmt.Sprintf("probe-new-%d", i), fmt.Sprintf("probe-old-%d", i)} {
			if logged[v] {
				t.Errorf("alice's record %s, produced after node %d resumed, is in the log", v, victim.ID)
			}
		}
	}
	if missing+written > 0 {
		t.Errorf("%d acknowledged records missing, %d written after the deletion", missing, written)
	}
	t.Logf("%v in all: %d records in the log, alice's producer: %v", time.Since(start).Round(time.Millisecond), len(logged), p.summary(deleted))
}

// aliceLoginProduce logs in to n's SASL listener as alice with password, on a
// new connection, and sends one record to each of partitions of the pause topic
// (acks=all): the error codes by partition, or the login's or request's error.
func aliceLoginProduce(ctx context.Context, t *testing.T, n *testnode.Node, password string, partitions []int32, v string) (map[int32]int16, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Listeners["SASL_PLAINTEXT"]),
		kgo.SASL(scram.Auth{User: "alice", Pass: password}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := seedRequest(ctx, cl, produceRequest(aclPauseTopic, partitions, -1, 2000, v))
	if err != nil {
		return nil, err
	}
	return produceCodes(resp), nil
}

// answer names a produce answer for a tally: the error, or the code of each partition.
func answer(what string, codes map[int32]int16, err error, partitions []int32) string {
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return what + ": " + ke.Message
		}
		return what + ": " + err.Error()
	}
	s := what + ":"
	for _, p := range partitions {
		s += fmt.Sprintf(" %d %s", p, errName(codes[p]))
	}
	return s
}

// aliceProducer produces alice's records in the background, one every 20 ms
// round-robin over the pause topic's 3 partitions, with acks=all, and keeps
// what became of each.
type aliceProducer struct {
	cl   *kgo.Client
	quit chan struct{}
	done chan struct{}
	mu   struct {
		sync.Mutex
		recs []aliceRecord // by index: the record's value is aliceValue(index)
	}
}

// aliceRecord is one of alice's records: when it was handed to the client, and
// its outcome once known.
type aliceRecord struct {
	partition int32
	produced  time.Time
	done      bool
	acked     bool
	err       error
}

func aliceValue(i int) string { return fmt.Sprintf("alice-%05d", i) }

// startAliceProducer starts alice's producer, seeded with every node's SASL
// listener. A request to a frozen node times out in 4 s (3 s of Produce
// timeout, 1 s overhead), after which the client asks for metadata again; a
// record not acknowledged within 5 s fails.
func startAliceProducer(t *testing.T, nodes []*testnode.Node, password string) *aliceProducer {
	t.Helper()
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Listeners["SASL_PLAINTEXT"])
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
		kgo.SASL(scram.Auth{User: "alice", Pass: password}.AsSha512Mechanism()),
		kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProduceRequestTimeout(3*time.Second), kgo.RequestTimeoutOverhead(time.Second),
		kgo.RecordDeliveryTimeout(5*time.Second), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	p := &aliceProducer{cl: cl, quit: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	t.Cleanup(func() { p.stop(context.Background()) })
	return p
}

func (p *aliceProducer) run() {
	defer close(p.done)
	tick := time.NewTicker(20 * time.Millisecond) // the producer's pace, not a wait for a condition
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-p.quit:
			return
		case <-tick.C:
		}
		r := &kgo.Record{Topic: aclPauseTopic, Partition: int32(i % 3), Value: []byte(aliceValue(i))}
		p.mu.Lock()
		p.mu.recs = append(p.mu.recs, aliceRecord{partition: r.Partition, produced: time.Now()})
		p.mu.Unlock()
		p.cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.mu.recs[i].done, p.mu.recs[i].acked, p.mu.recs[i].err = true, err == nil, err
		})
	}
}

// stop stops producing, waits up to 10 s for the outcomes of the records
// produced, and closes the client (which fails the records still waiting).
// Idempotent.
func (p *aliceProducer) stop(ctx context.Context) {
	select {
	case <-p.quit:
		return
	default:
	}
	close(p.quit)
	<-p.done
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p.cl.Flush(ctx)
	p.cl.Close()
}

// snapshot is a copy of every record's state so far.
func (p *aliceProducer) snapshot() []aliceRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.mu.recs)
}

// ackedBy counts the acknowledged records by partition.
func (p *aliceProducer) ackedBy() map[int32]int {
	out := map[int32]int{}
	for _, r := range p.snapshot() {
		if r.acked {
			out[r.partition]++
		}
	}
	return out
}

func (p *aliceProducer) ackedCount() (n int) {
	for _, c := range p.ackedBy() {
		n += c
	}
	return n
}

// ackedAfter counts the records produced after t that were acknowledged.
func (p *aliceProducer) ackedAfter(t time.Time) (n int) {
	for _, r := range p.snapshot() {
		if r.acked && r.produced.After(t) {
			n++
		}
	}
	return n
}

// refusedAfter counts the records produced after t that failed with want.
func (p *aliceProducer) refusedAfter(t time.Time, want error) (n int) {
	for _, r := range p.snapshot() {
		if r.produced.After(t) && errors.Is(r.err, want) {
			n++
		}
	}
	return n
}

// summary tallies the records' outcomes, before and after t.
func (p *aliceProducer) summary(t time.Time) map[string]int {
	out := map[string]int{}
	for _, r := range p.snapshot() {
		when := "before"
		if r.produced.After(t) {
			when = "after"
		}
		switch {
		case !r.done:
			out[when+": pending"]++
		case r.acked:
			out[when+": acknowledged"]++
		default:
			out[when+": "+r.err.Error()]++
		}
	}
	return out
}

// readPartitions reads every partition of topic from its start up to its end in
// ends (read_uncommitted), through any of nodes, as the super user, and returns
// the set of values.
func readPartitions(t *testing.T, ctx context.Context, nodes []*testnode.Node, topic string, ends map[int32]int64) map[string]bool {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	next := map[int32]int64{}
	for p := range ends {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl := newClient(t, nodes[0].Addr, seeds(nodes), kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	defer cl.Close()
	got := map[string]bool{}
	for p, end := range ends {
		for next[p] < end {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %s-%d up to offset %d of %d", topic, p, next[p], end)
			}
			fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s-%d: %v", tp, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				got[string(r.Value)] = true
				next[r.Partition] = max(next[r.Partition], r.Offset+1)
			})
		}
	}
	return got
}
