package cluster

import (
	"errors"
	"slices"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestPartitionMarks: election and reassignment marks written to etcd reach the
// cache's snapshots, and leave them when deleted.
func TestPartitionMarks(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	if _, err := s.CreateTopic(ctx, Topic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 1)}); err != nil {
		t.Fatal(err)
	}
	c := startCache(t, m.Client())
	rev, err := s.RequestElections(ctx, ElectUnclean, []TopicPartition{{"t", 0}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if typ, ok := c.Snapshot().electionAsked("t", 0); !ok || typ != ElectUnclean || !c.Snapshot().PendingElection("t", 0) {
		t.Fatalf("election mark: %v %v, want unclean", typ, ok)
	}

	snap := c.Snapshot()
	if err := s.Reassign(ctx, snap, "t", 0, nil); !errors.Is(err, ErrNoReassignment) {
		t.Fatalf("cancel of none: %v", err)
	}
	if err := s.Reassign(ctx, snap, "t", 0, []int32{1, 1}); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("a broker twice: %v", err)
	}
	if err := s.Reassign(ctx, snap, "t", 3, []int32{1}); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("an unknown partition: %v", err)
	}
	// No broker is registered here: write the mark as Reassign would.
	put, err := m.Client().Put(ctx, reassignmentKey("t", 0), encode(reassignmentValue{Version: valueVersion, Target: []int32{2}, Original: []int32{1}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, put.Header.Revision); err != nil {
		t.Fatal(err)
	}
	ra, ok := c.Snapshot().Reassignments()[TopicPartition{"t", 0}]
	if !ok || !slices.Equal(ra.Target, []int32{2}) || !slices.Equal(ra.Original, []int32{1}) || ra.modRev != put.Header.Revision {
		t.Fatalf("reassignment mark: %+v %v", ra, ok)
	}

	del, err := m.Client().Delete(ctx, prefixElections, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, del.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if c.Snapshot().PendingElection("t", 0) {
		t.Fatal("the deleted election mark is still pending")
	}
}
