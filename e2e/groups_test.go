package e2e

// Consumer groups through real clients against real `skiff serve` processes: the
// queue model (members of one group share the partitions), publish/subscribe
// (every group gets every record), failover to the others when a member is killed,
// and committed offsets that survive a crash of the node.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// groupNodeArgs lets group members use short session timeouts and skips the
// initial rebalance delay, so the tests wait seconds, not minutes.
var groupNodeArgs = []string{"--group-min-session-timeout", "1s", "--group-initial-rebalance-delay", "0s"}

// memberSession is the session timeout of a test group member. It is well above the
// few seconds a process on a loaded machine can go without CPU: a node that stalls
// that long expires the sessions it could not hear from, as a Kafka coordinator
// does, and a member whose session lapses loses its partitions without committing
// (franz-go reports ErrGroupSession), so that another member gets again what it
// had processed: at-least-once, which the tests' exactly-once checks would take
// for a bug. A killed member is noticed after it.
const memberSession = 10 * time.Second

// memberOpts are the options of a test group member: a memberSession session,
// commits made by the test after processing each poll, and rebalances only between
// polls, with a commit of everything polled before partitions are given up, so that
// no record is processed twice across a rebalance (and none is skipped).
func memberOpts(addr, topic, group, name string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(memberSession),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(20 * time.Second),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			cl.CommitUncommittedOffsets(ctx)
		}),
	}
}

// consumeLoop polls until ctx ends, hands every record to sink, allows a rebalance
// (whose revoke commits everything polled) and commits. Committing before allowing
// the rebalance could deadlock: a commit waits for a join in progress, which waits
// for the rebalance to be allowed.
func consumeLoop(ctx context.Context, cl *kgo.Client, sink func(*kgo.Record)) error {
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			cl.AllowRebalance()
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err) })
		if ferr != nil {
			cl.AllowRebalance()
			return ferr
		}
		fs.EachRecord(sink)
		cl.AllowRebalance()
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	return nil
}

// delivery is one record as a member received it.
type delivery struct {
	member    string
	partition int32
	offset    int64
}

// ledger records what every member received, by record value.
type ledger struct {
	mu  sync.Mutex
	got map[string][]delivery
}

func newLedger() *ledger { return &ledger{got: make(map[string][]delivery)} }

func (l *ledger) add(member string, r *kgo.Record) {
	l.mu.Lock()
	l.got[string(r.Value)] = append(l.got[string(r.Value)], delivery{member, r.Partition, r.Offset})
	l.mu.Unlock()
}

// count is how many distinct values with prefix were received.
func (l *ledger) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for v := range l.got {
		if strings.HasPrefix(v, prefix) {
			n++
		}
	}
	return n
}

func (l *ledger) snapshot() map[string][]delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]delivery, len(l.got))
	for v, ds := range l.got {
		out[v] = append([]delivery(nil), ds...)
	}
	return out
}

// startMember runs an in-process group member until the test ends.
func startMember(t *testing.T, addr, topic, group, name string, l *ledger) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(memberOpts(addr, topic, group, name)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- consumeLoop(ctx, cl, func(r *kgo.Record) { l.add(name, r) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("member %s: %v", name, err)
		}
		cl.CloseAllowingRebalance()
	})
	return cl
}

// produceValues produces values prefix000000.. (n of them) with keys spread over
// the partitions, and waits until all are acknowledged.
func produceValues(t *testing.T, addr, topic, prefix string, n int) {
	t.Helper()
	if err := produceValuesErr(addr, topic, prefix, n); err != nil {
		t.Fatal(err)
	}
}

func produceValuesErr(addr, topic, prefix string, n int) error {
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var failed error
	for i := range n {
		r := &kgo.Record{Key: []byte(strconv.Itoa(i % 97)), Value: []byte(fmt.Sprintf("%s%06d", prefix, i))}
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		return err
	}
	if failed != nil {
		return fmt.Errorf("produce: %w", failed)
	}
	return nil
}

// waitGroup waits until group is Stable with exactly the named members (by client
// id), each assigned at least one partition and all partitions (0..partitions-1)
// assigned, and returns each member's partitions. (A cooperative rebalance passes
// through Stable generations in which the partitions being moved are unassigned.)
func waitGroup(t *testing.T, adm *kadm.Client, group string, partitions int, members ...string) map[string][]int32 {
	t.Helper()
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ds, err := adm.DescribeGroups(ctx, group)
		cancel()
		if err != nil {
			last = err.Error()
			continue
		}
		d := ds[group]
		last = fmt.Sprintf("state %s, %d members", d.State, len(d.Members))
		if d.State != "Stable" || len(d.Members) != len(members) {
			continue
		}
		out := make(map[string][]int32)
		for _, m := range d.Members {
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, at := range a.Topics {
					out[m.ClientID] = append(out[m.ClientID], at.Partitions...)
				}
			}
		}
		ok := len(out) == len(members)
		all := map[int32]bool{}
		for _, name := range members {
			ok = ok && len(out[name]) > 0
			for _, p := range out[name] {
				all[p] = true
			}
		}
		ok = ok && len(all) == partitions
		if ok {
			return out
		}
		last = fmt.Sprintf("stable, assignments %v", out)
	}
	t.Fatalf("group %s never became stable with members %v: %s", group, members, last)
	return nil
}

// TestHelperGroupMember is not a test: it is the child process of TestQueueModel,
// a group member that kills itself with SIGKILL. It prints one line per record
// received ("partition offset value") and commits after each poll. Its spec is
// "addr|topic|group|name|prefix|count": it dies once it has printed count records
// whose value starts with prefix, before it commits them. With
// SKIFF_E2E_GROUP_PROTOCOL=consumer it is a KIP-848 member (TestKIP848Convergence).
func TestHelperGroupMember(t *testing.T) {
	spec := os.Getenv("SKIFF_E2E_GROUP_MEMBER")
	if spec == "" {
		t.Skip("helper process of TestQueueModel")
	}
	f := strings.Split(spec, "|")
	dieAfter, err := strconv.Atoi(f[5])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	opts := memberOpts(f[0], f[1], f[2], f[3])
	if os.Getenv("SKIFF_E2E_GROUP_PROTOCOL") == "consumer" {
		opts = append(opts, kip848Opts...)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	got := 0
	err = consumeLoop(context.Background(), cl, func(r *kgo.Record) {
		fmt.Fprintf(out, "%d %d %s\n", r.Partition, r.Offset, r.Value)
		out.Flush()
		if strings.HasPrefix(string(r.Value), f[4]) {
			if got++; got == dieAfter {
				syscall.Kill(os.Getpid(), syscall.SIGKILL) // no LeaveGroup, no last commit
			}
		}
	})
	fmt.Fprintln(os.Stderr, err)
	os.Exit(3)
}

// TestQueueModel: three members of one group on a 6-partition topic share it, two
// partitions each, and receive every one of 100,000 records exactly once between
// them. Then one member, a separate process, dies of SIGKILL while it consumes:
// after its session timeout the other two take over its partitions exactly from its
// last commit, and every record is still received. Then a fourth member joins, gets
// partitions, and the three share new records exactly once.
func TestQueueModel(t *testing.T) {
	n := testnode.Start(t, groupNodeArgs...)
	const topic, group = "queue", "queue-workers"
	createTopic(t, n.Addr, topic, 6)
	adm := kadm.NewClient(newClient(t, n.Addr))
	l := newLedger()

	// The member to be killed runs in its own process. It kills itself once it has
	// received 500 records of the second batch, between two commits: its last commit
	// is then acknowledged, and the offsets fetched after its death are the ones the
	// survivors must take over from. (Killed from outside, it would often die with a
	// commit on its way, which the node may apply after that fetch.)
	const victimB = 500
	child := exec.Command(os.Args[0], "-test.run=^TestHelperGroupMember$")
	child.Env = append(os.Environ(), "SKIFF_E2E_GROUP_MEMBER="+
		strings.Join([]string{n.Addr, topic, group, "victim", "b", strconv.Itoa(victimB)}, "|"))
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var childErr strings.Builder
	child.Stderr = &childErr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	childDone := make(chan struct{})
	go func() {
		defer close(childDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var p int32
			var o int64
			var v string
			if _, err := fmt.Sscanf(sc.Text(), "%d %d %s", &p, &o, &v); err == nil {
				l.add("victim", &kgo.Record{Partition: p, Offset: o, Value: []byte(v)})
			}
		}
	}()
	t.Cleanup(func() {
		child.Process.Kill()
		child.Wait()
		if t.Failed() {
			t.Logf("victim's stderr: %s", childErr.String())
		}
	})
	startMember(t, n.Addr, topic, group, "alpha", l)
	startMember(t, n.Addr, topic, group, "beta", l)
	assigned := waitGroup(t, adm, group, 6, "alpha", "beta", "victim")
	for name, ps := range assigned {
		if len(ps) != 2 {
			t.Fatalf("member %s got partitions %v; the 6 partitions should be shared 2/2/2: %v", name, ps, assigned)
		}
	}

	start := time.Now()
	const total = 100_000
	produceValues(t, n.Addr, topic, "a", total)
	waitCount(t, l, "a", total)
	t.Logf("3 members consumed %d records in %v", total, time.Since(start).Round(time.Millisecond))
	perMember := map[string]int{}
	for v, ds := range l.snapshot() {
		if len(ds) != 1 {
			t.Fatalf("record %s received %d times: %+v", v, len(ds), ds)
		}
		perMember[ds[0].member]++
	}
	if len(perMember) != 3 {
		t.Fatalf("records per member %v: every member should have had some", perMember)
	}
	t.Logf("records per member: %v", perMember)

	// The victim dies while it consumes a second batch of records.
	produced := make(chan error, 1)
	go func() { produced <- produceValuesErr(n.Addr, topic, "b", 20_000) }()
	select {
	case <-childDone: // every line it printed is read (Wait would close the pipe)
	case <-time.After(time.Minute):
		t.Fatalf("the victim did not receive %d records of the second batch", victimB)
	}
	killedAt := time.Now()
	var exit *exec.ExitError
	if err := child.Wait(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the victim ended with %v, want SIGKILL", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	committed, err := adm.FetchOffsets(ctx, group)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	after := waitGroup(t, adm, group, 6, "alpha", "beta")
	t.Logf("the survivors own every partition %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	if got := len(after["alpha"]) + len(after["beta"]); got != 6 {
		t.Fatalf("after the kill the survivors own %v", after)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	waitCount(t, l, "b", 20_000)

	// The victim's partitions were taken over exactly at its last commit: the first
	// offset the survivors got there is the committed one, and a record went to two
	// members only if the victim had not committed it.
	firstTaken := map[int32]int64{}
	for _, p := range assigned["victim"] {
		firstTaken[p] = -1
	}
	for v, ds := range l.snapshot() {
		survivors := 0
		for _, d := range ds {
			if d.member == "victim" {
				continue
			}
			survivors++
			if f, ok := firstTaken[d.partition]; ok && (f < 0 || d.offset < f) {
				firstTaken[d.partition] = d.offset
			}
		}
		if survivors > 1 {
			t.Fatalf("record %s received by two survivors: %+v", v, ds)
		}
		if len(ds) > 1 {
			c, _ := committed.Lookup(topic, ds[0].partition)
			if ds[0].member != "victim" || ds[0].offset < c.At {
				t.Fatalf("record %s received twice although it was committed (commit %d): %+v", v, c.At, ds)
			}
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	ends := endOffsets(t, ctx, adm, topic)
	cancel()
	for p, first := range firstTaken {
		c, _ := committed.Lookup(topic, p)
		switch {
		case first < 0 && c.At != ends[p]:
			t.Fatalf("partition %d: the survivors got nothing although the victim committed up to %d of %d", p, c.At, ends[p])
		case first >= 0 && first != c.At:
			t.Fatalf("partition %d: the survivors started at offset %d, the victim's last commit is %d", p, first, c.At)
		}
	}

	// A fourth member joins and gets partitions; new records go to exactly one member.
	startMember(t, n.Addr, topic, group, "delta", l)
	final := waitGroup(t, adm, group, 6, "alpha", "beta", "delta")
	t.Logf("after delta joined: %v", final)
	produceValues(t, n.Addr, topic, "c", 10_000)
	waitCount(t, l, "c", 10_000)
	gotDelta := 0
	for v, ds := range l.snapshot() {
		if !strings.HasPrefix(v, "c") {
			continue
		}
		if len(ds) != 1 {
			t.Fatalf("record %s received %d times: %+v", v, len(ds), ds)
		}
		if ds[0].member == "delta" {
			gotDelta++
		}
	}
	if gotDelta == 0 {
		t.Fatal("the fourth member received nothing")
	}
}

// waitCount waits until the ledger holds want distinct values with prefix.
func waitCount(t *testing.T, l *ledger, prefix string, want int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		got := l.count(prefix)
		if got == want {
			return
		}
		if got > want || time.Now().After(deadline) {
			t.Fatalf("received %d distinct %q records, want %d", got, prefix, want)
		}
	}
}

// TestPubSub: two groups on one topic each receive every record; within a group
// (two members) each record goes to one member.
func TestPubSub(t *testing.T) {
	n := testnode.Start(t, groupNodeArgs...)
	const topic = "news"
	createTopic(t, n.Addr, topic, 4)
	adm := kadm.NewClient(newClient(t, n.Addr))
	la, lb := newLedger(), newLedger()
	startMember(t, n.Addr, topic, "readers-a", "a1", la)
	startMember(t, n.Addr, topic, "readers-a", "a2", la)
	startMember(t, n.Addr, topic, "readers-b", "b1", lb)
	waitGroup(t, adm, "readers-a", 4, "a1", "a2")
	waitGroup(t, adm, "readers-b", 4, "b1")
	const total = 20_000
	produceValues(t, n.Addr, topic, "n", total)
	for name, l := range map[string]*ledger{"readers-a": la, "readers-b": lb} {
		waitCount(t, l, "n", total)
		for v, ds := range l.snapshot() {
			if len(ds) != 1 {
				t.Fatalf("group %s received %s %d times", name, v, len(ds))
			}
		}
	}
}

// TestGroupOffsetsSurviveRestart: offsets committed by a group member survive a
// SIGKILL of the node; after the restart OffsetFetch returns them and the group
// resumes exactly after them.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	n := testnode.Start(t, groupNodeArgs...)
	const topic, group = "durable", "durable-group"
	createTopic(t, n.Addr, topic, 3)
	produceValues(t, n.Addr, topic, "x", 3000)

	// Consume part of the topic, committing synchronously as it goes.
	cl, err := kgo.NewClient(memberOpts(n.Addr, topic, group, "first")...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seen := map[string]bool{}
	for len(seen) < 1000 {
		fs := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d records: %v", len(seen), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		cl.AllowRebalance()
	}
	adm := kadm.NewClient(newClient(t, n.Addr))
	before, err := adm.FetchOffsets(ctx, group)
	if err != nil || before.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, before.Error())
	}
	cl.CloseAllowingRebalance()

	n.Kill()
	n.Restart()
	adm = kadm.NewClient(newClient(t, n.Addr))
	var after kadm.OffsetResponses
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		after, err = adm.FetchOffsets(ctx, group)
		if err == nil && after.Error() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fetch offsets after the restart: %v %v", err, after.Error())
		}
	}
	total := int64(0)
	for _, o := range before.Sorted() {
		a, ok := after.Lookup(o.Topic, o.Partition)
		if !ok || a.At != o.At {
			t.Fatalf("%s/%d: committed %d before the crash, %d (%v) after", o.Topic, o.Partition, o.At, a.At, ok)
		}
		total += o.At
	}
	if total != int64(len(seen)) {
		t.Fatalf("committed offsets sum to %d, %d records were consumed", total, len(seen))
	}

	// A new member resumes right after the commits: it gets exactly the rest.
	l := newLedger()
	startMember(t, n.Addr, topic, group, "second", l)
	waitCount(t, l, "x", 3000-len(seen))
	for v := range l.snapshot() {
		if seen[v] {
			t.Fatalf("record %s consumed again after the restart", v)
		}
	}
}
