package txn

import (
	"context"
	"testing"
	"time"

	"skiff/internal/batch"
	"skiff/replication"
)

// completeGatedLog holds every append of a batch holding a CompleteCommit or
// CompleteAbort record until open is closed, and says so on reached.
type completeGatedLog struct {
	*replication.Partition
	reached chan struct{} // one value per held append
	open    chan struct{}
}

func (l *completeGatedLog) Append(b []byte, acks int16) (replication.AppendResult, error) {
	complete := false
	_ = batch.Records(b, func(r batch.Record) error {
		if _, m, err := parseRecord(r); err == nil && m != nil && (m.state == CompleteCommit || m.state == CompleteAbort) {
			complete = true
		}
		return nil
	})
	if complete {
		l.reached <- struct{}{}
		<-l.open
	}
	return l.Partition.Append(b, acks)
}

// TestCarryAfterCompleteRecordBegan: an implicit add that arrives once the
// markers of the ended transaction are written, while its complete record
// is being appended, must not carry the completion (the complete record would
// land after the Ongoing one and end the new transaction, in the log and in
// memory): it waits for that record and then starts the transaction.
func TestCarryAfterCompleteRecordBegan(t *testing.T) {
	log := &completeGatedLog{Partition: newLog(t), reached: make(chan struct{}, 4), open: make(chan struct{})}
	g := &gatedMarkers{open: make(chan struct{})}
	c := newTestCoordinator(&markerLog{})
	c.cfg.WriteMarkers = g.write
	t.Cleanup(func() { c.Close() })
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", 0}}, true); code != 0 {
		t.Fatalf("implicit add: %d", code)
	}
	if _, e, code := c.EndTxn(ctx, "app", pid, 0, true, true); code != 0 || e != 1 {
		t.Fatalf("commit: epoch %d code %d", e, code)
	}
	close(g.open) // the markers are written; the complete record is held
	select {
	case <-log.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the complete record was not appended")
	}
	added := make(chan int16, 1)
	go func() {
		code, _ := c.AddPartitions(ctx, "app", pid, 1, []TopicPartition{{"out", 1}}, true)
		added <- code
	}()
	// Either the add waits for the complete record, or (the bug) it carried
	// the completion and was answered.
	sh, _ := c.shardFor("app")
	deadline := time.Now().Add(10 * time.Second)
	for waiting := false; !waiting; {
		select {
		case code := <-added:
			added <- code
			waiting = true
		default:
			sh.mu.Lock()
			waiting = sh.txns["app"].awaiting > 0
			sh.mu.Unlock()
		}
		if time.Now().After(deadline) {
			t.Fatal("the implicit add neither waited nor answered")
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	close(log.open)
	if code := <-added; code != 0 {
		t.Fatalf("implicit add of the next transaction: %d", code)
	}
	if m := waitState(t, c, "app", Ongoing); m.epoch != 1 || len(m.partitions) != 1 {
		t.Fatalf("next transaction in memory: epoch %d partitions %v", m.epoch, m.partitions)
	}
	c.Resign(0)
	c.Elect(0, 1, log)
	waitLoaded(t, c)
	if m := waitState(t, c, "app", Ongoing); m.epoch != 1 || len(m.partitions) != 1 {
		t.Fatalf("next transaction after a load: epoch %d partitions %v", m.epoch, m.partitions)
	}
}
