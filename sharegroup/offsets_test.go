package sharegroup

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// filledLog is emptyLog holding 10 committed records.
type filledLog struct{ emptyLog }

func (filledLog) LastStableOffset() int64 { return 10 }
func (filledLog) HighWatermark() int64    { return 10 }

// gatedStore holds its first Save until gate closes, and keeps what it saved.
type gatedStore struct {
	state   State
	started chan struct{} // closed when the first Save begins
	gate    chan struct{}

	mu    sync.Mutex
	saved []State
}

func (s *gatedStore) Load(context.Context, Key) (State, bool, error) { return s.state, true, nil }

func (s *gatedStore) Save(_ context.Context, _ Key, st State) error {
	s.mu.Lock()
	first := len(s.saved) == 0
	s.saved = append(s.saved, st)
	s.mu.Unlock()
	if first {
		close(s.started)
		<-s.gate
	}
	return nil
}

// TestResetStartAfterWriteInFlight: a reset (AlterShareGroupOffsets at the
// leader) made while a write of the old window is in flight is written after it,
// as the newer state: the leader's own write cannot undo it, which a reset
// written to the state topic from elsewhere could not promise.
func TestResetStartAfterWriteInFlight(t *testing.T) {
	defer goleak.VerifyNone(t)
	store := &gatedStore{state: State{LeaderEpoch: 1, Seq: 3, StartOffset: 2}, started: make(chan struct{}), gate: make(chan struct{})}
	m := NewManager(Config{Store: store})
	key := Key{Group: "g", Partition: 0}
	m.partition(key, "t", filledLog{}) // loads, and writes the loaded window
	<-store.started
	done := make(chan int16)
	go func() { done <- m.ResetStart(context.Background(), key, "t", filledLog{}, 7) }()
	sp := m.lookup(key)
	deadline := time.Now().Add(10 * time.Second)
	for {
		sp.mu.Lock()
		reset := sp.mu.w.start == 7
		sp.mu.Unlock()
		if reset {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reset was not applied to the window within 10 s")
		}
		runtime.Gosched()
	}
	close(store.gate) // the old window's write lands now, after the reset was made
	if code := <-done; code != 0 {
		t.Fatalf("reset answered %d", code)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	last := store.saved[len(store.saved)-1]
	if last.StartOffset != 7 {
		t.Fatalf("last write %+v, want the reset's start offset 7", last)
	}
	for _, st := range store.saved[:len(store.saved)-1] {
		if !last.newer(st) {
			t.Errorf("the reset's write %+v is not newer than %+v: readers would keep the old window", last, st)
		}
	}
	if st := m.Stats(); len(st) != 1 || st[0].Start != 7 || st[0].End != 7 {
		t.Errorf("stats %+v, want SPSO = SPEO = 7", st)
	}
}
