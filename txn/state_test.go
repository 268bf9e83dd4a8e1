package txn

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
)

// TestTV1RecordStaysV0: a TV1 transaction's record is value v0 byte for byte
// as before TV2 (no tags), and reads back with no TV2 fields.
func TestTV1RecordStaysV0(t *testing.T) {
	m := &txnMeta{id: "id", pid: 7, epoch: 3, timeout: time.Minute, state: Ongoing,
		partitions: map[TopicPartition]struct{}{{"a", 0}: {}},
		started:    time.UnixMilli(1000), updated: time.UnixMilli(2000), lastEpoch: -1,
		prevPID: -1, nextPID: -1, nextEpoch: -1}
	// The v0 layout written by hand (docs/format/transactions.md).
	want := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 3, 0, 0, 0xea, 0x60, 1,
		0, 0, 0, 1, 0, 1, 'a', 0, 0, 0, 1, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0x07, 0xd0, 0, 0, 0, 0, 0, 0, 0x03, 0xe8}
	if got := m.record().Value; !bytes.Equal(got, want) {
		t.Fatalf("TV1 value\n got %x\nwant %x", got, want)
	}
	_, got, err := parseRecord(m.record())
	if err != nil {
		t.Fatal(err)
	}
	if got.tv2 || got.prevPID != -1 || got.nextPID != -1 || got.nextEpoch != -1 {
		t.Fatalf("v0 read as tv2 %v prev %d next %d/%d", got.tv2, got.prevPID, got.nextPID, got.nextEpoch)
	}
}

// TestTV2RecordRoundTrip: a TV2 transaction's record is value v1 with Kafka's
// tags, readable by kmsg (Kafka's schema), and reads back whole.
func TestTV2RecordRoundTrip(t *testing.T) {
	m := &txnMeta{id: "id", pid: 7, epoch: 32767, timeout: time.Minute, state: PrepareCommit,
		partitions: map[TopicPartition]struct{}{{"a", 0}: {}},
		started:    time.UnixMilli(1000), updated: time.UnixMilli(2000), lastEpoch: -1,
		tv2: true, prevPID: 5, nextPID: 9, nextEpoch: -1}
	r := m.record()
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		t.Fatal(err)
	}
	if v.Version != 1 || v.ClientTransactionVersion != 2 || v.PreviousProducerID != 5 || v.NextProducerID != 9 ||
		v.NextProducerEpoch != -1 || v.ProducerEpoch != 32767 || v.State != PrepareCommit {
		t.Fatalf("kmsg reads %+v", v)
	}
	_, got, err := parseRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	if !got.tv2 || got.prevPID != 5 || got.nextPID != 9 || got.nextEpoch != -1 || got.epoch != 32767 {
		t.Fatalf("round trip: %+v", got)
	}
	// KIP-939's next_producer_epoch is kept when read.
	v.NextProducerEpoch = 4
	_, got, err = parseRecord(batch.Record{Key: r.Key, Value: v.AppendTo(nil)})
	if err != nil || got.nextEpoch != 4 || got.record().Value == nil {
		t.Fatalf("next_producer_epoch: %v %+v", err, got)
	}
	if _, again, _ := parseRecord(got.record()); again.nextEpoch != 4 {
		t.Fatalf("next_producer_epoch not kept on write: %d", again.nextEpoch)
	}
}

// TestCarriedCompletionRoundTrip: an Ongoing record carrying the previous
// transaction's completion keeps Kafka's fields (kmsg reads it as a plain
// Ongoing with one unknown tag) and reads back whole; a done completion is
// left out; a malformed tag is an error, not a silent loss.
func TestCarriedCompletionRoundTrip(t *testing.T) {
	c := &completion{commit: true, pid: 7, epoch: 4, coordinatorEpoch: 9,
		partitions: []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}}}
	m := &txnMeta{id: "id", pid: 7, epoch: 4, timeout: time.Minute, state: Ongoing,
		partitions: map[TopicPartition]struct{}{{"c", 0}: {}},
		started:    time.UnixMilli(1000), updated: time.UnixMilli(2000), lastEpoch: -1,
		tv2: true, prevPID: -1, nextPID: -1, nextEpoch: -1, carried: c}
	r := m.record()
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		t.Fatal(err)
	}
	if v.State != Ongoing || len(v.Topics) != 1 || v.Topics[0].Topic != "c" || v.UnknownTags.Len() != 1 {
		t.Fatalf("kmsg reads %+v", v)
	}
	_, got, err := parseRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	g := got.carried
	if g == nil || !g.commit || g.pid != 7 || g.epoch != 4 || g.coordinatorEpoch != 9 || len(g.partitions) != 3 ||
		g.partitions[1] != (TopicPartition{"a", 2}) || g.partitions[2] != (TopicPartition{"b", 1}) {
		t.Fatalf("carried completion read back as %+v", g)
	}
	if ms := g.markers(); len(ms) != 3 || !ms[0].TV2 || ms[0].Epoch != 4 || !ms[0].Commit || ms[0].CoordinatorEpoch != 9 {
		t.Fatalf("markers %+v", ms)
	}
	c.done.Store(true)
	if _, got, _ := parseRecord(m.record()); got.carried != nil {
		t.Fatal("a done completion was written")
	}
	v.UnknownTags = kmsg.Tags{}
	v.UnknownTags.Set(CompletionTag, []byte{1, 2, 3})
	if _, _, err := parseRecord(batch.Record{Key: r.Key, Value: v.AppendTo(nil)}); err == nil {
		t.Fatal("a malformed completion tag was accepted")
	}
}
