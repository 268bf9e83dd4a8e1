package replication

import (
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/offsets"
)

// storedSnapshotView decodes p's snapshot in the Store (the view's Aborted and
// FirstUnstable left out).
func storedSnapshotView(t *testing.T, p *Partition) producerView {
	t.Helper()
	_, b, ok, err := p.store.ProducerSnapshot()
	if err != nil || !ok {
		t.Fatalf("stored snapshot: ok %v, %v", ok, err)
	}
	q := &Partition{txns: newTxnIndex()}
	if err := q.restoreSnapshotLocked(b, time.Now()); err != nil {
		t.Fatal(err)
	}
	return stateOnly(viewLocked(q))
}

// stateOnly is v without what snapshots do not hold.
func stateOnly(v producerView) producerView {
	v.Aborted, v.FirstUnstable = nil, 0
	return v
}

// newTestPartition is partition t-0 of a Manager closed when the test ends.
func newTestPartition(t *testing.T) *Partition {
	t.Helper()
	m, db := newManager(t, t.TempDir())
	t.Cleanup(func() { closeAll(t, m, db) })
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	return m.Partition("t", 0)
}

// setStore makes s the Store of p (snapshots write outside appendMu, under
// snap.storeMu).
func setStore(p *Partition, s Store) {
	p.appendMu.Lock()
	p.snap.storeMu.Lock()
	p.store = s
	p.snap.storeMu.Unlock()
	p.appendMu.Unlock()
}

// oldTxnBatch is a transactional batch of producer pid at epoch 0 from
// sequence seq, stamped at ts (Unix ms).
func oldTxnBatch(pid int64, seq int32, ts int64) []byte {
	b := batchtest.Strings(batchtest.Producer{ID: pid, Epoch: 0, Sequence: seq}, ts, "v")
	b[22] |= batch.AttrTransactional
	binaryFixCRC(b)
	return b
}

func mustAppend(t *testing.T, p *Partition, b []byte) {
	t.Helper()
	if _, err := p.Append(b, 1); err != nil {
		t.Fatal(err)
	}
}

// TestExpiryPrunesMarkerState: an expired producer's marker count and
// coordinator epoch go with it, in memory and in the next snapshot (even with
// the log end unmoved), while a producer with a transaction open keeps its own;
// a snapshot that still has them for a producer without state loses them when
// restored.
func TestExpiryPrunesMarkerState(t *testing.T) {
	p := newTestPartition(t)
	for _, pid := range []int64{7, 8} {
		mustAppend(t, p, txnBatch(pid, 0, 0, "a"))
		if _, err := p.WriteMarker(pid, 0, true, 3, false); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend(t, p, txnBatch(8, 0, 1, "b")) // 8 has a transaction open
	if err := p.snapshotProducers(); err != nil {
		t.Fatal(err)
	}
	v := viewOf(p)
	if v.Markers[7] != 1 || v.CoordEpochs[7] != 3 || v.Markers[8] != 1 {
		t.Fatalf("before expiry: markers %v, coordinator epochs %v", v.Markers, v.CoordEpochs)
	}
	if n := p.expireProducers(time.Now().Add(time.Hour)); n != 1 {
		t.Fatalf("expired %d producers, want 1", n)
	}
	want := map[int64]uint64{8: 1}
	wantCE := map[int64]int32{8: 3}
	if v := viewOf(p); !reflect.DeepEqual(v.Markers, want) || !reflect.DeepEqual(v.CoordEpochs, wantCE) {
		t.Fatalf("after expiry: markers %v, coordinator epochs %v; want %v, %v", v.Markers, v.CoordEpochs, want, wantCE)
	}
	if err := p.snapshotProducers(); err != nil {
		t.Fatal(err)
	}
	if got, want := storedSnapshotView(t, p), stateOnly(viewOf(p)); !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot after expiry\n%+v\nwant\n%+v", got, want)
	}
	// A snapshot written before expiry pruned: producer 7's marker state
	// without its producer.
	p.appendMu.Lock()
	rows := p.allRowsLocked()
	rows.set(&snapRow{pid: 7, markers: 1, coordEpoch: 3, hasCoordEpoch: true})
	err := p.store.UpdateProducerState(ProducerStateUpdate{SetSnapshot: true, SnapshotOffset: p.LogEndOffset(), Snapshot: encodeSnapshot(rows.rows)})
	if err == nil {
		err = p.restoreProducersLocked(false, nil)
	}
	p.appendMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if v := viewOf(p); !reflect.DeepEqual(v.Markers, want) || !reflect.DeepEqual(v.CoordEpochs, wantCE) {
		t.Fatalf("restored: markers %v, coordinator epochs %v; want %v, %v", v.Markers, v.CoordEpochs, want, wantCE)
	}
}

// TestProducersExpiredAtRestore: a producer idle past producer.id.expiration.ms
// does not come back from the snapshot or the log when the partition opens, as
// in Kafka, unless a transaction of it is open.
func TestProducersExpiredAtRestore(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Manager, *offsets.DB, *Partition) {
		db, err := offsets.Open(filepath.Join(dir, "meta"), offsets.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewManager(Config{Dir: filepath.Join(dir, "topics"), ProducerIDExpiration: time.Minute,
			Store: func(key string) Store { return db.LogIndex(key) }})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
			t.Fatal(err)
		}
		return m, db, m.Partition("t", 0)
	}
	m, db, p := open()
	old := time.Now().Add(-time.Hour).UnixMilli()
	mustAppend(t, p, batchtest.Strings(batchtest.Producer{ID: 5, Epoch: 0, Sequence: 0}, old, "idle"))
	mustAppend(t, p, oldTxnBatch(6, 0, old))
	mustAppend(t, p, batchtest.Strings(batchtest.Producer{ID: 7, Epoch: 0, Sequence: 0}, time.Now().UnixMilli(), "recent"))
	if got := len(p.Producers()); got != 3 {
		t.Fatalf("%d producers before the restart, want 3", got)
	}
	closeAll(t, m, db) // its snapshot has all three

	m, db, p = open()
	defer func() { closeAll(t, m, db) }()
	ids := func() []int64 {
		var out []int64
		for _, i := range p.Producers() {
			out = append(out, i.ProducerID)
		}
		return out
	}
	if got := ids(); !reflect.DeepEqual(got, []int64{6, 7}) {
		t.Fatalf("producers after the restart %v, want [6 7] (5 expired)", got)
	}
	p.appendMu.Lock()
	err := p.restoreProducersLocked(true, nil)
	p.appendMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(); !reflect.DeepEqual(got, []int64{6, 7}) {
		t.Fatalf("producers after a whole-log replay %v, want [6 7]", got)
	}
	wantCode(t, "expired producer", appendErr(p, batchtest.Strings(batchtest.Producer{ID: 5, Epoch: 0, Sequence: 1}, old, "next")), kerr.UnknownProducerID)
}

// hookStore runs before once, before the next synced drop of aborted
// transactions reaches the Store.
type hookStore struct {
	Store
	mu     sync.Mutex
	before func()
}

func (s *hookStore) UpdateProducerState(u ProducerStateUpdate) error {
	s.mu.Lock()
	f := s.before
	if u.Sync && len(u.Drop) > 0 {
		s.before = nil
	} else {
		f = nil
	}
	s.mu.Unlock()
	if f != nil {
		f()
	}
	return s.Store.UpdateProducerState(u)
}

// abortTxns appends n aborted transactions of producer 9 and returns them.
func abortTxns(t *testing.T, p *Partition, n int) []AbortedTxn {
	t.Helper()
	for i := range n {
		mustAppend(t, p, txnBatch(9, 0, int32(i), "x"))
		if _, err := p.WriteMarker(9, 0, false, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	got := p.AbortedTxns(0, p.LogEndOffset())
	if len(got) != n {
		t.Fatalf("%d aborted transactions, want %d", len(got), n)
	}
	return got
}

// TestForgetAbortedRacingRestore: a restore that reads the Store while the
// cleaner forgets an aborted transaction does not keep it in memory.
func TestForgetAbortedRacingRestore(t *testing.T) {
	p := newTestPartition(t)
	aborted := abortTxns(t, p, 2)
	if err := p.snapshotProducers(); err != nil { // the entries are below it: a restore takes them from the Store
		t.Fatal(err)
	}
	hs := &hookStore{Store: p.store}
	setStore(p, hs)
	hs.before = func() { // the restore of a follower's truncation, say
		p.appendMu.Lock()
		defer p.appendMu.Unlock()
		if err := p.restoreProducersLocked(false, nil); err != nil {
			t.Error(err)
		}
	}
	stableTarget{p}.ForgetAbortedTxns(aborted[:1])
	want := []AbortedTxn{aborted[1]}
	if got := p.AbortedTxns(0, p.LogEndOffset()); !reflect.DeepEqual(got, want) {
		t.Fatalf("in memory after forgetting %v: %v, want %v", aborted[0], got, want)
	}
	if st, mem := storedAborted(t, p), viewOf(p).Aborted; !reflect.DeepEqual(st, mem) {
		t.Fatalf("Store's aborted transactions %+v, in memory %+v", st, mem)
	}
}

// TestForgetAbortedConcurrentRestores runs the cleaner's forgetting against a
// loop of restores (meant for -race): the Store and memory agree at the end.
func TestForgetAbortedConcurrentRestores(t *testing.T) {
	p := newTestPartition(t)
	aborted := abortTxns(t, p, 8)
	if err := p.snapshotProducers(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		for {
			select {
			case <-stop:
				return
			default:
			}
			p.appendMu.Lock()
			err := p.restoreProducersLocked(false, nil)
			p.appendMu.Unlock()
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	for _, a := range aborted[:7] {
		stableTarget{p}.ForgetAbortedTxns([]AbortedTxn{a})
	}
	close(stop)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	want := aborted[7:]
	if got := p.AbortedTxns(0, p.LogEndOffset()); !reflect.DeepEqual(got, want) {
		t.Fatalf("in memory: %v, want %v", got, want)
	}
	if st, mem := storedAborted(t, p), viewOf(p).Aborted; !reflect.DeepEqual(st, mem) {
		t.Fatalf("Store's aborted transactions %+v, in memory %+v", st, mem)
	}
}

// blockingStore holds the first snapshot write after it is armed until
// release is closed.
type blockingStore struct {
	Store
	armed   chan struct{} // closed: block
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *blockingStore) UpdateProducerState(u ProducerStateUpdate) error {
	select {
	case <-s.armed:
		if u.SetSnapshot {
			s.once.Do(func() {
				close(s.entered)
				<-s.release
			})
		}
	default:
	}
	return s.Store.UpdateProducerState(u)
}

// TestSnapshotWriteOutsideAppendLock: appends go on while a snapshot is being
// written.
func TestSnapshotWriteOutsideAppendLock(t *testing.T) {
	p := newTestPartition(t)
	mustAppend(t, p, txnBatch(3, 0, 0, "a"))
	bs := &blockingStore{Store: p.store, armed: make(chan struct{}), entered: make(chan struct{}), release: make(chan struct{})}
	setStore(p, bs)
	close(bs.armed)
	snapDone := make(chan error, 1)
	go func() { snapDone <- p.snapshotProducers() }()
	<-bs.entered
	appended := make(chan error, 1)
	go func() { _, err := p.Append(txnBatch(3, 0, 1, "b"), 1); appended <- err }()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(bs.release)
		<-snapDone
		t.Fatal("an append waited for a snapshot's write")
	}
	close(bs.release)
	if err := <-snapDone; err != nil {
		t.Fatal(err)
	}
	// The checkpoint loop's snapshot may have been the one held: then this one
	// came after the append.
	if off, _, _, err := bs.Store.ProducerSnapshot(); err != nil || off < 1 {
		t.Fatalf("snapshot at %d (%v), want 1 or 2", off, err)
	}
}

// TestIncrementalSnapshots: after every step of random histories (batches,
// markers, fencing, truncations, expiry), a snapshot written from the producers
// changed since the last one is the whole state.
func TestIncrementalSnapshots(t *testing.T) {
	for seed := range uint64(4) {
		m, db := newManager(t, t.TempDir())
		s := spec("t", 1, 1)
		s.Config.Log.SegmentBytes = 1024
		if err := m.Apply(1, []TopicSpec{s}); err != nil {
			t.Fatal(err)
		}
		p := m.Partition("t", 0)
		rng := rand.New(rand.NewPCG(seed, 61))
		h := &txnHistory{t: t, rng: rng, p: p}
		for step := range 300 {
			what := h.step(false)
			if rng.IntN(20) == 0 {
				p.expireProducers(time.Now().Add(time.Hour)) // all but those with a transaction open
				what = "expiry"
			}
			if err := p.snapshotProducers(); err != nil {
				t.Fatal(err)
			}
			if got, want := storedSnapshotView(t, p), stateOnly(viewOf(p)); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d (%s): snapshot\n%+v\nwant\n%+v", seed, step, what, got, want)
			}
		}
		closeAll(t, m, db)
	}
}

// TestSnapshotAfterReset: a follower that starts its log over at the leader's
// log start (resetTo) has no producers any more, and the next snapshot says so:
// it must not bring back, from the snapshotter's mirror, the producers and the
// open transaction of the log it dropped.
func TestSnapshotAfterReset(t *testing.T) {
	p := newTestPartition(t)
	mustAppend(t, p, txnBatch(3, 0, 0, "a"))
	mustAppend(t, p, txnBatch(4, 0, 0, "b"))
	if err := p.snapshotProducers(); err != nil {
		t.Fatal(err)
	}
	if err := p.resetTo(100); err != nil {
		t.Fatal(err)
	}
	if err := p.snapshotProducers(); err != nil {
		t.Fatal(err)
	}
	if off, _, ok, err := p.store.ProducerSnapshot(); err != nil || ok && off != 100 {
		t.Fatalf("snapshot at %d (ok %v, %v), want none or 100", off, ok, err)
	} else if !ok {
		return
	}
	if got, want := storedSnapshotView(t, p), stateOnly(viewOf(p)); !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot after the reset\n%+v\nwant the state\n%+v", got, want)
	}
}

// TestNoSnapshotAfterDelete: the checkpoint loop holds a partition that is
// deleted meanwhile; its snapshot and high watermark checkpoint then write
// nothing to the Store, which a partition created again under the same name
// would read as its own (and which nobody would delete otherwise).
func TestNoSnapshotAfterDelete(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	mustAppend(t, p, txnBatch(3, 0, 0, "a"))
	if err := m.Apply(2, nil); err != nil {
		t.Fatal(err)
	}
	// What the checkpoint loop does with the partition it listed before.
	if err := p.checkpointHW(); err != nil {
		t.Log(err)
	}
	if err := p.snapshotProducers(); err != nil {
		t.Log(err)
	}
	store := db.LogIndex(PartitionKey("t", 0))
	if off, _, ok, err := store.ProducerSnapshot(); err != nil || ok {
		t.Errorf("a deleted partition's producer snapshot is in the Store at %d (%v)", off, err)
	}
	if hw, ok, err := store.HighWatermark(); err != nil || ok {
		t.Errorf("a deleted partition's high watermark %d is in the Store (%v)", hw, err)
	}
}
