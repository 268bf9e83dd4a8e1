package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"skiff/internal/testnode"
)

// TestFlushAlwaysReplicated: an RF 3 topic under flush.policy=always (followers
// fdatasync before each fetch reports their log end, the leader's high watermark
// waits for its own sync): acks=all records are acknowledged and read back, the
// followers stay in the ISR, and after the leader of a partition is killed a
// survivor serves every acknowledged record.
func TestFlushAlwaysReplicated(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, clusterArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	minISR, always := "2", "always"
	const topic = "always3"
	if r, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR, "flush.policy": &always}, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	fullISR := func() bool {
		md, err := metadata(t, nodes[1].Addr, topic)
		if err != nil {
			return false
		}
		for _, p := range md.Topics[topic].Partitions {
			if len(p.ISR) != 3 || p.Leader < 0 {
				return false
			}
		}
		return true
	}
	poll(t, 30*time.Second, "every ISR complete", fullISR)

	acked := produceN(t, ctx, nodes[1].Addr, topic, 0, 10_000)
	readAll(t, ctx, nodes[2].Addr, topic, acked)
	if !fullISR() {
		t.Fatal("a follower left the ISR while syncing before its fetches")
	}

	md, err := metadata(t, nodes[0].Addr, topic)
	if err != nil {
		t.Fatal(err)
	}
	victim := md.Topics[topic].Partitions[0].Leader
	var rest []*testnode.Node
	for _, n := range nodes {
		if n.ID == victim {
			n.Kill()
		} else {
			rest = append(rest, n)
		}
	}
	poll(t, 30*time.Second, "partition 0 led by a survivor", func() bool {
		md, err := metadata(t, rest[0].Addr, topic)
		if err != nil {
			return false
		}
		l := md.Topics[topic].Partitions[0].Leader
		return l >= 0 && l != victim
	})
	acked = append(acked, produceN(t, ctx, rest[0].Addr, topic, 10_000, 2_000)...)
	readAll(t, ctx, rest[1].Addr, topic, acked)
}
