package replication

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batchtest"
)

// TestWaitAckedAfterLeadershipLoss: an acks=all batch waits for a follower;
// the leadership moves, this replica's log is truncated below the batch and
// refilled from the new leader, whose high watermark passes the offset. The
// wait must answer NOT_LEADER_OR_FOLLOWER: the high watermark is now about
// other records, and the batch was never replicated.
func TestWaitAckedAfterLeadershipLoss(t *testing.T) {
	p, res := lostAppend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wantCode(t, "acks=all wait after the leadership moved", p.WaitAcked(ctx, res.LeaderEpoch, res.LastOffset, -1), kerr.NotLeaderForPartition)
}

// TestWaitHighWatermarkAfterLeadershipLoss: the same for the coordinators'
// waits (a transaction's PrepareCommit record, a marker): a record truncated
// after the leadership moved is not committed because the follower's high
// watermark passed its offset.
func TestWaitHighWatermarkAfterLeadershipLoss(t *testing.T) {
	p, res := lostAppend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wantCode(t, "commit wait after the leadership moved", p.WaitHighWatermark(ctx, res.LeaderEpoch, res.LastOffset), kerr.NotLeaderForPartition)
}

// lostAppend appends a batch to a partition led here in epoch 1 while its
// follower lags, then moves the leadership to the follower (epoch 2): this
// replica's log is truncated below the batch and refilled with another record
// from the new leader, whose high watermark passes the batch's offset.
func lostAppend(t *testing.T) (*Partition, AppendResult) {
	t.Helper()
	m, db := newManager(t, t.TempDir())
	t.Cleanup(func() { closeAll(t, m, db) })
	s := spec("t", 1, 1)
	s.Partitions[0].Replicas, s.Partitions[0].ISR = []int32{0, 1}, []int32{0, 1}
	s.Partitions[0].LeaderEpoch = 1
	if err := m.Apply(1, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	res, err := p.Append(batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), "ours"), -1)
	if err != nil {
		t.Fatal(err)
	}
	// Broker 1 leads from epoch 2; its log has another record at our offset.
	s.Partitions[0].Leader, s.Partitions[0].LeaderEpoch = 1, 2
	if err := m.Apply(2, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	if err := p.truncateToLeader(2, 0); err != nil {
		t.Fatal(err)
	}
	theirs := batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), "theirs")
	binary.BigEndian.PutUint32(theirs[12:], 2) // partition leader epoch (not under the CRC)
	if err := p.appendReplica(theirs); err != nil {
		t.Fatal(err)
	}
	p.followHW(1)
	if hw := p.HighWatermark(); hw <= res.LastOffset {
		t.Fatalf("high watermark %d, want past %d", hw, res.LastOffset)
	}
	return p, res
}

// TestWaitAckedISRBelowMin: an acks=all batch appended with the ISR at
// min.insync.replicas whose high watermark passes it only because the ISR
// shrank to fewer replicas is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND, as in
// Kafka: it is on fewer replicas than the producer was promised.
func TestWaitAckedISRBelowMin(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	s := spec("t", 1, 1)
	s.Config.MinInsyncReplicas = 2
	s.Partitions[0].Replicas, s.Partitions[0].ISR = []int32{0, 1}, []int32{0, 1}
	if err := m.Apply(1, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	res, err := p.Append(batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), "v"), -1)
	if err != nil {
		t.Fatal(err)
	}
	// The controller drops the lagging follower from the ISR.
	s.Partitions[0].ISR, s.Partitions[0].PartitionEpoch = []int32{0}, 1
	if err := m.Apply(2, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw <= res.LastOffset {
		t.Fatalf("high watermark %d, want past %d once the ISR is the leader alone", hw, res.LastOffset)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wantCode(t, "acks=all wait, ISR below min.insync.replicas", p.WaitAcked(ctx, res.LeaderEpoch, res.LastOffset, -1), kerr.NotEnoughReplicasAfterAppend)
}
