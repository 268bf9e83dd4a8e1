package txn

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"skiff/offsets"
	"skiff/replication"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newLog opens a one-replica __transaction_state partition led here.
func newLog(t *testing.T) *replication.Partition {
	t.Helper()
	dir := t.TempDir()
	db, err := offsets.Open(filepath.Join(dir, "meta"), offsets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := replication.NewManager(replication.Config{
		Dir:   filepath.Join(dir, "topics"),
		Store: func(key string) replication.Store { return db.LogIndex(key) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		db.Close()
	})
	spec := replication.TopicSpec{Name: "__transaction_state", ID: [16]byte{1}, Config: replication.PartitionConfig{MaxMessageBytes: 1 << 20},
		Partitions: []replication.PartitionSpec{{ID: 0, Leader: 0, Replicas: []int32{0}, ISR: []int32{0}}}}
	if err := m.Apply(1, []replication.TopicSpec{spec}); err != nil {
		t.Fatal(err)
	}
	return m.Partition("__transaction_state", 0)
}

// markerLog records the markers written, or fails them while failing is set.
type markerLog struct {
	mu      sync.Mutex
	markers []Marker
	failing atomic.Bool
}

func (l *markerLog) write(_ context.Context, ms []Marker) ([]Stamp, error) {
	if l.failing.Load() {
		return nil, errors.New("partition leader unreachable")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.markers = append(l.markers, ms...)
	return nil, nil
}

func (l *markerLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.markers)
}

func newTestCoordinator(ml *markerLog) *Coordinator {
	var next atomic.Int64
	c := New(Config{
		AllocateProducerID: func(context.Context) (int64, error) { return next.Add(1) + 100, nil },
		WriteMarkers:       ml.write,
		CommitTimeout:      2 * time.Second,
	})
	c.SetPartitions(1)
	return c
}

// reelect elects partition 0 again, in leader epoch 1, with ml's markers
// succeeding from then on, and waits until n markers are written.
func reelect(t *testing.T, c *Coordinator, ml *markerLog, log *replication.Partition, n int) {
	t.Helper()
	c.Resign(0)
	ml.failing.Store(false)
	c.Elect(0, 1, log)
	waitLoaded(t, c)
	deadline := time.Now().Add(10 * time.Second)
	for ml.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d markers written after the election", ml.count(), n)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

// waitLoaded waits until the shard of partition 0 serves requests.
func waitLoaded(t *testing.T, c *Coordinator) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, code := c.shardFor("x"); code == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the shard did not load within 10 s")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

// TestCoordinatorRecoversFromLog ends a transaction whose markers cannot be
// written, then elects the partition again: the new coordinator finds the
// transaction prepared in the log, writes its markers and completes it; producer
// ids and epochs survive the election.
func TestCoordinatorRecoversFromLog(t *testing.T) {
	log := newLog(t)
	ml := &markerLog{}
	c := newTestCoordinator(ml)
	defer c.Close()
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	ctx := context.Background()
	pid, epoch, code := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code != 0 || epoch != 0 {
		t.Fatalf("init: pid %d epoch %d code %d", pid, epoch, code)
	}
	parts := []TopicPartition{{"out", 0}, {"out", 1}}
	if code, _ := c.AddPartitions(ctx, "app", pid, epoch, parts, false); code != 0 {
		t.Fatalf("add partitions: %d", code)
	}
	if code, _ := c.AddPartitions(ctx, "app", pid, epoch+1, parts, false); code != codeInvalidEpoch {
		t.Fatalf("add partitions at a newer epoch: %d, want INVALID_PRODUCER_EPOCH", code)
	}
	ml.failing.Store(true)
	endCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, _, code = c.EndTxn(endCtx, "app", pid, epoch, true, false)
	cancel()
	if code != 0 {
		t.Fatalf("end: %d (the decision is recorded: success)", code)
	}
	// The next transaction waits for the markers, here until its context ends.
	addCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	code, _ = c.AddPartitions(addCtx, "app", pid, epoch, parts, false)
	cancel()
	if code != codeConcurrent {
		t.Fatalf("add partitions while the markers are pending: %d, want CONCURRENT_TRANSACTIONS", code)
	}

	// A new leadership: the state comes back from the log.
	reelect(t, c, ml, log, 2)
	ml.mu.Lock()
	for _, m := range ml.markers {
		if !m.Commit || m.ProducerID != pid || m.Epoch != epoch || m.CoordinatorEpoch != 1 {
			t.Errorf("marker %+v, want a commit of producer %d epoch %d by coordinator epoch 1", m, pid, epoch)
		}
	}
	ml.mu.Unlock()
	if _, _, code := c.EndTxn(ctx, "app", pid, epoch, true, false); code != 0 {
		t.Fatalf("commit again after recovery: %d", code)
	}
	pid2, epoch2, code := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code != 0 || pid2 != pid || epoch2 != epoch+1 {
		t.Fatalf("init after recovery: pid %d epoch %d code %d, want %d epoch %d", pid2, epoch2, code, pid, epoch+1)
	}
	if _, _, code := c.InitProducerID(ctx, "app", time.Minute, pid, epoch); code != codeFenced {
		t.Fatalf("init with the fenced epoch: %d, want PRODUCER_FENCED", code)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	m := &txnMeta{id: "id", pid: 7, epoch: 3, timeout: time.Minute, state: Ongoing,
		partitions: map[TopicPartition]struct{}{{"a", 1}: {}, {"a", 0}: {}, {"b", 2}: {}},
		started:    time.UnixMilli(1000), updated: time.UnixMilli(2000), lastEpoch: -1}
	id, got, err := parseRecord(m.record())
	if err != nil || id != "id" {
		t.Fatalf("parse: %q %v", id, err)
	}
	if got.pid != 7 || got.epoch != 3 || got.timeout != time.Minute || got.state != Ongoing || len(got.partitions) != 3 ||
		!got.started.Equal(m.started) || !got.updated.Equal(m.updated) {
		t.Fatalf("round trip: %+v", got)
	}
}

// TestTransactionalIDExpires: an idle id is forgotten (a tombstone, so also after
// an election) and its next producer gets a new producer id.
func TestTransactionalIDExpires(t *testing.T) {
	log := newLog(t)
	var next atomic.Int64
	c := New(Config{
		AllocateProducerID: func(context.Context) (int64, error) { return next.Add(1), nil },
		WriteMarkers:       (&markerLog{}).write,
		IDExpiration:       100 * time.Millisecond,
		AbortCheckInterval: 20 * time.Millisecond,
	})
	defer c.Close()
	c.SetPartitions(1)
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	pid, _, code := c.InitProducerID(context.Background(), "idle", time.Minute, -1, -1)
	if code != 0 {
		t.Fatalf("init: %d", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, code := c.Describe("idle"); code == codeTxnIDNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle id did not expire within 10 s")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
	c.Resign(0)
	c.Elect(0, 1, log)
	waitLoaded(t, c)
	if _, code := c.Describe("idle"); code != codeTxnIDNotFound {
		t.Fatalf("after an election the expired id is back: code %d", code)
	}
	pid2, epoch2, code := c.InitProducerID(context.Background(), "idle", time.Minute, -1, -1)
	if code != 0 || pid2 == pid || epoch2 != 0 {
		t.Fatalf("init after expiry: pid %d epoch %d code %d, want a new id at epoch 0", pid2, epoch2, code)
	}
}

// TestInitRetryAfterAbort (KIP-360): a producer that re-initializes with its own
// producer id and epoch while its transaction is open gets it aborted under a
// bumped epoch and, asking again with the epoch it had, its new epoch; a producer
// fenced by a new instance of the id (no producer id given) stays fenced.
func TestInitRetryAfterAbort(t *testing.T) {
	log := newLog(t)
	c := newTestCoordinator(&markerLog{})
	defer c.Close()
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	ctx := context.Background()
	open := func(pid int64, epoch int16) {
		t.Helper()
		if code, _ := c.AddPartitions(ctx, "app", pid, epoch, []TopicPartition{{"out", 0}}, false); code != 0 {
			t.Fatalf("add partitions: %d", code)
		}
	}
	// initUntil asks until the abort is done.
	initUntil := func(pid int64, epoch int16) (int64, int16, int16) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			p, e, code := c.InitProducerID(ctx, "app", time.Minute, pid, epoch)
			if code != codeConcurrent || time.Now().After(deadline) {
				return p, e, code
			}
			time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
		}
	}
	pid, epoch, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	open(pid, epoch)
	if _, e, code := initUntil(pid, epoch); code != 0 || e <= epoch+1 {
		t.Fatalf("re-init by the producer itself: epoch %d code %d, want above %d", e, code, epoch+1)
	}
	pid, epoch, _ = c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	open(pid, epoch)
	if _, _, code := initUntil(-1, -1); code != 0 { // a new instance fences it
		t.Fatalf("new instance: %d", code)
	}
	if _, _, code := c.InitProducerID(ctx, "app", time.Minute, pid, epoch); code != codeFenced {
		t.Fatalf("the fenced instance re-initializing: %d, want PRODUCER_FENCED", code)
	}
}

// TestAddPartitionsWrittenTogether sends three AddPartitions of one producer at
// once while the markers of its previous transaction are being written, as
// franz-go does (one request per partition leader): they wait together and
// take one record after the complete state, in one batch, and each gets its
// answer once that is committed.
func TestAddPartitionsWrittenTogether(t *testing.T) {
	log := newLog(t)
	gate := make(chan struct{})
	var next atomic.Int64
	c := New(Config{
		AllocateProducerID: func(context.Context) (int64, error) { return next.Add(1) + 100, nil },
		WriteMarkers: func(ctx context.Context, _ []Marker) ([]Stamp, error) {
			select {
			case <-gate:
				return nil, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		CommitTimeout: 10 * time.Second,
	})
	defer c.Close()
	c.SetPartitions(1)
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	ctx := context.Background()
	pid, epoch, code := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code != 0 {
		t.Fatalf("init: %d", code)
	}
	if code, _ := c.AddPartitions(ctx, "app", pid, epoch, []TopicPartition{{"out", 0}}, false); code != 0 {
		t.Fatalf("add partitions: %d", code)
	}
	if _, _, code := c.EndTxn(ctx, "app", pid, epoch, true, false); code != 0 {
		t.Fatalf("end: %d", code)
	}
	leo := log.LogEndOffset()
	codes := make(chan int16, 3)
	for p := range int32(3) {
		go func() {
			code, _ := c.AddPartitions(ctx, "app", pid, epoch, []TopicPartition{{"out", p}}, false)
			codes <- code
		}()
	}
	sh, _ := c.shardFor("app")
	deadline := time.Now().Add(10 * time.Second)
	for {
		sh.mu.Lock()
		gathered := 0
		if b := sh.txns["app"].adds; b != nil {
			gathered = len(b.parts)
		}
		sh.mu.Unlock()
		if gathered == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 requests gathered within 10 s", gathered)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	if got := log.LogEndOffset(); got != leo {
		t.Fatalf("log end %d before the markers are written, want %d", got, leo)
	}
	close(gate)
	for range 3 {
		if code := <-codes; code != 0 {
			t.Fatalf("add partitions: %d", code)
		}
	}
	// CompleteCommit and the new Ongoing state: two records, one batch.
	if got := log.LogEndOffset(); got != leo+2 {
		t.Fatalf("log end %d after the adds, want %d (one batch of two records)", got, leo+2)
	}
	sh.mu.Lock()
	m := sh.txns["app"]
	st, n := m.state, len(m.partitions)
	sh.mu.Unlock()
	if st != Ongoing || n != 3 {
		t.Fatalf("state %s with %d partitions, want Ongoing with 3", StateName(st), n)
	}
}
