package txn

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"skiff/logstore"
	"skiff/offsets"
	"skiff/replication"
)

// readsLog is a Log that notes the lowest offset read from it.
type readsLog struct {
	*replication.Partition
	mu     sync.Mutex
	lowest int64
}

func (l *readsLog) note(offset int64) {
	l.mu.Lock()
	l.lowest = min(l.lowest, offset)
	l.mu.Unlock()
}

func (l *readsLog) ReadCommitted(offset, maxBytes int64) (*logstore.Slice, error) {
	l.note(offset)
	return l.Partition.ReadCommitted(offset, maxBytes)
}

// TestCoordinatorLoadsFromStore: the state a coordinator writes is applied to
// Pebble as it is committed (Follow), so that a coordinator elected later reads
// nothing of the log it already applied and serves the same producer ids and
// epochs; a store ahead of its log (a log that starts over) is applied again from
// the log's start.
func TestCoordinatorLoadsFromStore(t *testing.T) {
	log := newLog(t)
	db, err := offsets.Open(filepath.Join(t.TempDir(), "meta"), offsets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var next atomic.Int64
	coordinator := func() *Coordinator {
		c := New(Config{
			AllocateProducerID: func(context.Context) (int64, error) { return next.Add(1) + 100, nil },
			WriteMarkers:       (&markerLog{}).write,
			CommitTimeout:      2 * time.Second,
			DB:                 db,
		})
		c.SetPartitions(1)
		return c
	}
	c := coordinator()
	c.Follow(0, log)
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	ctx := context.Background()
	pids := map[string]int64{}
	for i := range 20 {
		id := fmt.Sprintf("id-%d", i)
		pid, _, code := c.InitProducerID(ctx, id, time.Minute, -1, -1)
		if code != 0 {
			t.Fatalf("init %s: %d", id, code)
		}
		pids[id] = pid
	}
	if code, _ := c.AddPartitions(ctx, "id-0", pids["id-0"], 0, []TopicPartition{{"out", 0}}, false); code != 0 {
		t.Fatalf("add partitions: %d", code)
	}
	if _, _, code := c.EndTxn(ctx, "id-0", pids["id-0"], 0, true, false); code != 0 {
		t.Fatalf("end: %d", code)
	}
	store := db.TxnShard(0)
	deadline := time.Now().Add(10 * time.Second)
	for { // EndTxn answers before the markers: wait for the complete state too
		d, _ := c.Describe("id-0")
		applied, err := store.Applied()
		if err != nil {
			t.Fatal(err)
		}
		if d.State == CompleteCommit && applied == log.LogEndOffset() && log.HighWatermark() == applied {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("applied %d of %d", applied, log.LogEndOffset())
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
	c.Close()

	rl := &readsLog{Partition: log, lowest: math.MaxInt64}
	c = coordinator()
	c.Elect(0, 1, rl)
	waitLoaded(t, c)
	if rl.lowest != math.MaxInt64 {
		t.Fatalf("the elected coordinator read the log from %d, which the store had applied", rl.lowest)
	}
	for id, pid := range pids {
		d, code := c.Describe(id)
		if code != 0 || d.ProducerID != pid {
			t.Fatalf("%s after the election: %+v code %d, want producer id %d", id, d, code, pid)
		}
	}
	if d, _ := c.Describe("id-0"); d.State != CompleteCommit {
		t.Fatalf("id-0 after the election: state %d, want CompleteCommit", d.State)
	}
	if pid, epoch, code := c.InitProducerID(ctx, "id-3", time.Minute, -1, -1); code != 0 || pid != pids["id-3"] || epoch != 1 {
		t.Fatalf("init id-3 after the election: pid %d epoch %d code %d", pid, epoch, code)
	}
	c.Close()

	// A log that starts over: the store is ahead of it and is applied again.
	c = coordinator()
	defer c.Close()
	c.Elect(0, 0, newLog(t))
	waitLoaded(t, c)
	if _, code := c.Describe("id-3"); code != codeTxnIDNotFound {
		t.Fatalf("id-3 on a new log: code %d, want not found", code)
	}
}
