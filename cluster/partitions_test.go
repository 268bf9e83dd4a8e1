package cluster

import (
	"errors"
	"slices"
	"testing"
)

func TestCreatePartitions(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	cache := startCache(t, newClient(t, m))
	created := Topic{Name: "grow", Partitions: 2, ReplicationFactor: 1, Assignment: oneReplica(2, 1),
		Configs: map[string]string{ConfigRetentionMs: "60000"}}
	if _, err := s.CreateTopic(ctx, created); err != nil {
		t.Fatal(err)
	}
	fixed := func(lists ...[]int32) func(Topic) ([][]int32, error) {
		return func(Topic) ([][]int32, error) { return lists, nil }
	}

	got, rev, err := s.CreatePartitions(ctx, "grow", 4, func(cur Topic) ([][]int32, error) {
		if cur.Partitions != 2 {
			t.Errorf("assign sees %d partitions, want 2", cur.Partitions)
		}
		return [][]int32{{2}, {3}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Partitions != 4 || !slices.EqualFunc(got.Assignment, [][]int32{{1}, {1}, {2}, {3}}, slices.Equal[[]int32]) {
		t.Fatalf("written %+v", got)
	}
	if err := cache.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	tp, ok := cache.Topic("grow")
	if !ok || tp.Partitions != 4 || tp.ID != got.ID || tp.Configs[ConfigRetentionMs] != "60000" {
		t.Fatalf("cache has %+v", tp)
	}
	for p, want := range []PartitionState{{Leader: 1, ISR: []int32{1}}, {Leader: 1, ISR: []int32{1}}, {Leader: 2, ISR: []int32{2}}, {Leader: 3, ISR: []int32{3}}} {
		st, ok := cache.Partition("grow", int32(p))
		if !ok || !partitionEqual(st, want) {
			t.Errorf("partition %d: %+v %v, want %+v", p, st, ok, want)
		}
	}
	if n := countKeys(t, m.Client(), partitionPrefix("grow")); n != 4 {
		t.Errorf("%d partition keys, want 4", n)
	}

	for _, tc := range []struct {
		name   string
		topic  string
		count  int32
		assign func(Topic) ([][]int32, error)
		want   error
	}{
		{"same count", "grow", 4, fixed(), ErrInvalidPartitions},
		{"fewer", "grow", 3, fixed(), ErrInvalidPartitions},
		{"too many", "grow", MaxPartitions + 1, fixed(), ErrInvalidPartitions},
		{"unknown topic", "nope", 5, fixed([]int32{1}), ErrUnknownTopic},
		{"too few lists", "grow", 6, fixed([]int32{1}), ErrInvalidReplicaAssignment},
		{"wrong replication factor", "grow", 5, fixed([]int32{1, 2}), ErrInvalidReplicaAssignment},
		{"broker twice", "grow", 5, fixed([]int32{-1}), ErrInvalidReplicaAssignment},
		{"bad name", "a/b", 5, fixed([]int32{1}), ErrInvalidTopicName},
	} {
		if _, _, err := s.CreatePartitions(ctx, tc.topic, tc.count, tc.assign); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	boom := errors.New("no brokers")
	if _, _, err := s.CreatePartitions(ctx, "grow", 5, func(Topic) ([][]int32, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("assign's error: %v", err)
	}
	if n := countKeys(t, m.Client(), partitionPrefix("grow")); n != 4 {
		t.Errorf("%d partition keys after refusals, want 4", n)
	}

	// A change of the topic between the read and the write (here: new configs, made by
	// assign itself) makes CreatePartitions read again and keep that change.
	calls := 0
	got, _, err = s.CreatePartitions(ctx, "grow", 5, func(cur Topic) ([][]int32, error) {
		calls++
		if calls == 1 {
			if _, err := s.SetTopicConfigs(ctx, "grow", map[string]string{ConfigRetentionMs: "120000"}); err != nil {
				t.Fatal(err)
			}
		}
		return [][]int32{{1}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || got.Partitions != 5 || got.Configs[ConfigRetentionMs] != "120000" {
		t.Errorf("after a concurrent change: %d calls, %+v", calls, got)
	}
}
