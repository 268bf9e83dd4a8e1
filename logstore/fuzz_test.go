package logstore_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"skiff/internal/batch"
	"skiff/logstore"
)

// FuzzRecover writes three valid batches followed by arbitrary bytes into a
// segment file and opens it. Invariants: Open succeeds; the three valid batches
// survive unchanged; everything the log then holds is whole, valid, contiguous
// batches (batch.Split accepts a full Read); the log takes a new append.
func FuzzRecover(f *testing.F) {
	valid := append(append(makeBatch(f, 2, 10, 1), makeBatch(f, 1, 30, 2)...), makeBatch(f, 3, 5, 3)...)
	f.Add([]byte{})
	f.Add(make([]byte, 100))
	f.Add(makeBatch(f, 1, 1, 4))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		var prefix []byte
		off := int64(0)
		if err := batch.Split(valid, func(h batch.Header, raw []byte) error {
			b := bytes.Clone(raw)
			batch.SetBaseOffset(b, off)
			off += int64(h.LastOffsetDelta) + 1
			prefix = append(prefix, b...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), append(bytes.Clone(prefix), tail...), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := logstore.Open(dir, logstore.Config{IndexIntervalBytes: 64}, logstore.NewMemIndex())
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Close()
		if l.LogEndOffset() < off {
			t.Fatalf("log end %d below the valid prefix's %d", l.LogEndOffset(), off)
		}
		got, _ := readAll(t, l, 0, math.MaxInt64, math.MaxInt64)
		if !bytes.HasPrefix(got, prefix) {
			t.Fatal("valid prefix changed")
		}
		next := int64(0)
		if err := batch.Split(got, func(h batch.Header, _ []byte) error {
			if h.BaseOffset != next {
				t.Fatalf("base offset %d, want %d", h.BaseOffset, next)
			}
			next = h.NextOffset()
			return nil
		}); err != nil {
			t.Fatalf("recovered log holds invalid bytes: %v", err)
		}
		if next != l.LogEndOffset() || int64(len(got)) != l.Size() {
			t.Fatalf("log end %d / size %d, batches end at %d / %d bytes", l.LogEndOffset(), l.Size(), next, len(got))
		}
		if base, err := l.Append(makeBatch(t, 1, 1, 5), 0); err != nil || base != next {
			t.Fatalf("Append after recovery: %d, %v", base, err)
		}
	})
}

// scanned is one batch a scan handed over: its position, header and bytes.
type scanned struct {
	pos  int64
	h    batch.Header
	skip bool
}

// FuzzScanSegmentSkipping scans arbitrary segment bytes in full and skipping
// the batches that the bits of mask select (bit i%64 for the i-th batch).
// Invariants of the skipping scan: it never panics; a batch comes without its
// bytes exactly when skip chose it, and otherwise with bytes that batch.Check
// accepts and that are the file's at its position; batches tile the file from
// its start, and a scan that ends without error has covered all of it (a short,
// torn or bad header, of a skipped batch too, is an error, never a silent end);
// its errors are *CorruptionError; it hands over the batches the full scan does
// up to where the full scan stops, and all of them when the full scan succeeds.
func FuzzScanSegmentSkipping(f *testing.F) {
	var seg []byte
	off := int64(0)
	for i, b := range [][]byte{makeBatch(f, 2, 10, 1), makeBatch(f, 1, 70_000, 2), makeBatch(f, 3, 5, 3), makeBatch(f, 1, 100_000, 4), makeBatch(f, 1, 1, 5)} {
		b = bytes.Clone(b)
		h, err := batch.ParseHeader(b)
		if err != nil {
			f.Fatal(err)
		}
		off += int64(i) // a gap, as compaction leaves
		batch.SetBaseOffset(b, off)
		off += int64(h.LastOffsetDelta) + 1
		seg = append(seg, b...)
	}
	for _, mask := range []uint64{0, 0b10, 0b1010, ^uint64(0)} {
		f.Add(seg, mask)
		f.Add(seg[:len(seg)-1], mask)
		f.Add(seg[:len(seg)-20], mask)
	}
	f.Add(seg[:30], uint64(1))
	f.Add([]byte{}, uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, mask uint64) {
		scan := func(skip func(*batch.Header) bool) ([]scanned, error) {
			var got []scanned
			pos := int64(0)
			err := logstore.ScanBatches(data, skip, func(h batch.Header, b []byte) error {
				got = append(got, scanned{pos: pos, h: h, skip: b == nil})
				if b != nil {
					if int64(len(b)) != h.Size() || !bytes.Equal(b, data[pos:pos+h.Size()]) {
						t.Fatalf("batch at %d: %d bytes, not the file's %d", pos, len(b), h.Size())
					}
					if _, err := batch.Check(b); err != nil {
						t.Fatalf("batch at %d handed over unchecked: %v", pos, err)
					}
				}
				if h.Size() < batch.HeaderSize || h.Size() > int64(len(data))-pos {
					t.Fatalf("batch at %d of %d bytes in a file of %d", pos, h.Size(), len(data))
				}
				pos += h.Size()
				return nil
			})
			if err == nil && pos != int64(len(data)) {
				t.Fatalf("scan ended at %d without error, file of %d", pos, len(data))
			}
			var ce *logstore.CorruptionError
			if err != nil && !errors.As(err, &ce) {
				t.Fatalf("scan error %v is not a CorruptionError", err)
			}
			return got, err
		}
		full, fullErr := scan(nil)
		i := 0
		got, err := scan(func(*batch.Header) bool {
			i++
			return mask&(1<<((i-1)%64)) != 0
		})
		for k, g := range got {
			if g.skip != (mask&(1<<(k%64)) != 0) {
				t.Fatalf("batch %d at %d: skipped %v, mask %b", k, g.pos, g.skip, mask)
			}
		}
		if fullErr == nil && (err != nil || len(got) != len(full)) {
			t.Fatalf("full scan: %d batches; skipping scan: %d batches, %v", len(full), len(got), err)
		}
		for k := range min(len(full), len(got)) {
			if full[k].pos != got[k].pos || full[k].h != got[k].h {
				t.Fatalf("batch %d: full scan %+v, skipping scan %+v", k, full[k], got[k])
			}
		}
	})
}
