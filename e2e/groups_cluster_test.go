package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestGroupCoordinatorFailover: in a three-node cluster a group commits offsets
// (replicated in __consumer_offsets, RF 3); its coordinator is killed; the leader
// of the group's __consumer_offsets partition moves to a survivor, which applies its
// replica of the log and serves the same committed offsets, and the group resumes
// exactly after them.
func TestGroupCoordinatorFailover(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, append(append([]string(nil), clusterArgs...), groupNodeArgs...)...)
	const topic, group = "failover-work", "failover-group"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	produceValues(t, nodes[0].Addr, topic, "f", 3000)

	cl, err := kgo.NewClient(memberOpts(nodes[0].Addr, topic, group, "first")...)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < 1000 {
		fs := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d: %v", len(seen), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		cl.AllowRebalance()
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	before, err := adm.FetchOffsets(ctx, group)
	if err != nil || before.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, before.Error())
	}
	cl.CloseAllowingRebalance()

	coords := adm.FindGroupCoordinators(ctx, group)
	if coords[group].Err != nil {
		t.Fatalf("find coordinator: %v", coords[group].Err)
	}
	victim := coords[group].NodeID
	var rest []*testnode.Node
	for _, n := range nodes {
		if n.ID == victim {
			n.Kill()
		} else {
			rest = append(rest, n)
		}
	}
	adm = kadm.NewClient(newClient(t, rest[0].Addr, kgo.SeedBrokers(rest[0].Addr, rest[1].Addr)))
	took := poll(t, 90*time.Second, "a survivor to serve the group's offsets", func() bool {
		c := adm.FindGroupCoordinators(ctx, group)
		if c[group].Err != nil || c[group].NodeID == victim {
			return false
		}
		after, err := adm.FetchOffsets(ctx, group)
		if err != nil || after.Error() != nil {
			return false
		}
		for _, o := range before.Sorted() {
			if a, ok := after.Lookup(o.Topic, o.Partition); !ok || a.At != o.At {
				t.Fatalf("%s/%d: committed %d, the new coordinator says %d (%v)", o.Topic, o.Partition, o.At, a.At, ok)
			}
		}
		return true
	})
	t.Logf("the group's offsets were served by a survivor %v after its coordinator was killed", took)

	l := newLedger()
	startMember(t, rest[0].Addr, topic, group, "second", l)
	waitCount(t, l, "f", 3000-len(seen))
	for v := range l.snapshot() {
		if seen[v] {
			t.Fatalf("record %s consumed again after the failover", v)
		}
	}
}
