package replication

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/batchtest"
)

func TestEpochCache(t *testing.T) {
	dir := t.TempDir()
	c, err := loadEpochs(vfs.Default, dir)
	if err != nil || c.latest() != -1 {
		t.Fatalf("empty: %v latest %d", err, c.latest())
	}
	for _, e := range []epochEntry{{0, 0}, {2, 100}, {5, 250}} {
		if err := c.assign(e.epoch, e.startOffset); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.assign(4, 300); err != nil || len(c.entries) != 3 {
		t.Fatalf("an older epoch was recorded: %v %v", err, c.entries)
	}
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{5, 5, 400},  // the latest: the log end
		{2, 2, 250},  // ends where epoch 5 starts
		{3, 2, 250},  // unknown epoch between: the one below it
		{0, 0, 100},  // the first
		{9, -1, -1},  // newer than anything known
		{-1, -1, -1}, // undefined
	} {
		e, end := c.endOffsetFor(tc.epoch, 400)
		if e != tc.wantEpoch || end != tc.wantEnd {
			t.Errorf("endOffsetFor(%d) = %d, %d; want %d, %d", tc.epoch, e, end, tc.wantEpoch, tc.wantEnd)
		}
	}
	// The checkpoint survives a reopen, and truncation drops later epochs.
	c2, err := loadEpochs(vfs.Default, dir)
	if err != nil || len(c2.entries) != 3 {
		t.Fatalf("reload: %v %v", err, c2.entries)
	}
	if err := c2.truncateFrom(250); err != nil || c2.latest() != 2 {
		t.Fatalf("truncate: %v latest %d", err, c2.latest())
	}
	if c3, err := loadEpochs(vfs.Default, dir); err != nil || c3.latest() != 2 {
		t.Fatalf("reload after truncate: %v", err)
	}
	// Damage is detected, whatever byte it hits.
	b, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		bad := append([]byte(nil), b...)
		bad[i] ^= 0x40
		if _, err := decodeEpochs(bad); !errors.Is(err, errEpochsCorrupt) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	if _, err := decodeEpochs(b[:len(b)-1]); !errors.Is(err, errEpochsCorrupt) {
		t.Fatalf("truncated: %v", err)
	}
}

// TestLeaderEpochSavedAtFirstAppend: becoming leader records the new epoch in
// memory only; the checkpoint gets it before the epoch's first batch is appended.
func TestLeaderEpochSavedAtFirstAppend(t *testing.T) {
	dir := t.TempDir()
	m, db := newManager(t, dir)
	defer closeAll(t, m, db)
	s := spec("t", 1, 1)
	s.Partitions[0].LeaderEpoch = 2
	if err := m.Apply(1, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	if e, end := p.EndOffsetForEpoch(2); e != 2 || end != 0 {
		t.Fatalf("epoch 2 in memory: (%d, %d), want (2, 0)", e, end)
	}
	folder := filepath.Join(dir, "topics", "t-0")
	saved := func() int32 {
		c, err := loadEpochs(vfs.Default, folder)
		if err != nil {
			t.Fatal(err)
		}
		return c.latest()
	}
	if e := saved(); e != -1 {
		t.Fatalf("checkpoint holds epoch %d before any append, want none", e)
	}
	if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, "a"), 1); err != nil {
		t.Fatal(err)
	}
	if e := saved(); e != 2 {
		t.Fatalf("checkpoint holds epoch %d after the first append, want 2", e)
	}
}
