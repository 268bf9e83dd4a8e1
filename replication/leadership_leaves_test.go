package replication

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batchtest"
)

// TestWaitersAnsweredWhenLeadershipLeaves: when a partition stops being led here,
// by the fence (the session is in doubt, the process was paused) or by the
// metadata naming another leader, an acks=all produce waiting for its follower is
// answered NOT_LEADER_OR_FOLLOWER and a parked fetch is woken at once, not at
// their timeouts (30 s here).
func TestWaitersAnsweredWhenLeadershipLeaves(t *testing.T) {
	for _, how := range []string{"fenced", "moved"} {
		t.Run(how, func(t *testing.T) {
			m, db := newManager(t, t.TempDir())
			defer closeAll(t, m, db)
			s := spec("t", 1, 1)
			s.Partitions[0].Replicas, s.Partitions[0].ISR = []int32{0, 1}, []int32{0, 1}
			s.Partitions[0].LeaderEpoch = 1
			if err := m.Apply(1, []TopicSpec{s}); err != nil {
				t.Fatal(err)
			}
			p := m.Partition("t", 0)
			res, err := p.Append(batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), "waits"), -1)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			acked := make(chan error, 1)
			go func() { acked <- p.WaitAcked(ctx, res.LeaderEpoch, res.LastOffset, -1) }()
			parked := make(chan struct{}, 1) // a fetch parked on the partition
			p.AddWaiter(parked)
			defer p.RemoveWaiter(parked)
			select {
			case err := <-acked:
				t.Fatalf("the acks=all produce was answered before the follower fetched: %v", err)
			case <-time.After(100 * time.Millisecond): // it is waiting
			}
			select { // drain the wake-ups of the append
			case <-parked:
			default:
			}

			left := time.Now()
			if how == "fenced" {
				m.SetFenced(true)
			} else {
				s.Partitions[0].Leader, s.Partitions[0].LeaderEpoch = 1, 2
				if err := m.Apply(2, []TopicSpec{s}); err != nil {
					t.Fatal(err)
				}
			}
			if p.IsLeader() {
				t.Fatal("the partition still leads")
			}
			select {
			case <-parked:
			case <-ctx.Done():
				t.Fatal("the parked fetch was not woken")
			}
			wantCode(t, "the waiting acks=all produce", <-acked, kerr.NotLeaderForPartition)
			if took := time.Since(left); took > time.Second {
				t.Errorf("answered %v after the leadership left, want at once", took)
			}
		})
	}
}
