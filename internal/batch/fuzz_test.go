package batch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
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
//   - the records of an accepted uncompressed batch either parse, as many as
//     recordCount, or Records reports ErrRecord.
func FuzzCheck(f *testing.F) {
	f.Add(batchtest.Strings(batchtest.Plain, 1000, "a", "bb", "ccc"), false, uint32(0))
	f.Add(batchtest.Strings(batchtest.Producer{ID: 7, Epoch: 1, Sequence: 5}, 1, "idempotent"), false, uint32(77))
	f.Add(append(batchtest.Strings(batchtest.Plain, 1, "x"), batchtest.Strings(batchtest.Plain, 2, "y", "z")...), false, uint32(200))
	f.Add(batch.Build(5, []batch.Record{{Key: []byte("k"), Value: nil}, {Key: nil, Value: []byte{}}}), false, uint32(9))
	f.Add(make([]byte, batch.HeaderSize), true, uint32(3))
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

		if h.Attributes&batch.AttrCompressionMask == 0 {
			records := 0
			err := batch.Records(b, func(batch.Record) error { records++; return nil })
			switch {
			case err == nil && records != int(h.RecordCount):
				t.Fatalf("%d records read, recordCount %d", records, h.RecordCount)
			case err != nil && !errors.Is(err, batch.ErrRecord):
				t.Fatalf("Records of an accepted batch: %v", err)
			}
		}
	})
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
