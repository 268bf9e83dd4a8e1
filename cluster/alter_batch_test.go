package cluster

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestAlterPartitions(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	const n = MaxBatchedChanges + 44 // two transactions
	assign := make([][]int32, n)
	for i := range assign {
		assign[i] = []int32{1, 2}
	}
	if _, err := s.CreateTopic(ctx, Topic{Name: "t", Partitions: n, ReplicationFactor: 2, Assignment: assign}); err != nil {
		t.Fatal(err)
	}
	var changes []PartitionChange
	for p := range int32(n) {
		changes = append(changes, PartitionChange{Topic: "t", Partition: p, Next: PartitionState{Leader: 2, LeaderEpoch: 1, ISR: []int32{2}}})
	}
	changes = append(changes,
		PartitionChange{Topic: "t", Partition: 0, Expected: 7, Next: PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}}},
		PartitionChange{Topic: "t", Partition: n, Next: PartitionState{Leader: 1, ISR: []int32{1}}},
		PartitionChange{Topic: "u", Partition: 0, Next: PartitionState{Leader: 1, ISR: []int32{1}}},
		// In the second transaction, which reads what the first wrote.
		PartitionChange{Topic: "t", Partition: 1, Expected: 1, Next: PartitionState{Leader: 9, LeaderEpoch: 2, ISR: []int32{9}}},
	)
	out, rev, err := s.AlterPartitions(ctx, changes)
	if err != nil || rev <= 0 {
		t.Fatalf("AlterPartitions: rev %d, %v", rev, err)
	}
	for p := range n {
		if out[p].Err != nil || out[p].State.PartitionEpoch != 1 || out[p].State.Leader != 2 {
			t.Fatalf("partition %d: %+v", p, out[p])
		}
	}
	for i, want := range []error{ErrStalePartitionEpoch, ErrUnknownPartition, ErrUnknownTopic, ErrInvalidPartitionState} {
		if got := out[n+i].Err; !errors.Is(got, want) {
			t.Errorf("change %d: %v, want %v", n+i, got, want)
		}
	}
	// What was written is what etcd holds.
	for p := range int32(n) {
		if st := storedPartition(t, s, "t", p); st.PartitionEpoch != 1 || st.Leader != 2 || st.LeaderEpoch != 1 {
			t.Fatalf("stored partition %d: %+v", p, st)
		}
	}

	// A failed fence writes nothing and says so.
	lost := clientv3.Compare(clientv3.Version("/no-such-election-key"), ">", 0)
	retry := []PartitionChange{{Topic: "t", Partition: 0, Expected: 1, Next: PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1}}}}
	if _, _, err := s.AlterPartitions(ctx, retry, lost); !errors.Is(err, ErrFenced) {
		t.Fatalf("lost fence: %v", err)
	}
	if st := storedPartition(t, s, "t", 0); st.PartitionEpoch != 1 {
		t.Fatalf("written despite a lost fence: %+v", st)
	}
}

func storedPartition(t *testing.T, s *Store, topic string, p int32) PartitionState {
	t.Helper()
	resp, err := s.client.Get(testCtx(t), partitionKey(topic, p))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read %s/%d: %v", topic, p, err)
	}
	st, err := decodePartition(partitionKey(topic, p), resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAlterPartitionsSamePartition: changes of one partition in one batch are
// made as if one at a time, each checked against the state the one before
// wrote (etcd refuses a transaction that puts one key twice), next to changes
// of other partitions of the same topic.
func TestAlterPartitionsSamePartition(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	if _, err := s.CreateTopic(ctx, Topic{Name: "t", Partitions: 2, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}, {1, 2}}}); err != nil {
		t.Fatal(err)
	}
	changes := []PartitionChange{
		{Topic: "t", Partition: 0, Next: PartitionState{Leader: 2, LeaderEpoch: 1, ISR: []int32{2}}},
		{Topic: "t", Partition: 1, Next: PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}}},
		{Topic: "t", Partition: 0, Expected: 1, Next: PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1}}},
		{Topic: "t", Partition: 0, Next: PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2}}}, // stale by then
	}
	out, rev, err := s.AlterPartitions(ctx, changes)
	if err != nil || rev <= 0 {
		t.Fatalf("AlterPartitions: rev %d, %v", rev, err)
	}
	for i, want := range []struct{ epoch, leader int32 }{{1, 2}, {1, 1}, {2, 1}} {
		if o := out[i]; o.Err != nil || o.State.PartitionEpoch != want.epoch || o.State.Leader != want.leader {
			t.Errorf("change %d: %+v, want partition epoch %d, leader %d", i, o, want.epoch, want.leader)
		}
	}
	if !errors.Is(out[3].Err, ErrStalePartitionEpoch) {
		t.Errorf("change 3: %v, want %v", out[3].Err, ErrStalePartitionEpoch)
	}
	if st := storedPartition(t, s, "t", 0); st.PartitionEpoch != 2 || st.Leader != 1 || st.LeaderEpoch != 2 {
		t.Fatalf("stored partition 0: %+v", st)
	}
	if st := storedPartition(t, s, "t", 1); st.PartitionEpoch != 1 || st.Leader != 1 {
		t.Fatalf("stored partition 1: %+v", st)
	}
}
