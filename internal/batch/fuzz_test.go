package batch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
)

// FuzzCheck feeds arbitrary bytes to the batch validation the produce path and
// segment recovery rely on. With fixCRC the harness first stores the right CRC32C,
// so that the checks after the CRC are reached too. flip picks one bit to flip in an
// accepted batch. Invariants:
//   - ParseHeader, Check, Split and Records never panic;
//   - a batch with a CRC that does not match its bytes 21..end is never accepted;
//   - Split hands its callback only batches that pass Check, back to back from the
//     start, and fails exactly when the bytes are not whole valid batches;
//   - an accepted batch: Check accepts it again with the same header, its size is
//     its length, Split finds it alone (and twice when doubled), rewriting the
//     broker-owned fields (baseOffset, partitionLeaderEpoch) keeps it valid, and
//     flipping any bit outside those fields makes Check refuse it;
//   - the records of an accepted batch (any codec) either parse, as many as
//     recordCount, or Records reports ErrRecord; a batch rebuilt from some of
//     them reads back as exactly those (checkRecords).
func FuzzCheck(f *testing.F) {
	f.Add(batchtest.Strings(batchtest.Plain, 1000, "a", "bb", "ccc"), false, uint32(0))
	f.Add(batchtest.Strings(batchtest.Producer{ID: 7, Epoch: 1, Sequence: 5}, 1, "idempotent"), false, uint32(77))
	f.Add(append(batchtest.Strings(batchtest.Plain, 1, "x"), batchtest.Strings(batchtest.Plain, 2, "y", "z")...), false, uint32(200))
	f.Add(batch.Build(5, []batch.Record{{Key: []byte("k"), Value: nil}, {Key: nil, Value: []byte{}}}), false, uint32(9))
	f.Add(make([]byte, batch.HeaderSize), true, uint32(3))
	for _, c := range []compress.Codec{compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		f.Add(batchtest.Keyed(batchtest.Plain, 9, c, c == compress.Snappy, batchtest.KV{Key: []byte("k"), Value: []byte("v")},
			batchtest.KV{Key: []byte("t")}), false, uint32(c))
	}
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool, flip uint32) {
		b = bytes.Clone(b)
		if fixCRC && len(b) >= batch.HeaderSize {
			binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
		}
		batch.ParseHeader(b)
		h, err := batch.Check(b)
		if err == nil && len(b) >= batch.HeaderSize && batch.CRC(b) != binary.BigEndian.Uint32(b[17:]) {
			t.Fatal("batch accepted with a CRC that does not match its bytes")
		}
		checkSplit(t, b)
		if err != nil {
			return
		}

		h2, err := batch.Check(b)
		if err != nil || h2 != h {
			t.Fatalf("accepted batch checked again: %+v %v, first %+v", h2, err, h)
		}
		if h.Size() != int64(len(b)) {
			t.Fatalf("accepted batch of %d bytes has size %d", len(b), h.Size())
		}
		n := 0
		if err := batch.Split(append(bytes.Clone(b), b...), func(got batch.Header, raw []byte) error {
			if got != h || !bytes.Equal(raw, b) {
				t.Fatalf("Split of the doubled batch: %+v, want %+v", got, h)
			}
			n++
			return nil
		}); err != nil || n != 2 {
			t.Fatalf("Split of the doubled batch: %d batches, %v", n, err)
		}

		owned := bytes.Clone(b)
		batch.SetBaseOffset(owned, int64(flip)<<20)
		batch.SetLeaderEpoch(owned, int32(flip))
		h3, err := batch.Check(owned)
		want := h
		want.BaseOffset, want.LeaderEpoch = int64(flip)<<20, int32(flip)
		if err != nil || h3 != want {
			t.Fatalf("after rewriting base offset and leader epoch: %+v %v, want %+v", h3, err, want)
		}

		bit := int(flip % uint32(8*len(b)))
		flipped := bytes.Clone(b)
		flipped[bit/8] ^= 1 << (bit % 8)
		_, err = batch.Check(flipped)
		if brokerOwned := bit/8 < 8 || (bit/8 >= 12 && bit/8 < 16); brokerOwned != (err == nil) {
			t.Fatalf("bit %d (byte %d) flipped: Check error %v", bit, bit/8, err)
		}

		checkRecords(t, b, &h, flip)
	})
}

// checkRecords checks Records and Rebuild on an accepted batch b: its records
// either parse, as many as recordCount, with offsets inside the batch, or Records
// reports ErrRecord; a batch rebuilt from every other record (keep picks the
// phase) passes Check, keeps the header's offsets and producer fields, and reads
// back as exactly those records.
func checkRecords(t *testing.T, b []byte, h *batch.Header, keep uint32) {
	var recs []batch.Record
	var d batch.Decoder
	err := d.Records(b, func(r batch.Record) error {
		if r.Offset < h.BaseOffset || r.Offset > h.LastOffset() {
			t.Fatalf("record offset %d outside the batch %d..%d", r.Offset, h.BaseOffset, h.LastOffset())
		}
		recs = append(recs, r)
		return nil
	})
	switch {
	case err != nil && !errors.Is(err, batch.ErrRecord):
		t.Fatalf("Records of an accepted batch: %v", err)
	case err != nil:
		return
	case len(recs) != int(h.RecordCount):
		t.Fatalf("%d records read, recordCount %d", len(recs), h.RecordCount)
	}
	var kept []batch.Record
	for i, r := range recs {
		if (i+int(keep))%2 == 0 {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return
	}
	var rb batch.Rebuilder
	out, err := rb.Rebuild(nil, h, kept, int64(keep), compress.FormatOf(h.Codec(), b[batch.HeaderSize:]))
	if err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	nh, err := batch.Check(out)
	if err != nil || nh.BaseOffset != h.BaseOffset || nh.LastOffsetDelta != h.LastOffsetDelta || nh.ProducerID != h.ProducerID ||
		nh.BaseSequence != h.BaseSequence || nh.RecordCount != int32(len(kept)) || nh.Codec() != h.Codec() {
		t.Fatalf("rebuilt batch %+v %v from %+v", nh, err, h)
	}
	i := 0
	if err := batch.Records(out, func(r batch.Record) error {
		w := kept[i]
		if r.Offset != w.Offset || !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) ||
			h.Attributes&batch.AttrTimestampType == 0 && r.Timestamp != w.Timestamp {
			t.Fatalf("rebuilt record %d = %+v, want %+v", i, r, w)
		}
		i++
		return nil
	}); err != nil || i != len(kept) {
		t.Fatalf("rebuilt batch reads %d records, %v", i, err)
	}
}

// checkSplit checks Split on arbitrary bytes: the batches it hands over tile b from
// the start and each passes Check; it succeeds exactly when they cover all of b.
func checkSplit(t *testing.T, b []byte) {
	t.Helper()
	off := 0
	err := batch.Split(b, func(h batch.Header, raw []byte) error {
		if len(raw) == 0 || off+len(raw) > len(b) || !bytes.Equal(raw, b[off:off+len(raw)]) {
			t.Fatalf("Split handed over %d bytes at %d of %d that are not the next bytes", len(raw), off, len(b))
		}
		if got, err := batch.Check(raw); err != nil || got != h {
			t.Fatalf("Split handed over a batch Check refuses (%v) or reads differently", err)
		}
		off += len(raw)
		return nil
	})
	if (err == nil) != (off == len(b)) {
		t.Fatalf("Split: %v after %d of %d bytes", err, off, len(b))
	}
}
