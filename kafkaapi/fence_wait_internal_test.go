package kafkaapi

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"skiff/cluster"
	"skiff/offsets"
	"skiff/replication"
)

// TestFenceWaitEndsWhenLedElsewhere: a Produce or Fetch that arrives while this
// node is fenced waits for the fence (up to fencedWait), except once the node's
// view is current again and names another broker as the leader of every partition
// it asks for: then it is answered at once (NOT_LEADER_OR_FOLLOWER with that
// leader), without waiting for the session to be confirmed. A view not current
// yet, or a partition the view says leads here, keeps it waiting.
func TestFenceWaitEndsWhenLedElsewhere(t *testing.T) {
	dir := t.TempDir()
	db, err := offsets.Open(filepath.Join(dir, "meta"), offsets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m, err := replication.NewManager(replication.Config{
		Dir:   filepath.Join(dir, "topics"),
		Store: func(key string) replication.Store { return db.LogIndex(key) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.SetFenced(true)
	var fresh atomic.Bool
	s := &Server{parts: m, cfg: Config{NodeID: 1, ViewFresh: fresh.Load}}
	leaders := map[int32]int32{0: 2, 1: 1, 2: cluster.NoLeader} // partition 0 moved, 1 leads here, 2 has none
	partition := func(topic string, p int32) (cluster.PartitionState, bool) {
		l, ok := leaders[p]
		return cluster.PartitionState{Leader: l}, ok && topic == "t"
	}
	of := func(ps ...int32) func(func(string, int32) bool) {
		return func(yield func(string, int32) bool) {
			for _, p := range ps {
				if !yield("t", p) {
					return
				}
			}
		}
	}
	wait := func(parts func(func(string, int32) bool)) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), fencedWait)
		defer cancel()
		start := time.Now()
		s.awaitFence(ctx, parts, partition)
		return time.Since(start)
	}
	for _, c := range []struct {
		what  string
		fresh bool
		parts []int32
		early bool
	}{
		{"view stale, partition moved", false, []int32{0}, false},
		{"view current, partition moved", true, []int32{0}, true},
		{"view current, partition led here", true, []int32{1}, false},
		{"view current, partition without a leader", true, []int32{2}, false},
		{"view current, one moved and one led here", true, []int32{0, 1}, false},
		{"view current, unknown partition", true, []int32{7}, false},
	} {
		fresh.Store(c.fresh)
		took := wait(of(c.parts...))
		if c.early && took > fencedWait/2 {
			t.Errorf("%s: waited %v, want an answer at once", c.what, took)
		}
		if !c.early && took < fencedWait-50*time.Millisecond {
			t.Errorf("%s: waited %v, want the whole %v for the fence", c.what, took, fencedWait)
		}
	}
	// The fence lifted: no wait at all.
	m.SetFenced(false)
	if took := wait(of(1)); took > fencedWait/2 {
		t.Errorf("unfenced: waited %v", took)
	}
}
