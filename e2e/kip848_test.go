package e2e

// KIP-848 consumer groups through franz-go against a real `skiff serve` process:
// members join, leave and crash while records are produced; the group converges,
// no partition is owned by two members at once (a partition is assigned to a
// member only after its previous owner revoked it, or died), and every record is
// received, exactly once but where a crashed member had not committed it.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// kip848Opts make a member of memberOpts a KIP-848 member: the coordinator
// assigns (franz-go asks for "uniform" with a sticky balancer).
var kip848Opts = []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer())}

// kip848NodeArgs: a dead member is noticed after 6 s, members heartbeat twice a second.
var kip848NodeArgs = []string{"--group-consumer-session-timeout", "6s", "--group-consumer-heartbeat-interval", "500ms"}

// owners tracks which in-process member owns each partition, from franz-go's
// assignment callbacks, and records any partition assigned while another member
// still owns it.
type owners struct {
	mu         sync.Mutex
	owner      map[int32]string
	violations []string
}

func (o *owners) assigned(member string, ps map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, parts := range ps {
		for _, p := range parts {
			if cur := o.owner[p]; cur != "" && cur != member {
				o.violations = append(o.violations, fmt.Sprintf("partition %d assigned to %s while %s owns it", p, member, cur))
			}
			o.owner[p] = member
		}
	}
}

func (o *owners) released(member string, ps map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, parts := range ps {
		for _, p := range parts {
			if o.owner[p] == member {
				delete(o.owner, p)
			}
		}
	}
}

// keepProducing produces batches of n records (values prefix, batch number, "-",
// index) to topic until stop, which returns how many were produced.
func keepProducing(addr, topic, prefix string, n int) (stop func() (int64, error)) {
	var produced atomic.Int64
	stopping := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var err error
		for i := 0; err == nil; i++ {
			select {
			case <-stopping:
				done <- nil
				return
			default:
			}
			err = produceValuesErr(addr, topic, fmt.Sprintf("%s%04d-", prefix, i), n)
			if err == nil {
				produced.Add(int64(n))
			}
		}
		done <- err
	}()
	return func() (int64, error) {
		close(stopping)
		err := <-done
		return produced.Load(), err
	}
}

// start848Member runs an in-process KIP-848 member; stop closes it (it leaves the
// group after committing what it polled).
func start848Member(t *testing.T, addr, topic, group, name string, l *ledger, o *owners) (stop func()) {
	t.Helper()
	return startTrackedMember(t, addr, topic, group, name, l, o, kip848Opts...)
}

// startTrackedMember runs an in-process member with the options extra (its
// protocol and balancers), whose partitions o tracks; stop closes it.
func startTrackedMember(t *testing.T, addr, topic, group, name string, l *ledger, o *owners, extra ...kgo.Opt) (stop func()) {
	t.Helper()
	opts := append(memberOpts(addr, topic, group, name), extra...)
	opts = append(opts,
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { o.assigned(name, ps) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
			cl.CommitUncommittedOffsets(ctx)
			o.released(name, ps)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { o.released(name, ps) }),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- consumeLoop(ctx, cl, func(r *kgo.Record) { l.add(name, r) }) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("member %s: %v", name, err)
			}
			cl.CommitUncommittedOffsets(context.Background())
			cl.CloseAllowingRebalance()
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitConverged waits until the consumer group is Stable with the named members
// (by client id): every member at the assignment epoch, owning its target, every
// partition owned once. It returns each member's partitions.
func waitConverged(t *testing.T, adm *kadm.Client, group string, partitions int, members ...string) map[string][]int32 {
	t.Helper()
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ds, err := adm.DescribeConsumerGroups(ctx, group)
		cancel()
		if err != nil {
			last = err.Error()
			continue
		}
		d := ds[group]
		last = fmt.Sprintf("state %s, epoch %d/%d, %d members", d.State, d.Epoch, d.AssignmentEpoch, len(d.Members))
		if d.Err != nil || d.State != "Stable" || len(d.Members) != len(members) {
			continue
		}
		out := map[string][]int32{}
		owned := map[int32]int{}
		ok := true
		for _, m := range d.Members {
			ps := m.Assignment.Sorted()
			for _, tp := range ps {
				out[m.ClientID] = append(out[m.ClientID], tp.Partitions...)
				for _, p := range tp.Partitions {
					owned[p]++
				}
			}
			target := m.TargetAssignment.Sorted()
			ok = ok && m.MemberEpoch == d.AssignmentEpoch && fmt.Sprint(ps) == fmt.Sprint(target) && slices.Contains(members, m.ClientID)
		}
		for p := range partitions {
			ok = ok && owned[int32(p)] == 1
		}
		if ok {
			return out
		}
		last += fmt.Sprintf(", assignments %v", out)
	}
	t.Fatalf("group %s did not converge on members %v: %s", group, members, last)
	return nil
}

// TestKIP848Convergence: a KIP-848 group on an 8-partition topic while a producer
// writes: alpha and beta share it; gamma joins; a member in its own process joins
// and is killed (SIGKILL) while it consumes; beta leaves; delta joins. After each
// step the group converges (Stable, every member at the assignment epoch and
// owning its target, each partition owned once). Throughout, no partition is
// assigned to a member while another still owns it (revocation comes first), and
// the victim receives only from partitions no one else owns. At the end every
// record was received, and a record was received twice only if the killed member
// had it.
func TestKIP848Convergence(t *testing.T) {
	n := testnode.Start(t, kip848NodeArgs...)
	const topic, group, partitions = "kip848", "kip848-workers", 8
	createTopic(t, n.Addr, topic, partitions)
	adm := kadm.NewClient(newClient(t, n.Addr))
	l, o := newLedger(), &owners{owner: map[int32]string{}}

	stopProducing := keepProducing(n.Addr, topic, "p", 500)

	stopAlpha := start848Member(t, n.Addr, topic, group, "alpha", l, o)
	defer stopAlpha()
	stopBeta := start848Member(t, n.Addr, topic, group, "beta", l, o)
	waitConverged(t, adm, group, partitions, "alpha", "beta")
	start848Member(t, n.Addr, topic, group, "gamma", l, o)
	waitConverged(t, adm, group, partitions, "alpha", "beta", "gamma")

	// The victim: a KIP-848 member in its own process that SIGKILLs itself after
	// 300 records, before committing them.
	child := exec.Command(os.Args[0], "-test.run=^TestHelperGroupMember$")
	child.Env = append(os.Environ(), "SKIFF_E2E_GROUP_PROTOCOL=consumer", "SKIFF_E2E_GROUP_MEMBER="+
		strings.Join([]string{n.Addr, topic, group, "victim", "p", "300"}, "|"))
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	childDone := make(chan struct{})
	go func() {
		defer close(childDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var p int32
			var off int64
			var v string
			if _, err := fmt.Sscanf(sc.Text(), "%d %d %s", &p, &off, &v); err == nil {
				// While the victim receives from a partition, no one else owns it.
				o.mu.Lock()
				if cur := o.owner[p]; cur != "" {
					o.violations = append(o.violations, fmt.Sprintf("the victim received from partition %d while %s owns it", p, cur))
				}
				o.mu.Unlock()
				l.add("victim", &kgo.Record{Partition: p, Offset: off, Value: []byte(v)})
			}
		}
	}()
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	select {
	case <-childDone:
	case <-time.After(90 * time.Second):
		t.Fatal("the victim did not receive 300 records")
	}
	child.Wait()
	killedAt := time.Now()
	stopBeta() // leaves while the victim's partitions wait for its session timeout
	waitConverged(t, adm, group, partitions, "alpha", "gamma")
	t.Logf("alpha and gamma own every partition %v after the victim died", time.Since(killedAt).Round(time.Millisecond))
	start848Member(t, n.Addr, topic, group, "delta", l, o)
	final := waitConverged(t, adm, group, partitions, "alpha", "gamma", "delta")
	t.Logf("converged: %v", final)

	produced, err := stopProducing()
	if err != nil {
		t.Fatal(err)
	}
	waitCount(t, l, "p", int(produced))

	o.mu.Lock()
	if len(o.violations) > 0 {
		t.Errorf("partitions owned twice at once:\n%s", strings.Join(o.violations, "\n"))
	}
	o.mu.Unlock()
	twice := 0
	for v, ds := range l.snapshot() {
		if len(ds) == 1 {
			continue
		}
		victim := 0
		for _, d := range ds {
			if d.member == "victim" {
				victim++
			}
		}
		if len(ds) != 2 || victim != 1 {
			t.Fatalf("record %s received %d times, %d of them by the victim: %+v", v, len(ds), victim, ds)
		}
		twice++
	}
	t.Logf("%d records received by 5 members; %d received again after the victim's crash", produced, twice)
}

// TestKIP848CoordinatorFailover: in a three-node cluster (__consumer_offsets RF 3)
// a KIP-848 group of two members consumes while a producer writes; the group's
// coordinator is killed. A survivor loads the group from its replica of the log:
// the same members at the same epochs with the same assignments, which go on
// heartbeating and consuming without rejoining; every record is received once.
func TestKIP848CoordinatorFailover(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, append(append([]string(nil), clusterArgs...), kip848NodeArgs...)...)
	const topic, group, partitions = "kip848-failover", "kip848-failover-g", 6
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	if r, err := adm.CreateTopic(ctx, partitions, 3, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var victim int32
	poll(t, 30*time.Second, "the group's coordinator", func() bool {
		c := adm.FindGroupCoordinators(ctx, group)[group]
		victim = c.NodeID
		return c.Err == nil
	})
	var seed *testnode.Node
	for _, n := range nodes {
		if n.ID != victim {
			seed = n
			break
		}
	}
	adm = kadm.NewClient(newClient(t, seed.Addr))
	l, o := newLedger(), &owners{owner: map[int32]string{}}
	start848Member(t, seed.Addr, topic, group, "alpha", l, o)
	start848Member(t, seed.Addr, topic, group, "beta", l, o)
	produceValues(t, seed.Addr, topic, "a", 5000)
	waitConverged(t, adm, group, partitions, "alpha", "beta")
	before := describeMembers(t, adm, group)

	for _, n := range nodes {
		if n.ID == victim {
			n.Kill()
		}
	}
	killed := time.Now()
	produced := make(chan error, 1)
	go func() { produced <- produceValuesErr(seed.Addr, topic, "b", 5000) }()
	// A new admin client: franz-go keeps the dead coordinator of the old one.
	poll(t, 90*time.Second, "a survivor to coordinate the group", func() bool {
		adm = kadm.NewClient(newClient(t, seed.Addr))
		c := adm.FindGroupCoordinators(ctx, group)[group]
		return c.Err == nil && c.NodeID != victim
	})
	waitConverged(t, adm, group, partitions, "alpha", "beta")
	after := describeMembers(t, adm, group)
	t.Logf("the group was served by a survivor %v after its coordinator was killed", time.Since(killed).Round(time.Millisecond))
	if before != after {
		t.Fatalf("members before the failover:\n%s\nafter:\n%s", before, after)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	waitCount(t, l, "a", 5000)
	waitCount(t, l, "b", 5000)
	for v, ds := range l.snapshot() {
		if len(ds) != 1 {
			t.Fatalf("record %s received %d times: %+v", v, len(ds), ds)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.violations) > 0 {
		t.Fatalf("partitions owned twice at once:\n%s", strings.Join(o.violations, "\n"))
	}
}

// describeMembers is the group's epoch and its members' ids, epochs and
// assignments, as one string to compare.
func describeMembers(t *testing.T, adm *kadm.Client, group string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil || ds.Error() != nil {
		t.Fatalf("describe %s: %v %v", group, err, ds.Error())
	}
	d := ds[group]
	out := fmt.Sprintf("epoch %d/%d", d.Epoch, d.AssignmentEpoch)
	for _, m := range d.Members {
		out += fmt.Sprintf("\n%s %s epoch %d %v", m.ClientID, m.MemberID, m.MemberEpoch, m.Assignment.Sorted())
	}
	return out
}
