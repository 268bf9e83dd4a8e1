package groups

import (
	"path/filepath"
	"testing"
	"time"

	"skiff/logstore"
	"skiff/offsets"
)

// committedLog is a testLog seen as a follower replica: its committed records.
type committedLog struct{ *testLog }

func (l committedLog) ReadCommitted(offset, maxBytes int64) (*logstore.Slice, error) {
	return l.testLog.Read(offset, maxBytes)
}

// TestFollowerAppliesCommittedRecords: a second coordinator following the partition
// applies the leader's commits to its own Pebble as they become committed (not
// before), and, elected, serves them from Pebble without replaying the log.
func TestFollowerAppliesCommittedRecords(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CommitTimeout = 100 * time.Millisecond })
	db, err := offsets.Open(filepath.Join(t.TempDir(), "follower-meta"), offsets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := e.cfg
	cfg.DB = db
	f := New(cfg)
	defer f.Close()
	f.SetOffsetsTopic(1)
	f.Follow(0, committedLog{e.log})

	if codes := e.commit(2, "g", "", -1, "t", map[int32]int64{0: 5, 1: 7}); codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("commit: %v", codes)
	}
	store := db.GroupShard(0)
	waitFor(t, "the follower applied the commit", func() bool {
		o, ok, err := store.Offset("g", "t", 1)
		return err == nil && ok && o.Offset == 7
	})

	// Records above the high watermark are not applied.
	e.log.setHWCap(e.log.LogEndOffset())
	applied, _ := store.Applied()
	if codes := e.commit(2, "g", "", -1, "t", map[int32]int64{0: 9}); codes[0] == 0 {
		t.Fatal("a commit was acknowledged before it was committed")
	}
	if now, _ := store.Applied(); now != applied {
		t.Fatalf("the follower applied up to %d past the high watermark %d", now, applied)
	}
	e.log.setHWCap(-1)
	waitFor(t, "the follower applied the second commit", func() bool {
		o, ok, err := store.Offset("g", "t", 0)
		return err == nil && ok && o.Offset == 9
	})

	// Elected, the follower's coordinator serves what it applied.
	e.log.epoch.Store(1) // the follower is elected
	f.Elect(0, 1, e.log)
	if f.Followed() != 0 {
		t.Fatal("still following a partition it leads")
	}
	fe := &env{t: t, c: f}
	waitFor(t, "the new coordinator loaded", func() bool { _, code := f.shardFor("g"); return code == 0 })
	if got := fe.fetch("g"); got["t/0"] != 9 || got["t/1"] != 7 {
		t.Fatalf("offsets after the election: %v", got)
	}
}
