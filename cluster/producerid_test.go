package cluster

import (
	"path/filepath"
	"sync"
	"testing"
)

func TestProducerIDsUniqueAcrossStoresAndRestarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	m := startMember(t, dir)
	ctx := testCtx(t)
	seen := map[int64]string{}
	var mu sync.Mutex
	record := func(who string, id int64) {
		mu.Lock()
		defer mu.Unlock()
		if prev, dup := seen[id]; dup {
			t.Errorf("producer id %d handed out to %s and %s", id, prev, who)
		}
		seen[id] = who
	}

	// Two stores (two nodes) allocating concurrently, each through several
	// blocks.
	a, b := New(m.Client(), quiet), New(newClient(t, m), quiet)
	var wg sync.WaitGroup
	for name, s := range map[string]*Store{"a": a, "b": b} {
		wg.Go(func() {
			for range 2*ProducerIDBlockSize + 10 {
				id, err := s.AllocateProducerID(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				record(name, id)
			}
		})
	}
	wg.Wait()
	if len(seen) != 2*(2*ProducerIDBlockSize+10) {
		t.Fatalf("%d distinct ids", len(seen))
	}
	var maxID int64
	for id := range seen {
		if id < 1 {
			t.Fatalf("id %d below 1", id)
		}
		maxID = max(maxID, id)
	}

	// Restart the member on the same data: a new store continues past every
	// reserved block.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := startMember(t, dir)
	c := New(m2.Client(), quiet)
	id, err := c.AllocateProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id <= maxID {
		t.Fatalf("after restart got %d, already handed out up to %d", id, maxID)
	}
	// a and b each used two full blocks and part of a third: six blocks were
	// reserved, and the unused rest of two of them is skipped for good.
	if want := int64(1 + 6*ProducerIDBlockSize); id != want {
		t.Fatalf("after restart got %d, want %d (start of the 7th block)", id, want)
	}
}
