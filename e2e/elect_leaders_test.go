package e2e

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/testnode"
)

// leadersOf returns each partition's leader and replicas of topic, as nodes[i]'s
// Metadata says (nil on an error).
func leadersOf(t *testing.T, addr, topic string) kadm.PartitionDetails {
	md, err := metadata(t, addr, topic)
	if err != nil || md.Topics[topic].Err != nil {
		return nil
	}
	return md.Topics[topic].Partitions
}

// preferredLead reports whether every partition of topic is led by its preferred
// replica (the first of its assignment) with every replica in sync.
func preferredLead(t *testing.T, addr, topic string) bool {
	ps := leadersOf(t, addr, topic)
	for _, p := range ps {
		if p.Leader != p.Replicas[0] || len(p.ISR) != len(p.Replicas) {
			return false
		}
	}
	return len(ps) > 0
}

// restartAway stops node n until no partition of topic lists it in its ISR, then
// restarts it and waits until it is back in every ISR: the partitions it
// preferred are then led by others.
func restartAway(t *testing.T, n *testnode.Node, via, topic string) {
	n.Stop()
	poll(t, 30*time.Second, "leadership and ISRs leave the stopped node", func() bool {
		ps := leadersOf(t, via, topic)
		for _, p := range ps {
			if p.Leader == n.ID || p.Leader < 0 || len(p.ISR) != len(p.Replicas)-1 {
				return false
			}
		}
		return len(ps) > 0
	})
	n.Restart()
	poll(t, 30*time.Second, "the restarted node is back in every ISR", func() bool {
		ps := leadersOf(t, via, topic)
		for _, p := range ps {
			if len(p.ISR) != len(p.Replicas) {
				return false
			}
		}
		return len(ps) > 0
	})
}

// TestElectLeaders: without the automatic rebalance, a node that restarted leads
// nothing until kadm's ElectLeaders asks for preferred elections; then every
// partition is led by its preferred replica, and a second request needs none.
// An unclean election brings back a partition whose only in-sync replica is
// gone, on its live out-of-sync replica.
func TestElectLeaders(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, "--session-timeout", "2s", "--auto-leader-rebalance=false")
	via := nodes[0].Addr
	adm := kadm.NewClient(newClient(t, via))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createTopicRF(t, via, "elect", 6, 3)
	restartAway(t, nodes[2], via, "elect")
	moved := 0
	for _, p := range leadersOf(t, via, "elect") {
		if p.Replicas[0] == nodes[2].ID {
			moved++
			if p.Leader == nodes[2].ID {
				t.Fatalf("partition %d: the restarted node leads again without a rebalance", p.Partition)
			}
		}
	}
	if moved == 0 {
		t.Fatal("the restarted node is the preferred replica of no partition")
	}
	rs, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"elect": {0: {}, 1: {}, 2: {}, 3: {}, 4: {}, 5: {}}})
	if err != nil {
		t.Fatal(err)
	}
	elected := 0
	for p, r := range rs["elect"] {
		switch {
		case r.Err == nil:
			elected++
		case !errors.Is(r.Err, kerr.ElectionNotNeeded):
			t.Errorf("partition %d: %v", p, r.Err)
		}
	}
	if elected != moved || len(rs["elect"]) != 6 {
		t.Errorf("%d elections of %d results, want %d (the partitions the restarted node prefers)", elected, len(rs["elect"]), moved)
	}
	if !preferredLead(t, via, "elect") {
		t.Fatalf("after the elections: %+v, want every preferred replica leading", leadersOf(t, via, "elect"))
	}
	if rs, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil); err != nil || len(rs["elect"]) != 0 {
		t.Errorf("elections of all partitions, none needed: %+v %v, want no partition of elect listed", rs["elect"], err)
	}

	// Unclean: a partition with replicas a and b; b stops and leaves the ISR, a
	// dies, b comes back out of sync. Only an unclean election gives it a leader.
	createTopicRF(t, via, "unclean", 1, 2)
	p := leadersOf(t, via, "unclean")[0]
	byID := map[int32]*testnode.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	a, b := byID[p.Replicas[0]], byID[p.Replicas[1]]
	var other *testnode.Node
	for _, n := range nodes {
		if n != a && n != b {
			other = n
		}
	}
	oadm := kadm.NewClient(newClient(t, other.Addr))
	b.Stop()
	poll(t, 30*time.Second, "the stopped replica leaves the ISR", func() bool {
		ps := leadersOf(t, other.Addr, "unclean")
		return len(ps) == 1 && len(ps[0].ISR) == 1 && ps[0].ISR[0] == a.ID
	})
	a.Kill()
	b.Restart()
	poll(t, 30*time.Second, "the partition is offline with its out-of-sync replica back", func() bool {
		ps := leadersOf(t, other.Addr, "unclean")
		md, err := metadata(t, other.Addr)
		return err == nil && slices.Contains(md.Brokers.NodeIDs(), b.ID) && len(ps) == 1 && ps[0].Leader < 0
	})
	if rs, err := oadm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"unclean": {0: {}}}); err != nil || !errors.Is(rs["unclean"][0].Err, kerr.PreferredLeaderNotAvailable) {
		t.Errorf("preferred election with the preferred replica dead: %+v %v, want PREFERRED_LEADER_NOT_AVAILABLE", rs["unclean"][0], err)
	}
	rs, err = oadm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"unclean": {0: {}}})
	if err != nil || rs["unclean"][0].Err != nil {
		t.Fatalf("unclean election: %+v %v", rs["unclean"][0], err)
	}
	if ps := leadersOf(t, other.Addr, "unclean"); len(ps) != 1 || ps[0].Leader != b.ID {
		t.Fatalf("after the unclean election: %+v, want %d leading", ps, b.ID)
	}
}

// TestPreferredLeadersReturn: after a node restarts, the controller's rebalance
// gives each node back the leadership of the partitions it prefers (an even
// spread: the placement spreads preferred replicas evenly) within
// leader.imbalance.check.interval of the node being back in sync.
func TestPreferredLeadersReturn(t *testing.T) {
	const interval = 5 * time.Second
	nodes := testnode.StartCluster(t, 3, "--session-timeout", "2s", "--leader-imbalance-check-interval", interval.String())
	via := nodes[0].Addr
	createTopicRF(t, via, "spread", 12, 3)
	poll(t, 2*interval, "preferred leaders at first", func() bool { return preferredLead(t, via, "spread") })
	led := func() map[int32]int {
		n := map[int32]int{}
		for _, p := range leadersOf(t, via, "spread") {
			n[p.Leader]++
		}
		return n
	}
	if got := led(); len(got) != 3 || got[nodes[0].ID] != 4 || got[nodes[1].ID] != 4 || got[nodes[2].ID] != 4 {
		t.Fatalf("leaders per node at first: %v, want 4 each", got)
	}
	restartAway(t, nodes[1], via, "spread")
	took := poll(t, interval+5*time.Second, "leaders back on their preferred replicas", func() bool { return preferredLead(t, via, "spread") })
	if got := led(); got[nodes[0].ID] != 4 || got[nodes[1].ID] != 4 || got[nodes[2].ID] != 4 {
		t.Fatalf("leaders per node after the rebalance: %v, want 4 each", got)
	}
	t.Logf("leadership back on the preferred replicas %v after the restarted node was back in sync (leader.imbalance.check.interval %v)", took, interval)
}
