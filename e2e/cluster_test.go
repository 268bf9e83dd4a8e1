package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestThreeNodeCluster: three processes form a cluster with --bootstrap and --join; a
// 12-partition topic gets 4 leaders on each node; a client bootstrapped from any one
// node produces to and consumes from every partition.
func TestThreeNodeCluster(t *testing.T) {
	nodes := testnode.StartCluster(t, 3)
	ids := map[int32]bool{}
	for _, n := range nodes {
		ids[n.ID] = true
	}
	if len(ids) != 3 {
		t.Fatalf("node ids %v are not distinct", ids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[1].Addr))
	if _, err := adm.CreateTopic(ctx, 12, 1, nil, "spread"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "spread")
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 3 {
		t.Fatalf("metadata lists %d brokers, want 3", len(md.Brokers))
	}
	leaders := map[int32]int{}
	for _, p := range md.Topics["spread"].Partitions {
		leaders[p.Leader]++
	}
	for id := range ids {
		if leaders[id] != 4 {
			t.Fatalf("leaders per broker %v, want 4 on each", leaders)
		}
	}

	const total = 12_000
	prod := newClient(t, nodes[2].Addr, kgo.DefaultProduceTopic("spread"))
	for i := range total {
		prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, nodes[0].Addr, kgo.ConsumeTopics("spread"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	perPartition := map[int32]int{}
	for len(seen) < total {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", len(seen), total)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Fatalf("record %s twice", r.Value)
			}
			seen[string(r.Value)] = true
			perPartition[r.Partition]++
		})
	}
	if len(perPartition) != 12 {
		t.Fatalf("records in %d partitions, want 12", len(perPartition))
	}
}
