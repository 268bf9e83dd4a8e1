package e2e

// A share group across the failover of its group coordinator.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// membershipLog is a kgo logger keeping the share consumers' lines that say a
// member lost its membership and rejoins from scratch.
type membershipLog struct {
	mu   sync.Mutex
	lost []string
}

func (l *membershipLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *membershipLog) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	if !strings.Contains(msg, "lost membership") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost = append(l.lost, fmt.Sprintf("%s %v", msg, keyvals))
}

// describeShareGroup describes group through any of seeds, retrying until it
// answers with members coordinated by a node other than not.
func describeShareGroup(t *testing.T, seeds []string, group string, not int32) kadm.DescribedShareGroup {
	t.Helper()
	var d kadm.DescribedShareGroup
	poll(t, time.Minute, "group "+group+" described with members", func() bool {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, clientOpts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ds, err := kadm.NewClient(cl).DescribeShareGroups(ctx, group)
		if err != nil {
			return false
		}
		d = ds[group]
		return d.Err == nil && d.Coordinator.NodeID != not && len(d.Members) == 3
	})
	return d
}

// TestShareGroupCoordinatorKilledThreeNodes: three share consumers of a group on
// three nodes; the node coordinating the group is SIGKILLed mid-stream. The next
// coordinator loads the membership from __consumer_offsets: every member keeps
// its id and its epoch (none is told it lost its membership and rejoins), and no
// record whose acceptance was confirmed is delivered again.
func TestShareGroupCoordinatorKilledThreeNodes(t *testing.T) {
	const topic, group = "share-coord-failover", "share-coord-failover-group"
	lost := &membershipLog{}
	var before kadm.DescribedShareGroup
	left := shareKillRun(t, topic, group, func(seeds []string) int32 {
		before = describeShareGroup(t, seeds, group, -1)
		return before.Coordinator.NodeID
	}, kgo.WithLogger(lost))
	after := describeShareGroup(t, left, group, before.Coordinator.NodeID)
	t.Logf("coordinator %d -> %d, group epoch %d -> %d", before.Coordinator.NodeID, after.Coordinator.NodeID, before.GroupEpoch, after.GroupEpoch)
	if after.GroupEpoch < before.GroupEpoch {
		t.Errorf("group epoch went back from %d to %d", before.GroupEpoch, after.GroupEpoch)
	}
	epochs := make(map[string]int32)
	for _, m := range before.Members {
		epochs[m.MemberID] = m.MemberEpoch
	}
	for _, m := range after.Members {
		was, ok := epochs[m.MemberID]
		switch {
		case !ok:
			t.Errorf("member %s is new after the failover (before: %v)", m.MemberID, epochs)
		case m.MemberEpoch < was:
			t.Errorf("member %s: epoch %d after the failover, %d before", m.MemberID, m.MemberEpoch, was)
		}
	}
	lost.mu.Lock()
	defer lost.mu.Unlock()
	for _, l := range lost.lost {
		t.Errorf("a member rejoined from scratch: %s", l)
	}
}
