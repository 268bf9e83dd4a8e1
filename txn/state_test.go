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
