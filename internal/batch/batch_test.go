package batch_test

import (
	"errors"
	"testing"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
)

func TestCheck(t *testing.T) {
	good := batchtest.Strings(batchtest.Producer{ID: 7, Epoch: 2, Sequence: 10}, 1000, "a", "bb", "ccc")
	h, err := batch.Check(good)
	if err != nil {
		t.Fatal(err)
	}
	if h.RecordCount != 3 || h.LastOffsetDelta != 2 || h.MaxTimestamp != 1002 || h.ProducerID != 7 ||
		h.ProducerEpoch != 2 || h.BaseSequence != 10 || h.LastSequence() != 12 || h.Size() != int64(len(good)) {
		t.Fatalf("header %+v", h)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:40], batch.ErrShort},
		{"magic", mutate(func(b []byte) []byte { b[16] = 1; return b }), batch.ErrMagic},
		{"crc", mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), batch.ErrCRC},
		{"length longer", mutate(func(b []byte) []byte { b[11]++; return b }), batch.ErrLength},
		{"trailing bytes", mutate(func(b []byte) []byte { return append(b, 0) }), batch.ErrLength},
		{"record count", mutate(func(b []byte) []byte { b[60]++; batch.SetBaseOffset(b, 0); return fixCRC(b) }), batch.ErrRecordCount},
	} {
		if _, err := batch.Check(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// The broker-owned fields are outside the CRC.
	b := mutate(func(b []byte) []byte { batch.SetBaseOffset(b, 1<<40); batch.SetLeaderEpoch(b, 9); return b })
	if h, err := batch.Check(b); err != nil || h.BaseOffset != 1<<40 || h.LeaderEpoch != 9 {
		t.Fatalf("after rewriting offset and epoch: %+v %v", h, err)
	}
	batch.SetLogAppendTime(b, 5555)
	if h, err := batch.Check(b); err != nil || h.MaxTimestamp != 5555 || h.Attributes&batch.AttrTimestampType == 0 {
		t.Fatalf("after SetLogAppendTime: %+v %v", h, err)
	}
}

func fixCRC(b []byte) []byte {
	c := batch.CRC(b)
	b[17], b[18], b[19], b[20] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
	return b
}

func TestSplit(t *testing.T) {
	a := batchtest.Strings(batchtest.Plain, 1, "x")
	b := batchtest.Strings(batchtest.Plain, 2, "y", "z")
	var counts []int32
	err := batch.Split(append(append([]byte(nil), a...), b...), func(h batch.Header, raw []byte) error {
		counts = append(counts, h.RecordCount)
		return nil
	})
	if err != nil || len(counts) != 2 || counts[0] != 1 || counts[1] != 2 {
		t.Fatalf("split: %v %v", counts, err)
	}
	if err := batch.Split(append(append([]byte(nil), a...), b[:30]...), func(batch.Header, []byte) error { return nil }); !errors.Is(err, batch.ErrShort) {
		t.Fatalf("torn second batch: %v", err)
	}
}

func TestLastSequenceWraps(t *testing.T) {
	h := batch.Header{BaseSequence: 1<<31 - 2, LastOffsetDelta: 3}
	if got := h.LastSequence(); got != 1 {
		t.Fatalf("LastSequence = %d, want 1 (wrapped)", got)
	}
}
