package e2e

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// BenchmarkOffsetCommit measures OffsetCommit against a real skiff serve process:
// each op commits one partition's offset (generation -1) and is answered once
// the commit is in __consumer_offsets and applied to Pebble. "serial" is one
// committer (latency-bound), "parallel-16" sixteen groups committing at once. The
// baseline is an acks=all produce of one record of the same size, one at a time:
// the same round trip and log append without the group coordinator.
//
//	go test ./e2e -run XXX -bench OffsetCommit -benchtime 5s
func BenchmarkOffsetCommit(b *testing.B) {
	n := testnode.Start(b)
	createTopicB(b, n.Addr, "commits", 16)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.DefaultProduceTopic("commits"))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	// One OffsetCommit request per commit (kadm's CommitOffsets would add a Metadata
	// request to look up topic ids).
	commit := func(group string, p int32, at int64) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group = group
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "commits"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, at
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	if err := commit("warm-up", 0, 0); err != nil { // creates __consumer_offsets
		b.Fatal(err)
	}

	b.Run("produce-baseline", func(b *testing.B) {
		r := &kgo.Record{Value: make([]byte, 60)} // about a commit record's size
		ops := 0
		for b.Loop() {
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				b.Fatal(err)
			}
			ops++
		}
		b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "produces/s")
	})
	b.Run("serial", func(b *testing.B) {
		ops := 0
		for b.Loop() {
			if err := commit("bench-serial", int32(ops%16), int64(ops)); err != nil {
				b.Fatal(err)
			}
			ops++
		}
		b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "commits/s")
	})
	b.Run("parallel-16", func(b *testing.B) {
		var next, ops atomic.Int64
		var failed atomic.Pointer[error]
		b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 committers
		b.RunParallel(func(pb *testing.PB) {
			g := fmt.Sprintf("bench-parallel-%d", next.Add(1))
			for i := 0; pb.Next(); i++ {
				if err := commit(g, int32(i%16), int64(i)); err != nil {
					failed.Store(&err)
					return
				}
				ops.Add(1)
			}
		})
		if e := failed.Load(); e != nil {
			b.Fatal(*e)
		}
		b.ReportMetric(float64(ops.Load())/b.Elapsed().Seconds(), "commits/s")
	})
}

// BenchmarkRebalance3Consumers measures how long three franz-go consumers started
// together take to join a new group and hold all 6 partitions of a topic between
// them (each at least one), from client creation to the last assignment, with the
// default group.initial.rebalance.delay.ms (3 s) and with none.
//
//	go test ./e2e -run XXX -bench Rebalance3 -benchtime 5x
func BenchmarkRebalance3Consumers(b *testing.B) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"initial-delay-3s", nil},
		{"initial-delay-0s", []string{"--group-initial-rebalance-delay", "0s"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			n := testnode.Start(b, tc.args...)
			createTopicB(b, n.Addr, "rebalance", 6)
			var total time.Duration
			runs := 0
			for b.Loop() {
				total += joinThree(b, n.Addr, fmt.Sprintf("rebalance-%d", runs))
				runs++
			}
			b.ReportMetric(total.Seconds()*1000/float64(runs), "ms/rebalance")
		})
	}
}

// joinThree starts three consumers of a new group and returns the time until they
// hold the 6 partitions between them; it closes them again.
func joinThree(b *testing.B, addr, group string) time.Duration {
	var mu sync.Mutex
	owned := map[string]map[int32]bool{}
	done := make(chan struct{})
	var once sync.Once
	check := func() {
		all := map[int32]bool{}
		for _, ps := range owned {
			if len(ps) == 0 {
				return
			}
			for p := range ps {
				all[p] = true
			}
		}
		if len(owned) == 3 && len(all) == 6 {
			once.Do(func() { close(done) })
		}
	}
	start := time.Now()
	var cls []*kgo.Client
	for m := range 3 {
		name := fmt.Sprintf("m%d", m)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics("rebalance"),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				if owned[name] == nil {
					owned[name] = map[int32]bool{}
				}
				for _, p := range a["rebalance"] {
					owned[name][p] = true
				}
				check()
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range r["rebalance"] {
					delete(owned[name], p)
				}
			}))
		if err != nil {
			b.Fatal(err)
		}
		cls = append(cls, cl)
	}
	// Consumers join as they poll.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, cl := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatal("three consumers did not share the partitions within 60 s")
	}
	took := time.Since(start)
	cancel()
	wg.Wait()
	for _, cl := range cls {
		cl.Close()
	}
	return took
}
