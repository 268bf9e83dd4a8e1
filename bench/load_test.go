package bench

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The free list makes records of the asked size, in lower-case letters, and
// hands a returned record out again with everything but its value cleared.
func TestRecordFreeList(t *testing.T) {
	l := recordFreeList{size: 13, seed: 1}
	a, b := l.get(), l.get()
	if a == b || &a.Value[0] == &b.Value[0] {
		t.Fatal("two records share storage")
	}
	for _, r := range []*kgo.Record{a, b} {
		if len(r.Value) != 13 {
			t.Fatalf("value of %d bytes, want 13", len(r.Value))
		}
		for _, c := range r.Value {
			if c < 'a' || c > 'z' {
				t.Fatalf("value %q is not lower-case letters", r.Value)
			}
		}
	}
	if string(a.Value) == string(b.Value) {
		t.Fatalf("two records with the same value %q", a.Value)
	}
	ctx := a.Context
	a.Topic, a.Partition, a.Offset = "t", 3, 99
	l.put(a)
	c := l.get()
	if c != a || c.Topic != "" || c.Partition != 0 || c.Offset != 0 || len(c.Value) != 13 || c.Context != ctx {
		t.Fatalf("reused record %+v, want record %p cleared but for its value and stamp", c, a)
	}
	if l.made != 2 {
		t.Fatalf("made %d records, want 2", l.made)
	}
}

// Without stampValues the stamp is only in the record's stampContext, to the
// nanosecond (franz-go truncates the Timestamp to the millisecond); with it, in
// the value's first 8 bytes as well, where the e2e consumer reads it.
func TestLoadProducerStamp(t *testing.T) {
	clock := benchClock{}
	for _, stampValues := range []bool{false, true} {
		p := newLoadProducer(nil, clock, 16, stampValues, new(loadCounters))
		r := p.free.get()
		before := string(r.Value)
		p.stamp(r, 12345)
		if got := r.Context.(*stampContext).stamp; got != 12345 {
			t.Errorf("stampValues %v: stamp %d, want 12345", stampValues, got)
		}
		wantValue := before
		if stampValues {
			wantValue = "\x39\x30\x00\x00\x00\x00\x00\x00" + before[8:]
		}
		if string(r.Value) != wantValue {
			t.Errorf("stampValues %v: value %q, want %q", stampValues, r.Value, wantValue)
		}
	}
}

// franz-go's own defaults stay in force unless a flag says otherwise: with acks=all
// and no --linger there is no idempotence or linger option.
func TestProducerOpts(t *testing.T) {
	cfg := Config{Topic: "t", Acks: kgo.AllISRAcks(), Idempotent: true, Compression: kgo.NoCompression(),
		Linger: -1, DeliveryTimeout: time.Minute}
	if n := len(cfg.producerOpts(0)); n != 4 {
		t.Errorf("%d producer options, want 4 (topic, acks, compression, delivery timeout)", n)
	}
	cfg.Acks, cfg.Idempotent, cfg.Linger = kgo.LeaderAck(), false, 0
	if n := len(cfg.producerOpts(0)); n != 6 {
		t.Errorf("acks=1, linger 0: %d producer options, want 6 (and idempotence off, linger)", n)
	}
}

// TestAckGaps: a partition's gap runs from the later of its last acknowledgement and
// the waiting record's stamp; queueing in the client does not count as an outage.
func TestAckGaps(t *testing.T) {
	var g ackGaps
	g.ack(0, 0, 10)   // first ack of partition 0, record stamped at 0: 10
	g.ack(2, 5, 12)   // partition 2 grows the slice: 7
	g.ack(0, 11, 40)  // sent after the last ack: 29
	g.ack(0, 12, 45)  // queued behind it, acked 5 after it: 5
	g.ack(2, 100, 60) // a stamp after the ack time (due time ahead): no gap
	if g.longest != 29 || g.partition != 0 {
		t.Fatalf("longest gap %d on partition %d, want 29 on partition 0", g.longest, g.partition)
	}
	g.ack(2, 13, 100) // partition 2 waited since its ack at 60: 40
	if g.longest != 40 || g.partition != 2 {
		t.Fatalf("longest gap %d on partition %d, want 40 on partition 2", g.longest, g.partition)
	}
}
