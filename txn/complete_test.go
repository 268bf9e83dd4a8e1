package txn

import (
	"bytes"
	"context"
	"testing"
	"time"

	"skiff/internal/batch"
	"skiff/replication"
)

// gatedMarkers holds every WriteMarkers call until open is closed.
type gatedMarkers struct {
	markerLog
	open chan struct{}
}

func (g *gatedMarkers) write(ctx context.Context, ms []Marker) ([]Stamp, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.markerLog.write(ctx, ms)
}

// gatedCoordinator returns a loaded coordinator of partition 0, whose markers
// wait for the gate, and its log.
func gatedCoordinator(t *testing.T) (*Coordinator, *gatedMarkers, *replication.Partition) {
	t.Helper()
	log := newLog(t)
	g := &gatedMarkers{open: make(chan struct{})}
	c := newTestCoordinator(&markerLog{})
	c.cfg.WriteMarkers = g.write
	t.Cleanup(func() { c.Close() })
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	return c, g, log
}

// TestNextTransactionWaitsForMarkers: EndTxn answers once the decision is
// committed, before the markers are written; the producer's next AddPartitions
// waits for them instead of getting CONCURRENT_TRANSACTIONS, and the complete
// state goes into the log in one batch with the new transaction's state, after
// the markers.
func TestNextTransactionWaitsForMarkers(t *testing.T) {
	c, g, log := gatedCoordinator(t)
	ctx := context.Background()
	pid, epoch, code := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code != 0 {
		t.Fatalf("init: %d", code)
	}
	parts := []TopicPartition{{"out", 0}, {"out", 1}}
	if code, _ := c.AddPartitions(ctx, "app", pid, epoch, parts, false); code != 0 {
		t.Fatalf("add partitions: %d", code)
	}
	if _, _, code := c.EndTxn(ctx, "app", pid, epoch, true, false); code != 0 {
		t.Fatalf("end: %d", code)
	}
	if n := g.count(); n != 0 {
		t.Fatalf("%d markers written before EndTxn answered; the gate is closed", n)
	}
	if d, _ := c.Describe("app"); d.State != PrepareCommit {
		t.Fatalf("state after EndTxn: %s, want PrepareCommit", StateName(d.State))
	}

	added := make(chan int16, 1)
	go func() {
		code, _ := c.AddPartitions(ctx, "app", pid, epoch, parts[:1], false)
		added <- code
	}()
	waitAwaiting(t, c, "app")
	close(g.open)
	select {
	case code := <-added:
		if code != 0 {
			t.Fatalf("next add partitions: %d, want 0 once the markers are written", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next AddPartitions did not answer after the markers were written")
	}
	if n := g.count(); n != len(parts) {
		t.Fatalf("%d markers written, want %d", n, len(parts))
	}
	if d, _ := c.Describe("app"); d.State != Ongoing || len(d.Partitions) != 1 {
		t.Fatalf("state of the next transaction: %+v, want Ongoing with one partition", d)
	}

	// The log's last batch: CompleteCommit of the first transaction, then the
	// second one Ongoing.
	s, err := log.ReadCommitted(log.LogStartOffset(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = s.WriteTo(&buf)
	s.Release()
	if err != nil {
		t.Fatal(err)
	}
	var last []State
	if err := batch.Split(buf.Bytes(), func(_ batch.Header, raw []byte) error {
		last = last[:0]
		return batch.Records(raw, func(r batch.Record) error {
			_, m, err := parseRecord(r)
			if err == nil {
				last = append(last, m.state)
			}
			return err
		})
	}); err != nil {
		t.Fatal(err)
	}
	if len(last) != 2 || last[0] != CompleteCommit || last[1] != Ongoing {
		t.Fatalf("last batch of __transaction_state holds states %v, want [CompleteCommit Ongoing]", last)
	}
}

// TestInitWaitsForMarkers: a producer that re-initializes right after EndTxn
// (franz-go does after an abort) waits for the markers, then gets its new epoch
// instead of CONCURRENT_TRANSACTIONS.
func TestInitWaitsForMarkers(t *testing.T) {
	c, g, _ := gatedCoordinator(t)
	ctx := context.Background()
	pid, epoch, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code, _ := c.AddPartitions(ctx, "app", pid, epoch, []TopicPartition{{"out", 0}}, false); code != 0 {
		t.Fatalf("add partitions: %d", code)
	}
	if _, _, code := c.EndTxn(ctx, "app", pid, epoch, false, false); code != 0 {
		t.Fatalf("abort: %d", code)
	}
	type result struct {
		pid   int64
		epoch int16
		code  int16
	}
	inited := make(chan result, 1)
	go func() {
		p, e, code := c.InitProducerID(ctx, "app", time.Minute, pid, epoch)
		inited <- result{p, e, code}
	}()
	waitAwaiting(t, c, "app")
	close(g.open)
	select {
	case r := <-inited:
		if r.code != 0 || r.pid != pid || r.epoch != epoch+1 {
			t.Fatalf("init after the markers: %+v, want producer %d epoch %d", r, pid, epoch+1)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("init did not answer after the markers were written")
	}
	if d, _ := c.Describe("app"); d.State != Empty || d.Epoch != epoch+1 {
		t.Fatalf("state after init: %+v, want Empty at epoch %d", d, epoch+1)
	}
}

// waitAwaiting waits until a request waits for the completion of id.
func waitAwaiting(t *testing.T, c *Coordinator, id string) {
	t.Helper()
	sh, _ := c.shardFor(id)
	deadline := time.Now().Add(10 * time.Second)
	for {
		sh.mu.Lock()
		waiting := sh.txns[id].awaiting
		sh.mu.Unlock()
		if waiting == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request waited for the markers of %s", id)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}
