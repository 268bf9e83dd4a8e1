package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestKillMidProduction SIGKILLs the node while an idempotent franz-go producer
// (acks=all) is sending, restarts it on the same data directory, and checks that
// every acknowledged record is there, in produce order per key, exactly once.
func TestKillMidProduction(t *testing.T) {
	n := testnode.Start(t)
	const topic = "crash"
	createTopic(t, n.Addr, topic, 6)
	prod := newClient(t, n.Addr, kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(90*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var mu sync.Mutex
	acked := make(map[string]bool)
	var failed []error
	produced := 0
	killAt, total := 20_000, 60_000
	for i := range total {
		if i == killAt {
			// Kill once a good part of what was sent is acknowledged, with more in flight.
			for {
				mu.Lock()
				k := len(acked)
				mu.Unlock()
				if k >= killAt/2 {
					break
				}
				if ctx.Err() != nil {
					t.Fatal("records not acknowledged before the kill")
				}
				time.Sleep(time.Millisecond) // polling a counter the producer advances
			}
			n.Kill()
			n.Restart()
		}
		v := fmt.Sprintf("k%02d-%07d", i%30, i)
		produced++
		prod.Produce(ctx, &kgo.Record{Key: []byte(v[:3]), Value: []byte(v)}, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			acked[string(r.Value)] = true
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	t.Logf("produced %d, acknowledged %d, failed %d", produced, len(acked), len(failed))
	if len(failed) > 0 {
		t.Logf("first failure: %v", failed[0])
	}
	mu.Unlock()

	cons := newClient(t, n.Addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := make(map[string]bool)
	last := make(map[string]string)
	for missing := len(acked); missing > 0; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d acknowledged records never consumed", missing)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if seen[v] {
				t.Fatalf("record %s consumed twice", v)
			}
			seen[v] = true
			key := string(r.Key)
			if prev := last[key]; prev != "" && v <= prev {
				t.Fatalf("key %s: %s after %s", key, v, prev)
			}
			last[key] = v
			if acked[v] {
				missing--
			}
		})
	}
}
