package cluster

import (
	"encoding/json"
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestEnsureCluster(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	a, b := New(m.Client(), quiet), New(newClient(t, m), quiet)
	id1, err := a.EnsureCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseUUID(id1); err != nil || len(id1) != 22 {
		t.Fatalf("cluster id %q: %v", id1, err)
	}
	for _, s := range []*Store{a, b} {
		id, err := s.EnsureCluster(ctx)
		if err != nil || id != id1 {
			t.Fatalf("second EnsureCluster: %q %v, want %q", id, err, id1)
		}
	}
	resp, err := m.Client().Get(ctx, keyCluster)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(resp.Kvs[0].Value, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["version"] != 1.0 || raw["format_version"] != 1.0 || raw["cluster_id"] != id1 {
		t.Fatalf("stored %s", resp.Kvs[0].Value)
	}

	// A cluster formatted by a newer Skiff is refused.
	if _, err := m.Client().Put(ctx, keyCluster, `{"version":1,"format_version":2,"cluster_id":"x"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.EnsureCluster(ctx); !errors.Is(err, ErrUnsupportedFormat) {
		t.Fatalf("newer format: %v", err)
	}
}

func countKeys(t *testing.T, c *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := c.Get(testCtx(t), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

func TestCreateDeleteTopic(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	topic := Topic{Name: "orders", Partitions: 3, ReplicationFactor: 2,
		Configs:    map[string]string{ConfigRetentionMs: "1000"},
		Assignment: [][]int32{{1, 2}, {2, 1}, {1, 2}}}
	rev, err := s.CreateTopic(ctx, topic)
	if err != nil || rev <= 0 {
		t.Fatalf("CreateTopic: %d %v", rev, err)
	}
	if _, err := s.CreateTopic(ctx, topic); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second CreateTopic: %v", err)
	}
	if n := countKeys(t, m.Client(), partitionPrefix("orders")); n != 3 {
		t.Fatalf("%d partition keys, want 3", n)
	}
	// Stored values: topic with id and configs; partitions led by the first replica.
	resp, err := m.Client().Get(ctx, topicKey("orders"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeTopic(topicKey("orders"), resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID == (UUID{}) || got.Partitions != 3 || got.ReplicationFactor != 2 || got.Configs[ConfigRetentionMs] != "1000" {
		t.Fatalf("stored topic %+v", got)
	}
	resp, err = m.Client().Get(ctx, partitionKey("orders", 1))
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodePartition(partitionKey("orders", 1), resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader != 2 || st.LeaderEpoch != 0 || st.PartitionEpoch != 0 || len(st.ISR) != 2 || st.ISR[0] != 2 || st.ISR[1] != 1 {
		t.Fatalf("partition 1: %+v", st)
	}

	// A topic whose name is a prefix of another is not touched by its delete.
	if _, err := s.CreateTopic(ctx, Topic{Name: "orders.v2", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, m.Client(), topicKey("orders")); n != 1 { // orders.v2 only
		t.Fatalf("%d topic keys with prefix orders, want 1", n)
	}
	if n := countKeys(t, m.Client(), partitionPrefix("orders")); n != 0 {
		t.Fatalf("%d partition keys left", n)
	}
	if n := countKeys(t, m.Client(), partitionPrefix("orders.v2")); n != 1 {
		t.Fatalf("orders.v2 lost its partition key")
	}
	if _, err := s.DeleteTopic(ctx, "orders"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second DeleteTopic: %v", err)
	}
	// Recreated under the same name: a new id.
	if _, err := s.CreateTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	resp, err = m.Client().Get(ctx, topicKey("orders"))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := decodeTopic(topicKey("orders"), resp.Kvs[0].Value)
	if again.ID == got.ID {
		t.Fatal("recreated topic kept its old id")
	}
}

func TestCreateTopicValidation(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	ok := Topic{Name: "t", Partitions: 2, ReplicationFactor: 1, Assignment: oneReplica(2, 1)}
	for _, c := range []struct {
		name string
		edit func(*Topic)
		want error
	}{
		{"bad name", func(t *Topic) { t.Name = "a/b" }, ErrInvalidTopicName},
		{"zero partitions", func(t *Topic) { t.Partitions, t.Assignment = 0, nil }, ErrInvalidPartitions},
		{"too many partitions", func(t *Topic) { t.Partitions = MaxPartitions + 1 }, ErrInvalidPartitions},
		{"zero rf", func(t *Topic) { t.ReplicationFactor = 0 }, ErrInvalidReplicationFactor},
		{"short assignment", func(t *Topic) { t.Assignment = t.Assignment[:1] }, ErrInvalidReplicaAssignment},
		{"rf mismatch", func(t *Topic) { t.Assignment = [][]int32{{1}, {1, 2}} }, ErrInvalidReplicaAssignment},
		{"duplicate replica", func(t *Topic) { t.ReplicationFactor, t.Assignment = 2, [][]int32{{1, 2}, {3, 3}} }, ErrInvalidReplicaAssignment},
		{"negative broker", func(t *Topic) { t.Assignment = [][]int32{{1}, {-1}} }, ErrInvalidReplicaAssignment},
		{"unknown config", func(t *Topic) { t.Configs = map[string]string{"no.such.config": "1"} }, ErrInvalidConfig},
		{"bad config value", func(t *Topic) { t.Configs = map[string]string{ConfigRetentionMs: "soon"} }, ErrInvalidConfig},
	} {
		tp := ok
		c.edit(&tp)
		if _, err := s.CreateTopic(ctx, tp); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if n := countKeys(t, m.Client(), Prefix); n != 0 {
		t.Fatalf("refused creates wrote %d keys", n)
	}
}

// TestCreateTopicMaxPartitions proves a topic of MaxPartitions fits in one
// transaction of a member with embedetcd's defaults.
func TestCreateTopicMaxPartitions(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	before, err := m.Client().Status(ctx, m.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	big := Topic{Name: "big", Partitions: MaxPartitions, ReplicationFactor: 3, Assignment: make([][]int32, MaxPartitions)}
	for p := range big.Assignment {
		big.Assignment[p] = []int32{int32(p % 3), int32(p+1) % 3, int32(p+2) % 3}
	}
	if _, err := s.CreateTopic(ctx, big); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, m.Client(), partitionPrefix("big")); n != MaxPartitions {
		t.Fatalf("%d partition keys", n)
	}
	after, err := m.Client().Status(ctx, m.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d partitions: etcd db in use %d -> %d bytes", MaxPartitions, before.DbSizeInUse, after.DbSizeInUse)
	if _, err := s.DeleteTopic(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	// CreateTopics writes it as a nested transaction, alone in its own.
	small := Topic{Name: "small", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 1)}
	for i, c := range s.CreateTopics(ctx, []Topic{small, big}) {
		if c.Err != nil {
			t.Fatalf("CreateTopics, topic %d: %v", i, c.Err)
		}
	}
	if n := countKeys(t, m.Client(), partitionPrefix("big")); n != MaxPartitions {
		t.Fatalf("CreateTopics: %d partition keys", n)
	}
}

func TestSetTopicConfigs(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	if _, err := s.SetTopicConfigs(ctx, "nope", nil); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
	tp := Topic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 7),
		Configs: map[string]string{ConfigSegmentBytes: "1048576"}}
	if _, err := s.CreateTopic(ctx, tp); err != nil {
		t.Fatal(err)
	}
	var cerr *ConfigError
	if _, err := s.SetTopicConfigs(ctx, "t", map[string]string{ConfigCleanupPolicy: "compacted"}); !errors.As(err, &cerr) || cerr.Name != ConfigCleanupPolicy {
		t.Fatalf("compacted: %v", err)
	}
	rev, err := s.SetTopicConfigs(ctx, "t", map[string]string{ConfigRetentionMs: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Client().Get(ctx, topicKey("t"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := decodeTopic(topicKey("t"), resp.Kvs[0].Value)
	if resp.Kvs[0].ModRevision != rev || len(got.Configs) != 1 || got.Configs[ConfigRetentionMs] != "-1" ||
		got.Assignment[0][0] != 7 {
		t.Fatalf("after SetTopicConfigs (rev %d): %+v at %d", rev, got, resp.Kvs[0].ModRevision)
	}
}

func TestAlterPartition(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	tp := Topic{Name: "t", Partitions: 2, ReplicationFactor: 3, Assignment: [][]int32{{1, 2, 3}, {2, 3, 1}}}
	if _, err := s.CreateTopic(ctx, tp); err != nil {
		t.Fatal(err)
	}
	// The leader shrinks the ISR.
	st, rev, err := s.AlterPartition(ctx, "t", 0, 0, PartitionState{Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2}})
	if err != nil || st.PartitionEpoch != 1 || rev <= 0 {
		t.Fatalf("shrink: %+v %d %v", st, rev, err)
	}
	// A writer that read epoch 0 is fenced.
	if _, _, err := s.AlterPartition(ctx, "t", 0, 0, PartitionState{Leader: 1, ISR: []int32{1}}); !errors.Is(err, ErrStalePartitionEpoch) {
		t.Fatalf("stale: %v", err)
	}
	for _, c := range []struct {
		name string
		next PartitionState
	}{
		{"leader outside ISR", PartitionState{Leader: 3, LeaderEpoch: 1, ISR: []int32{1, 2}}},
		{"new leader, same epoch", PartitionState{Leader: 2, LeaderEpoch: 0, ISR: []int32{1, 2}}},
		{"epoch goes back", PartitionState{Leader: 1, LeaderEpoch: -1, ISR: []int32{1}}},
		{"ISR outside replicas", PartitionState{Leader: 1, ISR: []int32{1, 9}}},
		{"ISR duplicate", PartitionState{Leader: 1, ISR: []int32{1, 1}}},
	} {
		if _, _, err := s.AlterPartition(ctx, "t", 0, 1, c.next); !errors.Is(err, ErrInvalidPartitionState) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// The controller moves leadership with a new epoch; no leader is allowed too.
	st, _, err = s.AlterPartition(ctx, "t", 0, 1, PartitionState{Leader: 2, LeaderEpoch: 1, ISR: []int32{2}})
	if err != nil || st.PartitionEpoch != 2 || st.Leader != 2 {
		t.Fatalf("move leader: %+v %v", st, err)
	}
	if _, _, err := s.AlterPartition(ctx, "t", 0, 2, PartitionState{Leader: NoLeader, LeaderEpoch: 2}); err != nil {
		t.Fatalf("no leader: %v", err)
	}
	if _, _, err := s.AlterPartition(ctx, "t", 5, 0, PartitionState{Leader: 1, ISR: []int32{1}}); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("unknown partition: %v", err)
	}
	if _, _, err := s.AlterPartition(ctx, "u", 0, 0, PartitionState{Leader: 1, ISR: []int32{1}}); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
}

// TestCreateTopics: several topics in one call are written by one transaction
// in which each topic is created only if its name is free, so an existing or
// invalid topic fails alone; topics beyond createBatchOps keys go in another
// transaction.
func TestCreateTopics(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	topic := func(name string, partitions int32) Topic {
		return Topic{Name: name, Partitions: partitions, ReplicationFactor: 1, Assignment: oneReplica(int(partitions), 1)}
	}
	if _, err := s.CreateTopic(ctx, topic("old", 1)); err != nil {
		t.Fatal(err)
	}
	bigger := int32(createBatchOps/2 + 1) // two of them do not fit one transaction
	out := s.CreateTopics(ctx, []Topic{topic("a", 2), topic("old", 3), topic("a/b", 1), topic("b", 1), topic("big1", bigger), topic("big2", bigger)})
	for i, want := range []error{nil, ErrTopicExists, ErrInvalidTopicName, nil, nil, nil} {
		if !errors.Is(out[i].Err, want) || (want == nil) != (out[i].Rev > 0) {
			t.Errorf("topic %d: rev %d, err %v; want err %v", i, out[i].Rev, out[i].Err, want)
		}
	}
	if out[0].Rev != out[3].Rev || out[0].Rev != out[4].Rev || out[5].Rev <= out[4].Rev {
		t.Errorf("revisions %d %d %d %d: want a, b and big1 in one transaction, big2 in a later one", out[0].Rev, out[3].Rev, out[4].Rev, out[5].Rev)
	}
	for name, want := range map[string]int64{"a": 2, "old": 1, "b": 1, "big1": int64(bigger), "big2": int64(bigger)} {
		if n := countKeys(t, m.Client(), partitionPrefix(name)); n != want {
			t.Errorf("topic %s: %d partition keys, want %d", name, n, want)
		}
	}
}
