package groups

import (
	"testing"
	"time"
)

// TestDeletedTopicOffsets: a deleted topic's committed offsets are deleted in
// every group, at once when the coordinator is told (TopicsDeleted), otherwise
// at the next expiry check, as are those of partitions a topic created again no
// longer has; other offsets stay, and a rebuild from the log agrees.
func TestDeletedTopicOffsets(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RetentionCheckInterval = time.Minute })
	e.commit(7, "a", "", -1, "t", map[int32]int64{0: 5, 1: 6})
	e.commit(7, "a", "", -1, "u", map[int32]int64{0: 7})
	e.commit(7, "b", "", -1, "u", map[int32]int64{1: 8})

	e.setTopic("u", 0)
	e.c.TopicsDeleted()
	waitFor(t, "the offsets of u to be deleted", func() bool { return len(e.fetch("a")) == 2 && len(e.fetch("b")) == 0 })
	if got := e.fetch("a"); got["t/0"] != 5 || got["t/1"] != 6 {
		t.Fatalf("offsets of t: %v", got)
	}

	// Not told: t deleted and created again with one partition.
	e.setTopic("t", 1)
	e.clock.Advance(time.Minute)
	waitFor(t, "the offset of t/1 to be deleted", func() bool { return len(e.fetch("a")) == 1 })
	if got := e.fetch("a"); got["t/0"] != 5 {
		t.Fatalf("offsets of a: %v, want t/0 at 5", got)
	}

	e.stop()
	removeAll(e.dir + "/meta")
	e.start()
	if a, b := e.fetch("a"), e.fetch("b"); len(a) != 1 || a["t/0"] != 5 || len(b) != 0 {
		t.Fatalf("rebuilt from the log: a %v, b %v", a, b)
	}
}
