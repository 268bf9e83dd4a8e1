package groups

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/offsets"
)

// lostLeadership makes the shard's log what a deposed leader's becomes: it
// follows in epoch 1, its log is truncated at offset and refilled from the new
// leader (another group's commit there), and then it leads again in epoch 2
// with the high watermark past offset, before the coordinator hears of any of
// it (Elect for the new epoch comes later).
func lostLeadership(t *testing.T, e *env, offset int64) {
	t.Helper()
	e.log.follows.Store(true)
	e.log.epoch.Store(1)
	if err := e.log.Log.Truncate(offset); err != nil {
		t.Fatal(err)
	}
	theirs := batch.Build(time.Now().UnixMilli(), []batch.Record{
		commitRecord(offsets.GroupOffset{Group: "other", Topic: "t", Partition: 0, Offset: 42, LeaderEpoch: -1}),
		commitRecord(offsets.GroupOffset{Group: "other", Topic: "t", Partition: 1, Offset: 43, LeaderEpoch: -1}),
	})
	if _, err := e.log.Log.Append(theirs, 1); err != nil {
		t.Fatal(err)
	}
	e.log.epoch.Store(2)
	e.log.follows.Store(false)
	e.log.setHWCap(-1)
	if hw := e.log.HighWatermark(); hw <= offset {
		t.Fatalf("high watermark %d, want past %d", hw, offset)
	}
}

// TestCommitAfterLeadershipLoss: an OffsetCommit waits for its record to be
// committed; the partition's leadership moves away and back, the record is
// truncated and another leadership's records fill its offset, and the high
// watermark passes it. The commit must answer NOT_COORDINATOR, not success,
// and the shard of the old epoch must not apply the new leadership's log.
func TestCommitAfterLeadershipLoss(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CommitTimeout = 10 * time.Second })
	if codes := e.commit(2, "g", "", -1, "t", map[int32]int64{0: 1}); codes[0] != 0 {
		t.Fatalf("first commit: %v", kerr.ErrorForCode(codes[0]))
	}
	before, err := e.db.GroupShard(0).Applied()
	if err != nil {
		t.Fatal(err)
	}
	ours := e.log.LogEndOffset()
	e.log.setHWCap(ours) // the followers do not fetch
	done := make(chan map[int32]int16, 1)
	go func() { done <- e.commit(2, "g", "", -1, "t", map[int32]int64{0: 7}) }()
	waitFor(t, "the commit appended", func() bool { return e.log.LogEndOffset() > ours })

	lostLeadership(t, e, ours)
	select {
	case codes := <-done:
		wantCode(t, "commit whose record was truncated", codes[0], kerr.NotCoordinator)
	case <-time.After(5 * time.Second):
		t.Fatal("the commit did not answer after the leadership moved")
	}
	if a, err := e.db.GroupShard(0).Applied(); err != nil || a != before {
		t.Fatalf("the deposed shard applied up to %d (%v), want %d", a, err, before)
	}
	if codes := e.commit(2, "g", "", -1, "t", map[int32]int64{0: 8}); codes[0] != kerr.NotCoordinator.Code {
		t.Fatalf("commit to the deposed shard: %v", kerr.ErrorForCode(codes[0]))
	}

	// Elected in the new epoch, the coordinator loads the log as it is now.
	e.c.Elect(0, 2, e.log)
	waitFor(t, "partition 0 loaded in epoch 2", func() bool { _, code := e.c.shardFor("g"); return code == 0 })
	got := e.fetch("g")
	if got["t/0"] != 1 {
		t.Fatalf("group g's offsets after the election: %v, want t/0 at 1", got)
	}
	if got := e.fetch("other"); got["t/0"] != 42 || got["t/1"] != 43 {
		t.Fatalf("the new leader's commits: %v", got)
	}
}

// TestAppendInAnotherEpoch: a record the log appends in another leader epoch
// than the shard's (the replica leads again before the coordinator is told) is
// not waited for as the shard's: NOT_COORDINATOR.
func TestAppendInAnotherEpoch(t *testing.T) {
	e := newEnv(t)
	e.log.epoch.Store(3)
	if codes := e.commit(2, "g", "", -1, "t", map[int32]int64{0: 1}); codes[0] != kerr.NotCoordinator.Code {
		t.Fatalf("commit appended in another epoch: %v", kerr.ErrorForCode(codes[0]))
	}
}

// TestWritesAfterLeadershipLoss: as TestCommitAfterLeadershipLoss, for a
// TxnOffsetCommit and a share group's membership records.
func TestWritesAfterLeadershipLoss(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(e *env) int16
	}{
		{"TxnOffsetCommit", func(e *env) int16 {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.SetVersion(3)
			r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.Generation = "tx", "g", 7, 0, -1
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = 0, 6
			r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
			return e.c.TxnOffsetCommit(context.Background(), r, nil).Topics[0].Partitions[0].ErrorCode
		}},
		{"share membership", func(e *env) int16 {
			rec := batch.Record{Key: []byte("share-key"), Value: []byte("share-value")}
			return e.c.AppendShareRecords("sg", []batch.Record{rec})(context.Background())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.CommitTimeout = 10 * time.Second })
			ours := e.log.LogEndOffset()
			e.log.setHWCap(ours)
			done := make(chan int16, 1)
			go func() { done <- tc.write(e) }()
			waitFor(t, "the write appended", func() bool { return e.log.LogEndOffset() > ours })
			lostLeadership(t, e, ours)
			select {
			case code := <-done:
				wantCode(t, "write whose record was truncated", code, kerr.NotCoordinator)
			case <-time.After(5 * time.Second):
				t.Fatal("the write did not answer after the leadership moved")
			}
		})
	}
}

// TestCommitAcrossFence: a fence (the replica stops leading for a moment in the
// same epoch, as when its session is in doubt) holds a commit's answer back, and
// does not depose the shard: once it leads again the commit succeeds.
func TestCommitAcrossFence(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CommitTimeout = 10 * time.Second })
	ours := e.log.LogEndOffset()
	e.log.setHWCap(ours)
	done := make(chan map[int32]int16, 1)
	go func() { done <- e.commit(2, "g", "", -1, "t", map[int32]int64{0: 7}) }()
	waitFor(t, "the commit appended", func() bool { return e.log.LogEndOffset() > ours })
	e.log.follows.Store(true)
	e.log.setHWCap(-1)
	select {
	case codes := <-done:
		t.Fatalf("commit answered while fenced: %v", kerr.ErrorForCode(codes[0]))
	case <-time.After(100 * time.Millisecond): // an answer would come within a wake-up
	}
	e.log.follows.Store(false)
	e.log.notify()
	select {
	case codes := <-done:
		wantCode(t, "commit after the fence", codes[0], nil)
	case <-time.After(5 * time.Second):
		t.Fatal("the commit did not answer after the fence")
	}
	if got := e.fetch("g"); got["t/0"] != 7 {
		t.Fatalf("offsets after the fence: %v", got)
	}
}
