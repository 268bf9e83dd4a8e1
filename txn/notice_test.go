package txn

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestNoticesBoundToPreviousMarkers runs three transactions of one producer:
// the first sends no notice (no stamp known), the second notices each
// partition with the stamp its leader gave the first one's marker, and a
// partition added again to an open transaction is not noticed twice; a
// failed marker write forgets the stamps.
func TestNoticesBoundToPreviousMarkers(t *testing.T) {
	log := newLog(t)
	var mu sync.Mutex
	var sent []Notice
	next := uint64(100)
	failing := false
	c := newTestCoordinator(&markerLog{})
	c.cfg.WriteMarkers = func(_ context.Context, ms []Marker) ([]Stamp, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			failing = false
			return []Stamp{{LeaderEpoch: 9, Stamp: 1}}, context.DeadlineExceeded
		}
		out := make([]Stamp, len(ms))
		for i := range ms {
			next++
			out[i] = Stamp{LeaderEpoch: 3, Stamp: next}
		}
		return out, nil
	}
	c.cfg.Notify = func(_ context.Context, ns []Notice) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, ns...)
	}
	defer c.Close()
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	ctx := context.Background()
	pid, epoch, code := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code != 0 {
		t.Fatalf("init: %d", code)
	}
	a, b := TopicPartition{"out", 0}, TopicPartition{"out", 1}
	notices := func(want int) []Notice {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			got := append([]Notice(nil), sent...)
			sent = nil
			mu.Unlock()
			if len(got) >= want || time.Now().After(deadline) {
				if len(got) != want {
					t.Fatalf("notices %+v, want %d", got, want)
				}
				return got
			}
			time.Sleep(time.Millisecond) // polling a condition with a deadline
		}
	}
	txn := func(parts ...TopicPartition) {
		t.Helper()
		for _, tp := range parts {
			if code, _ := c.AddPartitions(ctx, "app", pid, epoch, []TopicPartition{tp}, false); code != 0 {
				t.Fatalf("add %v: %d", tp, code)
			}
		}
		if _, _, code := c.EndTxn(ctx, "app", pid, epoch, true, false); code != 0 {
			t.Fatalf("end: %d", code)
		}
	}
	txn(a, b)
	notices(0)
	// The second transaction: a and b noticed with the stamps of the first
	// one's markers (written in partition order: 101, 102); a again adds
	// nothing to notice.
	if code, _ := c.AddPartitions(ctx, "app", pid, epoch, []TopicPartition{a, b}, false); code != 0 {
		t.Fatalf("add: %d", code)
	}
	got := notices(2)
	for _, n := range got {
		want := uint64(101)
		if n.TopicPartition == b {
			want = 102
		}
		if n.ProducerID != pid || n.Epoch != epoch || n.At != (Stamp{LeaderEpoch: 3, Stamp: want}) {
			t.Fatalf("notice %+v, want producer %d epoch %d stamp %d at leader epoch 3", n, pid, epoch, want)
		}
	}
	if code, _ := c.AddPartitions(ctx, "app", pid, epoch, []TopicPartition{a}, false); code != 0 {
		t.Fatalf("add again: %d", code)
	}
	mu.Lock()
	failing = true // the second transaction's markers fail once, then succeed
	mu.Unlock()
	if _, _, code := c.EndTxn(ctx, "app", pid, epoch, false, false); code != 0 {
		t.Fatalf("abort: %d", code)
	}
	// The third transaction: noticed with the stamps of the retried markers
	// (103, 104), never the failed attempt's.
	if code, _ := c.AddPartitions(ctx, "app", pid, epoch, []TopicPartition{a}, false); code != 0 {
		t.Fatalf("add: %d", code)
	}
	got = notices(1)
	if got[0].TopicPartition != a || got[0].At != (Stamp{LeaderEpoch: 3, Stamp: 103}) {
		t.Fatalf("notice %+v, want %v at stamp 103", got[0], a)
	}
}
