package e2e

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestForceNewCluster follows docs/operations.md "Losing the etcd quorum for good":
// two nodes of three are gone for good; the survivor is stopped and restarted with
// --force-new-cluster, serves on its own with its data (its partitions readable), a
// lost node that comes back is refused, a new empty node joins, and the survivor
// restarts without the setting.
func TestForceNewCluster(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, clusterArgs...)
	survivor := nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitBrokers(t, 3, nodes...)
	if _, err := kadm.NewClient(newClient(t, survivor.Addr)).CreateTopic(ctx, 6, 1, nil, "kept"); err != nil {
		t.Fatal(err)
	}
	md, err := metadata(t, survivor.Addr, "kept")
	if err != nil {
		t.Fatal(err)
	}
	var mine []int32 // partitions of "kept" on the survivor
	for _, p := range md.Topics["kept"].Partitions.Sorted() {
		if p.Leader == survivor.ID {
			mine = append(mine, p.Partition)
		}
	}
	if len(mine) != 2 {
		t.Fatalf("the survivor leads partitions %v of kept, want 2 of 6", mine)
	}
	const perPartition = 50
	prod := newClient(t, survivor.Addr, kgo.DefaultProduceTopic("kept"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, p := range mine {
		for range perPartition {
			prod.Produce(ctx, &kgo.Record{Partition: p, Value: []byte("before")}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	nodes[1].Kill()
	nodes[2].Kill()
	// The survivor reports no quorum in skiff cluster status (exit status 1), still
	// printing the members it knows.
	var statusOut string
	poll(t, 30*time.Second, "skiff cluster status reports no quorum", func() bool {
		out, stderr, err := testnode.Run(t, 30*time.Second, "cluster", "status", "--http", survivor.HTTPAddr)
		statusOut = out + stderr
		return err != nil
	})
	mustHave(t, statusOut, "etcd quorum: NO", "etcd members: 3", "has no quorum at node "+strconv.Itoa(int(survivor.ID)))
	t0 := time.Now()
	survivor.Stop()
	t.Logf("survivor stopped without quorum in %v", time.Since(t0))

	survivor.Args = append(survivor.Args, "--force-new-cluster")
	t0 = time.Now()
	survivor.Restart()
	t.Logf("survivor serving %v after its restart with --force-new-cluster", time.Since(t0))
	if !strings.Contains(survivor.Logs(), "force-new-cluster: this node restarts as the only member of its cluster") {
		t.Error("no warning about force-new-cluster in the log")
	}
	st := clusterStatus(t, survivor.HTTPAddr)
	if !st.Quorum || len(st.Members) != 1 || st.Members[0].NodeID != survivor.ID {
		t.Fatalf("after force-new-cluster: quorum %v, members %+v", st.Quorum, st.Members)
	}
	// A lost node that comes back after all is refused by the survivor and stops.
	out, took, err := nodes[1].ServeExpectExit(time.Minute, clusterArgs...)
	if err == nil {
		t.Fatal("a node dropped by force-new-cluster started")
	}
	mustHave(t, out, "this node was removed from the cluster")
	t.Logf("a dropped node that came back stopped after %v: %s", took, out[strings.LastIndex(out[:len(out)-1], "\n")+1:])

	poll(t, 30*time.Second, "the lost brokers' sessions expire", func() bool {
		md, err := metadata(t, survivor.Addr)
		return err == nil && len(md.Brokers) == 1
	})

	// Its partitions kept their records.
	offsets := map[int32]kgo.Offset{}
	for _, p := range mine {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons := newClient(t, survivor.Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kept": offsets}))
	got := map[int32]int{}
	for total := 0; total < perPartition*len(mine); {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v of the survivor's records", got)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition]++
			total++
		})
	}
	for _, p := range mine {
		if got[p] != perPartition {
			t.Fatalf("read %v records per partition, want %d in each of %v", got, perPartition, mine)
		}
	}

	// A new, empty node joins the one-member cluster; topics use both nodes.
	t0 = time.Now()
	joined := testnode.Start(t, append([]string{"--join", survivor.EtcdClient}, clusterArgs...)...)
	t.Logf("new node ready %v after serve --join", time.Since(t0))
	if st := clusterStatus(t, joined.HTTPAddr); !st.Quorum || len(st.Members) != 2 {
		t.Fatalf("after the join: quorum %v, %d members", st.Quorum, len(st.Members))
	}
	if _, err := kadm.NewClient(newClient(t, joined.Addr)).CreateTopic(ctx, 4, 1, nil, "after"); err != nil {
		t.Fatal(err)
	}
	if per := roundTrip(t, joined.Addr, "after", 200); len(per) != 4 {
		t.Fatalf("records in partitions %v of after, want all 4", per)
	}
	md, err = metadata(t, joined.Addr, "after")
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for _, p := range md.Topics["after"].Partitions {
		leaders[p.Leader]++
	}
	if leaders[survivor.ID] != 2 || leaders[joined.ID] != 2 {
		t.Fatalf("leaders of after %v, want 2 on each node", leaders)
	}

	// Without the setting, the survivor restarts into the two-member cluster.
	survivor.Args = slices.DeleteFunc(survivor.Args, func(a string) bool { return a == "--force-new-cluster" })
	survivor.Stop()
	survivor.Restart()
	if st := clusterStatus(t, survivor.HTTPAddr); !st.Quorum || len(st.Members) != 2 {
		t.Fatalf("after a restart without force-new-cluster: quorum %v, %d members", st.Quorum, len(st.Members))
	}

	// Back to one node (a two-member cluster cannot stop both nodes with quorum): the
	// new node's topic goes, then the node.
	if _, err := kadm.NewClient(newClient(t, survivor.Addr)).DeleteTopics(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := testnode.Run(t, time.Minute, "cluster", "remove-node", strconv.Itoa(int(joined.ID)), "--http", survivor.HTTPAddr); err != nil {
		t.Fatalf("remove-node: %v\n%s%s", err, out, stderr)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	joined.Wait(wctx)
	if st := clusterStatus(t, survivor.HTTPAddr); !st.Quorum || len(st.Members) != 1 {
		t.Fatalf("after removing the new node: quorum %v, %d members", st.Quorum, len(st.Members))
	}
}
