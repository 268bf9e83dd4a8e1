package e2e

// Dead-letter topics of share groups (KIP-1191).

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestShareGroupDeadLetter: records every member rejects, and one every member
// releases until its delivery count reaches the limit, land in the group's
// dead-letter topic once each, with the KIP-1191 headers, and are not delivered
// again; the others are accepted once.
func TestShareGroupDeadLetter(t *testing.T) {
	n := testnode.Start(t)
	const topic, dlq, group, records = "orders", "dlq.orders", "orders-workers", 100
	createTopic(t, n.Addr, topic, 1)
	createTopic(t, n.Addr, dlq, 1)
	prod := newClient(t, n.Addr)
	setShareGroupConfig(t, prod, group, "share.auto.offset.reset", "earliest")
	setShareGroupConfig(t, prod, group, "share.delivery.count.limit", "2")
	setShareGroupConfig(t, prod, group, "share.record.lock.duration.ms", "2000")
	setShareGroupConfig(t, prod, group, "errors.deadletterqueue.topic.name", dlq)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	offsets := map[string]int64{}
	var mu sync.Mutex
	for i := range records {
		v := "ok"
		switch {
		case i == 55:
			v = "flaky"
		case i%10 == 3:
			v = "poison"
		}
		k := "rec-" + strconv.Itoa(i)
		prod.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v), Headers: []kgo.RecordHeader{{Key: "origin", Value: []byte("test")}}},
			func(r *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
				mu.Lock()
				offsets[k] = r.Offset
				mu.Unlock()
			})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	type seen struct{ deliveries, accepts int }
	got := map[string]*seen{}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	for i := range 3 {
		cl := newClient(t, n.Addr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("w"+strconv.Itoa(i)), kgo.FetchMaxWait(300*time.Millisecond))
		go func() {
			for cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					s := got[string(r.Key)]
					if s == nil {
						s = &seen{}
						got[string(r.Key)] = s
					}
					s.deliveries++
					switch string(r.Value) {
					case "poison":
						r.Ack(kgo.AckReject)
					case "flaky":
						r.Ack(kgo.AckRelease)
					default:
						r.Ack(kgo.AckAccept)
						s.accepts++
					}
					mu.Unlock()
				})
				cl.FlushAcks(cctx)
			}
		}()
	}

	// The dead-letter topic, read from its start.
	reader := newClient(t, n.Addr, kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	dead := map[string]*kgo.Record{}
	for len(dead) < 11 {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d records in the dead-letter topic, want 11", len(dead))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if dead[string(r.Key)] != nil {
				t.Errorf("%s is in the dead-letter topic twice", r.Key)
			}
			dead[string(r.Key)] = r
		})
	}
	poll(t, 30*time.Second, "every good record accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, s := range got {
			n += s.accepts
		}
		return n >= records-11
	})
	stop()
	// One more poll of the dead-letter topic finds nothing new.
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	reader.PollFetches(pctx).EachRecord(func(r *kgo.Record) { t.Errorf("%s is in the dead-letter topic again", r.Key) })
	pcancel()

	mu.Lock()
	defer mu.Unlock()
	for i := range records {
		k := "rec-" + strconv.Itoa(i)
		s := got[k]
		switch {
		case i == 55:
			checkDeadLetter(t, dead[k], group, topic, offsets[k], "2", "MAX_DELIVERY_ATTEMPTS_REACHED")
			if s == nil || s.deliveries != 2 {
				t.Errorf("%s delivered %v, want twice (the limit)", k, s)
			}
		case i%10 == 3:
			checkDeadLetter(t, dead[k], group, topic, offsets[k], "1", "REJECTED")
			if s == nil || s.deliveries != 1 {
				t.Errorf("rejected %s delivered %v, want once", k, s)
			}
		default:
			if dead[k] != nil {
				t.Errorf("accepted %s is in the dead-letter topic", k)
			}
			if s == nil || s.accepts != 1 {
				t.Errorf("%s: %+v, want accepted once", k, s)
			}
		}
	}
}

// checkDeadLetter checks a dead-letter record's value, original header and
// KIP-1191 headers.
func checkDeadLetter(t *testing.T, r *kgo.Record, group, topic string, offset int64, count, reason string) {
	t.Helper()
	if r == nil {
		t.Errorf("a record of %s at offset %d is not in the dead-letter topic", topic, offset)
		return
	}
	h := map[string]string{}
	for _, kv := range r.Headers {
		h[kv.Key] = string(kv.Value)
	}
	want := map[string]string{
		"origin": "test", "__dlq.errors.group.id": group, "__dlq.errors.topic": topic, "__dlq.errors.partition": "0",
		"__dlq.errors.offset": strconv.FormatInt(offset, 10), "__dlq.errors.delivery.count": count, "__dlq.errors.reason": reason,
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("%s: header %s = %q, want %q", r.Key, k, h[k], v)
		}
	}
	if string(r.Value) != "poison" && string(r.Value) != "flaky" {
		t.Errorf("%s: value %q, want the original", r.Key, r.Value)
	}
}
