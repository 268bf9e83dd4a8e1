package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestDeleteRecordsReplicated: on an RF 3 topic, DeleteRecords answers once every
// in-sync follower has moved its log start too (low watermark = the offset asked
// for), so the new start holds on the leader elected after the old one is killed:
// its earliest offset is the new start, and consumers read from there.
func TestDeleteRecordsReplicated(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, clusterArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, "purged"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	poll(t, 30*time.Second, "a complete ISR", func() bool {
		md, err := metadata(t, nodes[1].Addr, "purged")
		return err == nil && len(md.Topics["purged"].Partitions[0].ISR) == 3
	})
	acked := produceN(t, ctx, nodes[1].Addr, "purged", 0, 1000)

	var offs kadm.Offsets
	offs.AddOffset("purged", 0, 600, -1)
	resps, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := resps.Lookup("purged", 0); !ok || r.Err != nil || r.LowWatermark != 600 {
		t.Fatalf("delete records before 600: %+v", r)
	}

	md, err := metadata(t, nodes[0].Addr, "purged")
	if err != nil {
		t.Fatal(err)
	}
	victim := md.Topics["purged"].Partitions[0].Leader
	var rest []*testnode.Node
	for _, n := range nodes {
		if n.ID == victim {
			n.Kill()
		} else {
			rest = append(rest, n)
		}
	}
	poll(t, 30*time.Second, "a new leader", func() bool {
		md, err := metadata(t, rest[0].Addr, "purged")
		l := md.Topics["purged"].Partitions[0].Leader
		return err == nil && l >= 0 && l != victim
	})
	survivor := kadm.NewClient(newClient(t, rest[0].Addr))
	poll(t, 30*time.Second, "the new leader's earliest offset", func() bool {
		starts, err := survivor.ListStartOffsets(ctx, "purged")
		if err != nil {
			return false
		}
		o, ok := starts.Lookup("purged", 0)
		if ok && o.Err == nil && o.Offset != 600 {
			t.Fatalf("the new leader's log start is %d, want 600", o.Offset)
		}
		return ok && o.Err == nil
	})
	cl := newClient(t, rest[1].Addr, kgo.ConsumeTopics("purged"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	if r := fs.Records(); len(r) == 0 || r[0].Offset != 600 || string(r[0].Value) != acked[600] {
		t.Fatalf("the first record read from the start: %+v", r[:min(len(r), 1)])
	}
}
