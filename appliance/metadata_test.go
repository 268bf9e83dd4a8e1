package appliance

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"skiff/cluster"
	"skiff/embedetcd"
	"skiff/replication"
)

// TestAppliedSpecsBuildOnlyChanges: applyMetadata's specs are built again only
// for the topics a snapshot changed, for all after a broker default changed,
// and always equal what a build from scratch gives.
func TestAppliedSpecsBuildOnlyChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	m, err := embedetcd.Start(ctx, embedetcd.Config{Name: "n1", Dir: filepath.Join(t.TempDir(), "etcd"),
		ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := cluster.New(m.Client(), quiet)
	if _, err := s.EnsureCluster(ctx); err != nil {
		t.Fatal(err)
	}
	on := func(b int32) [][]int32 { return [][]int32{{b}, {b}} }
	for name, broker := range map[string]int32{"a": 1, "b": 1, "elsewhere": 2} {
		if _, err := s.CreateTopic(ctx, cluster.Topic{Name: name, Partitions: 2, ReplicationFactor: 1, Assignment: on(broker)}); err != nil {
			t.Fatal(err)
		}
	}
	cache, err := cluster.StartCache(ctx, m.Client(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	n := &Node{id: 1, logger: quiet, cfg: Config{FlushInterval: defaultFlushInterval}}
	var built []string
	spec := func(snap *cluster.Snapshot, tp cluster.Topic, d cluster.BrokerDefaults) (replication.TopicSpec, bool) {
		built = append(built, tp.Name)
		return n.topicSpec(snap, tp, d)
	}
	var applied appliedSpecs
	// check builds the specs of the cache's snapshot after rev, and compares
	// the topics built and the specs with a build from scratch.
	check := func(rev int64, err error, want ...string) []replication.TopicSpec {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := cache.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
		snap := cache.Snapshot()
		built = nil
		got := applied.build(snap, n.topicDefaults(), n.id, spec)
		if !slices.Equal(built, want) {
			t.Errorf("at revision %d built %v, want %v", rev, built, want)
		}
		var fresh appliedSpecs
		scratch := fresh.build(snap, n.topicDefaults(), n.id, n.topicSpec)
		if len(got) != len(scratch) {
			t.Fatalf("at revision %d: %d local topics, from scratch %d", rev, len(got), len(scratch))
		}
		for i := range got {
			g, w := got[i], scratch[i]
			g.Config.Log.Logger, w.Config.Log.Logger = nil, nil
			if g.Name != w.Name || g.Config != w.Config || len(g.Partitions) != len(w.Partitions) ||
				g.Partitions[0].LeaderEpoch != w.Partitions[0].LeaderEpoch {
				t.Errorf("at revision %d topic %s: %+v, from scratch %+v", rev, g.Name, got[i], scratch[i])
			}
		}
		return got
	}
	check(cache.Revision(), nil, "a", "b", "elsewhere")
	check(cache.Revision(), nil) // nothing changed

	st, _ := cache.Snapshot().Partition("a", 0)
	next := st
	next.LeaderEpoch++
	_, rev, err := s.AlterPartition(ctx, "a", 0, st.PartitionEpoch, next)
	if specs := check(rev, err, "a"); specs[0].Partitions[0].LeaderEpoch != next.LeaderEpoch {
		t.Errorf("a-0 leader epoch %d after the change, want %d", specs[0].Partitions[0].LeaderEpoch, next.LeaderEpoch)
	}

	rev, err = s.AlterBrokerConfigs(ctx, cluster.ClusterDefault, func(map[string]string) (map[string]string, error) {
		return map[string]string{"log.retention.ms": "60000"}, nil
	})
	if specs := check(rev, err, "a", "b", "elsewhere"); specs[1].Config.Log.RetentionMs != 60000 {
		t.Errorf("b's retention after the cluster default changed: %d ms, want 60000", specs[1].Config.Log.RetentionMs)
	}

	rev, err = s.DeleteTopic(ctx, "a")
	if specs := check(rev, err); len(specs) != 1 || specs[0].Name != "b" {
		t.Errorf("after deleting a: specs %v, want b alone", specs)
	}
}
