package batch_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
)

// TestBuildRecords: a built batch passes Check, franz-go's decoder reads the same
// keys and values (null stays null, empty stays empty), and Records reads them back
// with offsets and timestamps.
func TestBuildRecords(t *testing.T) {
	recs := []batch.Record{
		{Key: []byte("k1"), Value: []byte("v1")},
		{Key: []byte("k2"), Value: nil}, // tombstone
		{Key: nil, Value: []byte{}},
	}
	b := batch.Build(1234, recs)
	h, err := batch.Check(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.RecordCount != 3 || h.ProducerID != -1 || h.MaxTimestamp != 1234 || h.Attributes != 0 {
		t.Fatalf("header %+v", h)
	}

	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	rest := rb.Records
	for i, want := range recs {
		var r kmsg.Record
		n, k := varint(rest)
		if err := r.ReadFrom(rest[:k+int(n)]); err != nil {
			t.Fatalf("kmsg record %d: %v", i, err)
		}
		rest = rest[k+int(n):]
		if (r.Key == nil) != (want.Key == nil) || !bytes.Equal(r.Key, want.Key) ||
			(r.Value == nil) != (want.Value == nil) || !bytes.Equal(r.Value, want.Value) || r.OffsetDelta != int32(i) {
			t.Fatalf("kmsg record %d = %+v, want %+v", i, r, want)
		}
	}

	batch.SetBaseOffset(b, 100)
	var got []batch.Record
	if err := batch.Records(b, func(r batch.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("read %d records", len(got))
	}
	for i, r := range got {
		w := recs[i]
		if r.Offset != int64(100+i) || r.Timestamp != 1234 || (r.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(r.Key, w.Key) || (r.Value == nil) != (w.Value == nil) || !bytes.Equal(r.Value, w.Value) {
			t.Fatalf("record %d = %+v, want %+v", i, r, w)
		}
	}
}

// TestRecordsOfProducedBatch reads a batch as a producer builds it (batchtest).
func TestRecordsOfProducedBatch(t *testing.T) {
	b := batchtest.Strings(batchtest.Plain, 50, "a", "bb")
	var vals []string
	if err := batch.Records(b, func(r batch.Record) error {
		vals = append(vals, string(r.Value))
		if r.Timestamp != 50+r.Offset {
			t.Errorf("record %d timestamp %d", r.Offset, r.Timestamp)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(vals) != 2 || vals[0] != "a" || vals[1] != "bb" {
		t.Fatalf("values %q", vals)
	}
}

func TestRecordsErrors(t *testing.T) {
	good := batch.Build(1, []batch.Record{{Key: []byte("k"), Value: []byte("v")}})
	compressed := append([]byte(nil), good...)
	compressed[22] |= 1 // gzip, but the records are not
	if err := batch.Records(compressed, func(batch.Record) error { return nil }); !errors.Is(err, batch.ErrRecord) {
		t.Errorf("compressed: %v", err)
	}
	// A record count larger than the records present.
	more := append([]byte(nil), good...)
	more[60]++
	if err := batch.Records(more, func(batch.Record) error { return nil }); !errors.Is(err, batch.ErrRecord) {
		t.Errorf("record count: %v", err)
	}
	// A key length running past the end.
	long := append([]byte(nil), good...)
	long[batch.HeaderSize+4] = 0x7e
	if err := batch.Records(long, func(batch.Record) error { return nil }); !errors.Is(err, batch.ErrRecord) {
		t.Errorf("key length: %v", err)
	}
	stop := errors.New("stop")
	if err := batch.Records(good, func(batch.Record) error { return stop }); err != stop {
		t.Errorf("callback error: %v", err)
	}
}

// TestKeys: Keys reads the keys and offsets Records reads, of plain and
// compressed batches, and refuses what Records refuses in the keys' part.
func TestKeys(t *testing.T) {
	kvs := []batchtest.KV{{Key: []byte("k1"), Value: []byte("v1")}, {Key: nil, Value: []byte("v")}, {Key: []byte("k3"), Value: nil}}
	for _, c := range []compress.Codec{compress.None, compress.Gzip, compress.LZ4, compress.Zstd, compress.Snappy} {
		b := batchtest.Keyed(batchtest.Plain, 7, c, false, kvs...)
		batch.SetBaseOffset(b, 40)
		var want, got []string
		var d batch.Decoder
		if err := d.Records(b, func(r batch.Record) error {
			want = append(want, fmt.Sprintf("%q@%d nil=%v", r.Key, r.Offset, r.Key == nil))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := d.Keys(b, func(key []byte, offset int64) error {
			got = append(got, fmt.Sprintf("%q@%d nil=%v", key, offset, key == nil))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 3 || got[0] != `"k1"@40 nil=false` {
			t.Fatalf("%v: Keys read %v, Records %v", c, got, want)
		}
	}
	good := batch.Build(1, []batch.Record{{Key: []byte("k"), Value: []byte("v")}})
	long := append([]byte(nil), good...)
	long[batch.HeaderSize+4] = 0x7e // a key length running past the end
	if err := batch.Keys(long, func([]byte, int64) error { return nil }); !errors.Is(err, batch.ErrRecord) {
		t.Errorf("key length: %v", err)
	}
	stop := errors.New("stop")
	if err := batch.Keys(good, func([]byte, int64) error { return stop }); err != stop {
		t.Errorf("callback error: %v", err)
	}
}

func varint(b []byte) (int64, int) {
	var x uint64
	var s uint
	for i, c := range b {
		x |= uint64(c&0x7f) << s
		if c < 0x80 {
			return int64(x>>1) ^ -int64(x&1), i + 1
		}
		s += 7
	}
	return 0, 0
}
