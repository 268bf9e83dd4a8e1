package sharegroup

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/goleak"

	"skiff/logstore"
	"skiff/replication"
)

// emptyLog is the leader replica of an empty partition at leader epoch 1.
type emptyLog struct{}

func (emptyLog) ReadStable(offset, _ int64) (*logstore.Slice, error) {
	return &logstore.Slice{NextOffset: offset}, nil
}
func (emptyLog) LastStableOffset() int64                         { return 0 }
func (emptyLog) HighWatermark() int64                            { return 0 }
func (emptyLog) AbortedTxns(_, _ int64) []replication.AbortedTxn { return nil }
func (emptyLog) LogStartOffset() int64                           { return 0 }
func (emptyLog) LeaderEpoch() int32                              { return 1 }
func (emptyLog) IsLeader() bool                                  { return true }
func (emptyLog) AddWaiter(chan<- struct{})                       {}
func (emptyLog) RemoveWaiter(chan<- struct{})                    {}

// flakyStore fails its first fails loads, then answers with state.
type flakyStore struct {
	mu    sync.Mutex
	fails int
	state State
	saved []State
}

func (s *flakyStore) Load(context.Context, Key) (State, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fails > 0 {
		s.fails--
		return State{}, false, errors.New("state partition has no leader yet")
	}
	return s.state, true, nil
}

func (s *flakyStore) Save(_ context.Context, _ Key, st State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved = append(s.saved, st)
	return nil
}

// TestFailedLoadRetried: a share-partition whose state could not be loaded (the
// store unreachable, as right after a failover) answers COORDINATOR_NOT_AVAILABLE,
// and the next request loads it again instead of failing for good.
func TestFailedLoadRetried(t *testing.T) {
	defer goleak.VerifyNone(t)
	store := &flakyStore{fails: 1, state: State{LeaderEpoch: 0, Seq: 3, StartOffset: 7}}
	m := NewManager(Config{Store: store})
	key := Key{Group: "g", Partition: 0}
	ctx := context.Background()

	sp := m.partition(key, "t", emptyLog{})
	if code := sp.waitLoaded(ctx); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("failed load answered %d, want COORDINATOR_NOT_AVAILABLE", code)
	}
	if _, code := sp.acquire("m", 10, 1<<20); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("fetch after a failed load answered %d, want COORDINATOR_NOT_AVAILABLE", code)
	}
	again := m.partition(key, "t", emptyLog{})
	if again == sp {
		t.Fatal("the failed share-partition was kept: it would never load")
	}
	if code := again.waitLoaded(ctx); code != 0 {
		t.Fatalf("second load answered %d", code)
	}
	if _, code := again.acquire("m", 10, 1<<20); code != 0 {
		t.Fatalf("fetch after the second load answered %d", code)
	}
	again.mu.Lock()
	start, v := again.mu.w.start, again.mu.version
	again.mu.Unlock()
	if start != 7 {
		t.Fatalf("SPSO %d after the second load, want the stored 7", start)
	}
	if code := again.waitSaved(ctx, v); code != 0 {
		t.Fatalf("saving the loaded state: %d", code)
	}
	if m.partition(key, "t", emptyLog{}) != again {
		t.Fatal("a loaded share-partition was replaced")
	}
	if st := m.Stats(); len(st) != 1 || st[0].Start != 7 || st[0].End != 7 || st[0].InFlight != 0 || st[0].Acquired != 0 {
		t.Fatalf("stats %+v, want one share-partition with SPSO = SPEO = 7", st)
	}
}

// TestReloadInSameEpochWritesNewer: a share-partition loaded again in the leader
// epoch that wrote its state (here after a deletion, as AlterShareGroupOffsets
// after DeleteShareGroupOffsets does) writes states that readers take as newer
// than the stored one; otherwise the new start offset would be ignored by every
// reader of the state topic, and lost at the next failover.
func TestReloadInSameEpochWritesNewer(t *testing.T) {
	defer goleak.VerifyNone(t)
	stored := State{LeaderEpoch: emptyLog{}.LeaderEpoch(), Seq: 5, Deleted: true}
	store := &flakyStore{state: stored}
	m := NewManager(Config{Store: store})
	key := Key{Group: "g", Partition: 0}
	if code := m.ResetStart(context.Background(), key, "t", emptyLog{}, 0); code != 0 {
		t.Fatalf("reset answered %d", code)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.saved) == 0 {
		t.Fatal("nothing saved")
	}
	for _, st := range store.saved {
		if !st.newer(stored) {
			t.Errorf("saved %+v, not newer than the stored %+v", st, stored)
		}
	}
	if last := store.saved[len(store.saved)-1]; last.Deleted || last.StartOffset != 0 {
		t.Errorf("last saved %+v, want a live state at 0", last)
	}
}

// TestLoadedAtDeliveryLimitArchived: a record the dead leader had handed out for
// the last allowed time (stored as available with its delivery count at the
// limit: a lock does not outlive its leader) is archived by the new leader, as
// the end of that lock would have archived it, and not delivered once more.
func TestLoadedAtDeliveryLimitArchived(t *testing.T) {
	defer goleak.VerifyNone(t)
	store := &flakyStore{state: State{LeaderEpoch: 0, Seq: 3, StartOffset: 0, Runs: []Run{
		{First: 0, Last: 0, State: stateAvailable, Count: 3},
		{First: 1, Last: 1, State: stateAvailable, Count: 2},
	}}}
	m := NewManager(Config{Store: store, DeliveryCountLimit: 3})
	sp := m.partition(Key{Group: "g", Partition: 0}, "t", emptyLog{})
	if code := sp.waitLoaded(context.Background()); code != 0 {
		t.Fatalf("load answered %d", code)
	}
	a, code := sp.acquire("m", 10, 1<<20)
	if code != 0 {
		t.Fatalf("acquire answered %d", code)
	}
	if len(a.Ranges) != 1 || a.Ranges[0] != (AcquiredRange{First: 1, Last: 1, Count: 3}) {
		t.Fatalf("acquired %+v, want only offset 1, delivered a third time", a.Ranges)
	}
	sp.mu.Lock()
	start, r := sp.mu.w.start, *sp.mu.w.at(1)
	sp.mu.Unlock()
	if start != 1 || r.state != stateAcquired {
		t.Fatalf("SPSO %d (want 1: offset 0 archived), offset 1 %+v", start, r)
	}
	waitFor(t, "the archival written", func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		n := len(store.saved)
		return n > 0 && store.saved[n-1].StartOffset == 1
	})
}

// waitFor polls cond until it holds, failing after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// movingLog is emptyLog whose leadership can end.
type movingLog struct {
	emptyLog
	deposed *atomic.Bool
}

func (l movingLog) IsLeader() bool { return !l.deposed.Load() }

// deposingStore is flakyStore whose saves, once deposeOnSave is set, end the
// leadership of log while they are written (another node leads the partition
// and may have loaded the state before this write landed).
type deposingStore struct {
	flakyStore
	deposeOnSave atomic.Bool
	log          movingLog
}

func (s *deposingStore) Save(ctx context.Context, k Key, st State) error {
	if s.deposeOnSave.Load() {
		s.log.deposed.Store(true)
	}
	return s.flakyStore.Save(ctx, k, st)
}

// TestAckNotAnsweredByDeposedLeader: an acknowledgement whose write lands after
// this node stopped leading the partition is not answered as done (the new
// leader, which may have loaded the state before the write, redelivers the
// record): NOT_LEADER_OR_FOLLOWER, at once rather than after the request's
// timeout.
func TestAckNotAnsweredByDeposedLeader(t *testing.T) {
	defer goleak.VerifyNone(t)
	store := &deposingStore{flakyStore: flakyStore{state: State{StartOffset: 0, Runs: []Run{{First: 0, Last: 1, State: stateAvailable, Count: 1}}}},
		log: movingLog{deposed: new(atomic.Bool)}}
	m := NewManager(Config{Store: store})
	sp := m.partition(Key{Group: "g", Partition: 0}, "t", store.log)
	if code := sp.waitLoaded(context.Background()); code != 0 {
		t.Fatalf("load answered %d", code)
	}
	if a, code := sp.acquire("m", 10, 1<<20); code != 0 || len(a.Ranges) != 1 {
		t.Fatalf("acquired %+v, %d", a, code)
	}
	waitFor(t, "the load's write", func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return len(store.saved) > 0
	})
	store.deposeOnSave.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if code := sp.acknowledge(ctx, "m", []AckBatch{{First: 0, Last: 1, Types: []int8{AckAccept}}}); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("acknowledgement written after the leadership ended answered %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
}
