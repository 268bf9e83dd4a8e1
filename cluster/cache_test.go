package cluster

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestCacheFollowsWrites(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	// Metadata written before the cache starts is listed.
	id, err := s.EnsureCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, Topic{Name: "b", Partitions: 2, ReplicationFactor: 1, Assignment: oneReplica(2, 1)}); err != nil {
		t.Fatal(err)
	}
	c := startCache(t, m.Client())
	if c.ClusterID() != id {
		t.Fatalf("cluster id %q, want %q", c.ClusterID(), id)
	}
	if _, ok := c.Partition("b", 1); !ok {
		t.Fatal("listed topic b has no partition 1")
	}

	rev, err := s.CreateTopic(ctx, Topic{Name: "a", Partitions: 3, ReplicationFactor: 1, Assignment: oneReplica(3, 1),
		Configs: map[string]string{ConfigRetentionMs: "60000"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	snap := c.Snapshot()
	if snap.Revision() < rev {
		t.Fatalf("snapshot at %d after waiting for %d", snap.Revision(), rev)
	}
	ta, ok := snap.Topic("a")
	if !ok || ta.Partitions != 3 || ta.ID == (UUID{}) || ta.Configs[ConfigRetentionMs] != "60000" {
		t.Fatalf("topic a: %+v %v", ta, ok)
	}
	for p := int32(0); p < 3; p++ {
		st, ok := snap.Partition("a", p)
		if !ok || st.Leader != 1 || !slices.Equal(st.ISR, []int32{1}) {
			t.Fatalf("partition a/%d: %+v %v", p, st, ok)
		}
	}
	if _, ok := snap.Partition("a", 3); ok {
		t.Fatal("partition a/3 exists")
	}
	names := []string{}
	for _, tp := range snap.Topics() {
		names = append(names, tp.Name)
	}
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("Topics() = %v", names)
	}

	changed := snap.Changed()
	rev, err = s.SetTopicConfigs(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("Changed of the old snapshot not closed")
	}
	if ta, _ := c.Topic("a"); len(ta.Configs) != 0 {
		t.Fatalf("configs after clearing: %v", ta.Configs)
	}
	// The old snapshot is unchanged: snapshots are immutable.
	if ta, _ := snap.Topic("a"); ta.Configs[ConfigRetentionMs] != "60000" {
		t.Fatal("old snapshot changed")
	}

	rev, err = s.DeleteTopic(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Topic("a"); ok {
		t.Fatal("deleted topic still cached")
	}
	if _, ok := c.Partition("a", 0); ok {
		t.Fatal("deleted topic's partition still cached")
	}
	if len(c.Topics()) != 1 {
		t.Fatalf("Topics() = %v", c.Topics())
	}
}

func TestWaitRevision(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	c := startCache(t, m.Client())

	// A revision of a write outside /skiff/ produces no event for the cache;
	// WaitRevision asks etcd for a progress report and still returns.
	put, err := m.Client().Put(ctx, "/elsewhere", "x")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := c.WaitRevision(ctx, put.Header.Revision); err != nil {
		t.Fatal(err)
	}
	t.Logf("waited %v for a revision outside /skiff/", time.Since(t0))

	// A revision that does not exist yet: the wait ends with ctx.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := c.WaitRevision(short, put.Header.Revision+100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("future revision: %v", err)
	}

	// A waiter is released by Close.
	errc := make(chan error, 1)
	go func() { errc <- c.WaitRevision(ctx, put.Header.Revision+100) }()
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrCacheClosed) {
			t.Fatalf("after Close: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("waiter not released by Close")
	}
}

// TestCacheSync: Sync returns a revision at or past every write made before it, and
// the cache has it by then.
func TestCacheSync(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	c := startCache(t, m.Client())
	put, err := m.Client().Put(ctx, Prefix+"draining/7", "")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := c.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev < put.Header.Revision || c.Revision() < rev {
		t.Fatalf("Sync returned %d, cache at %d, after a write at %d", rev, c.Revision(), put.Header.Revision)
	}
}

func TestSubscription(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	if _, err := s.CreateTopic(ctx, Topic{Name: "old", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 1)}); err != nil {
		t.Fatal(err)
	}
	c := startCache(t, m.Client())
	sub := c.Subscribe()

	kinds := func(evs []Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, e.Kind.String()+":"+e.Topic.Name)
		}
		return out
	}
	// The first Next reports what exists.
	evs, snap, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(evs); !slices.Equal(got, []string{"TopicCreated:old"}) {
		t.Fatalf("first Next: %v", got)
	}

	rev, err := s.CreateTopic(ctx, Topic{Name: "new", Partitions: 2, ReplicationFactor: 2, Assignment: [][]int32{{1, 2}, {2, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	evs, snap, err = sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(evs); !slices.Equal(got, []string{"TopicCreated:new"}) || snap.Revision() != rev {
		t.Fatalf("after create: %v at %d (create at %d)", got, snap.Revision(), rev)
	}

	if _, _, err := s.AlterPartition(ctx, "new", 1, 0, PartitionState{Leader: 2, ISR: []int32{2}}); err != nil {
		t.Fatal(err)
	}
	evs, _, err = sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != PartitionChanged || evs[0].Partition != 1 ||
		!slices.Equal(evs[0].Old.ISR, []int32{2, 1}) || !slices.Equal(evs[0].New.ISR, []int32{2}) || evs[0].New.PartitionEpoch != 1 {
		t.Fatalf("after AlterPartition: %+v", evs)
	}

	// Changes made while the subscriber is away are combined into one diff:
	// old deleted and recreated is Deleted+Created; a config change is Updated.
	if _, err := s.DeleteTopic(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, Topic{Name: "old", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 1)}); err != nil {
		t.Fatal(err)
	}
	rev, err = s.SetTopicConfigs(ctx, "new", map[string]string{ConfigSegmentMs: "1000"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	evs, _, err = sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(evs); !slices.Equal(got, []string{"TopicDeleted:old", "TopicCreated:old", "TopicUpdated:new"}) {
		t.Fatalf("combined: %v", got)
	}
	if evs[0].Topic.ID == evs[1].Topic.ID {
		t.Fatal("recreated topic has the old id")
	}

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, _, err := sub.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next without changes: %v", err)
	}
}

// TestCacheRelistsAfterCompaction starts the watch from a revision that
// etcd has compacted away: the cache must list again and end up current.
func TestCacheRelistsAfterCompaction(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	rec := newRecorder()
	c := &Cache{client: m.Client(), logger: slog.New(rec), closed: make(chan struct{}), done: make(chan struct{})}
	first, err := c.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.snap.Store(first)

	// Changes the cache has not seen, then history compacted past them.
	if _, err := s.CreateTopic(ctx, Topic{Name: "gone", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteTopic(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	rev, err := s.CreateTopic(ctx, Topic{Name: "kept", Partitions: 2, ReplicationFactor: 1, Assignment: oneReplica(2, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Client().Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.run(runCtx)
	defer c.Close()
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Topic("gone"); ok {
		t.Fatal("deleted topic visible")
	}
	if _, ok := c.Partition("kept", 1); !ok {
		t.Fatal("topic kept missing after re-list")
	}
	relisted := false
	for _, r := range rec.all() {
		if r.Message == "metadata watch ended; listing again" {
			relisted = true
		}
	}
	if !relisted {
		t.Fatal("the cache did not go through a re-list")
	}
	// And it keeps following.
	rev, err = s.CreateTopic(ctx, Topic{Name: "later", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Topic("later"); !ok {
		t.Fatal("topic created after the re-list is missing")
	}
}
