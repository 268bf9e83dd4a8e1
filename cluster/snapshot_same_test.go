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
