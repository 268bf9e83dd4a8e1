package logstore_test

import (
	"bytes"
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
