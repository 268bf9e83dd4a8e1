package cluster

import "testing"

// TestSnapshotSameTopic: a snapshot says a topic is unchanged from an earlier
// one until a write touches the topic or one of its partitions, and only then.
func TestSnapshotSameTopic(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	if _, err := s.EnsureCluster(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if _, err := s.CreateTopic(ctx, Topic{Name: name, Partitions: 2, ReplicationFactor: 1, Assignment: oneReplica(2, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	c := startCache(t, m.Client())
	wait := func(rev int64, err error) *Snapshot {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
		return c.Snapshot()
	}
	first := c.Snapshot()
	if first.SameTopic(nil, "a") {
		t.Error("a topic is the same as in no snapshot")
	}

	st, _ := first.Partition("a", 1)
	next := st
	next.LeaderEpoch++
	_, rev, err := s.AlterPartition(ctx, "a", 1, st.PartitionEpoch, next)
	second := wait(rev, err)
	if second.SameTopic(first, "a") {
		t.Error("a after a change of partition a/1: still the same")
	}
	if !second.SameTopic(first, "b") || !second.SameTopic(first, "c") {
		t.Error("b and c, untouched by a change of a/1: not the same")
	}

	third := wait(s.AlterTopicConfigs(ctx, "b", func(map[string]string) (map[string]string, error) {
		return map[string]string{ConfigRetentionMs: "1000"}, nil
	}))
	if third.SameTopic(second, "b") || !third.SameTopic(second, "a") {
		t.Error("after b's configs changed: want b changed and a the same")
	}

	fourth := wait(s.DeleteTopic(ctx, "c"))
	if fourth.SameTopic(third, "c") || fourth.SameTopic(fourth, "c") {
		t.Error("deleted topic c: still the same")
	}
	if fourth.SameTopic(first, "a") || !fourth.SameTopic(second, "a") {
		t.Error("a: changed since the first snapshot, the same since the second; not so answered")
	}
}

// TestSnapshotSameTopicGrownMovedRecreated: more partitions, a partition's new
// replicas, and a topic deleted and created again under its name (a new id)
// each make the topic not the same, and leave the others the same.
func TestSnapshotSameTopicGrownMovedRecreated(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	if _, err := s.EnsureCluster(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := s.CreateTopic(ctx, Topic{Name: name, Partitions: 2, ReplicationFactor: 1, Assignment: oneReplica(2, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	c := startCache(t, m.Client())
	wait := func(rev int64, err error) *Snapshot {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
		return c.Snapshot()
	}
	first := c.Snapshot()

	_, rev, err := s.CreatePartitions(ctx, "a", 3, func(Topic) ([][]int32, error) { return [][]int32{{1}}, nil })
	grown := wait(rev, err)
	if grown.SameTopic(first, "a") || !grown.SameTopic(first, "b") {
		t.Error("after a grew to 3 partitions: want a changed and b the same")
	}

	moved := wait(s.SetReplicas(ctx, "b", 0, []int32{2}, nil))
	if moved.SameTopic(grown, "b") || !moved.SameTopic(grown, "a") {
		t.Error("after b/0 moved to broker 2: want b changed and a the same")
	}

	old, _ := moved.Topic("a")
	wait(s.DeleteTopic(ctx, "a"))
	recreated := wait(s.CreateTopic(ctx, Topic{Name: "a", Partitions: 3, ReplicationFactor: 1, Assignment: oneReplica(3, 1)}))
	if t2, _ := recreated.Topic("a"); t2.ID == old.ID {
		t.Fatalf("topic a created again with its old id %v", old.ID)
	}
	if recreated.SameTopic(moved, "a") || !recreated.SameTopic(moved, "b") {
		t.Error("after a was deleted and created again: want a changed and b the same")
	}
}
