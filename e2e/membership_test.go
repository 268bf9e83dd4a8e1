package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
	"skiff/internal/testnode"
)

// TestMembership runs the membership changes on one three-node cluster, in order:
// starts that must be refused, CreatePartitions through kadm, a fourth node that
// joins and gets its share of a new topic, remove-node refused while that node holds
// replicas, and, once the topic is deleted, removed (its process exits) while the
// cluster keeps serving.
func TestMembership(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, clusterArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))

	ok := t.Run("JoinWhereNothingListens", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := l.Addr().String()
		l.Close()
		out, took, err := testnode.New(t).ServeExpectExit(30*time.Second, "--join", dead, "--join-timeout", "3s")
		if err == nil {
			t.Fatalf("serve --join %s succeeded", dead)
		}
		mustHave(t, out, "no running Skiff node answered at "+dead+" within 3s", "--join takes the etcd client address")
		if took > 10*time.Second {
			t.Errorf("gave up after %v with --join-timeout 3s", took)
		}
		t.Logf("--join to nothing failed after %v", took)
	})
	ok = ok && t.Run("JoinWithDataOfAnotherCluster", func(t *testing.T) {
		other := testnode.Start(t)
		other.Stop()
		out, _, err := other.ServeExpectExit(30*time.Second, "--join", nodes[0].EtcdClient)
		if err == nil {
			t.Fatal("a data directory of another cluster joined")
		}
		mustHave(t, out, "belongs to cluster", "names cluster", "use an empty data directory to join that cluster")
		t.Logf("%s", out[strings.LastIndex(out[:len(out)-1], "\n")+1:])
	})
	ok = ok && t.Run("BootstrapAndJoin", func(t *testing.T) {
		out, _, err := testnode.New(t).ServeExpectExit(30*time.Second, "--bootstrap", "--join", nodes[0].EtcdClient)
		if err == nil {
			t.Fatal("--bootstrap with --join started")
		}
		mustHave(t, out, "bootstrap and join exclude each other")
	})

	ok = ok && t.Run("CreatePartitions", func(t *testing.T) {
		waitBrokers(t, 3, nodes...)
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, "grown"); err != nil {
			t.Fatal(err)
		}
		resp, err := adm.CreatePartitions(ctx, 3, "grown")
		if err != nil || resp["grown"].Err != nil {
			t.Fatalf("add 3 partitions: %v %v", err, resp["grown"].Err)
		}
		md, err := adm.Metadata(ctx, "grown")
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		for _, p := range md.Topics["grown"].Partitions {
			leaders[p.Leader]++
		}
		if len(md.Topics["grown"].Partitions) != 6 || len(leaders) != 3 || leaders[nodes[0].ID] != 2 || leaders[nodes[1].ID] != 2 {
			t.Fatalf("after growing to 6 partitions: leaders per broker %v", leaders)
		}
		resp, err = adm.UpdatePartitions(ctx, 6, "grown")
		if err != nil || resp["grown"].Err != kerr.InvalidPartitions {
			t.Fatalf("set to the same count: %v %v, want INVALID_PARTITIONS", err, resp["grown"].Err)
		}
		if got := roundTrip(t, nodes[2].Addr, "grown", 600); len(got) != 6 {
			t.Fatalf("records in partitions %v, want all 6", got)
		}
	})

	var fourth *testnode.Node
	outer := t // the fourth node lives on after its subtest
	ok = ok && t.Run("FourthNodeJoins", func(t *testing.T) {
		t0 := time.Now()
		fourth = testnode.Start(outer, append([]string{"--join", nodes[1].EtcdClient}, clusterArgs...)...)
		t.Logf("fourth node ready %v after serve --join", time.Since(t0))
		waitBrokers(t, 4, append(slices.Clone(nodes), fourth)...)
		if _, err := kadm.NewClient(newClient(t, fourth.Addr)).CreateTopic(ctx, 12, 1, nil, "wide"); err != nil {
			t.Fatal(err)
		}
		md, err := adm.Metadata(ctx, "wide")
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		for _, p := range md.Topics["wide"].Partitions {
			leaders[p.Leader]++
		}
		for _, n := range append(slices.Clone(nodes), fourth) {
			if leaders[n.ID] != 3 {
				t.Fatalf("12 partitions on 4 brokers: leaders %v, want 3 each", leaders)
			}
		}
		st := clusterStatus(t, nodes[2].HTTPAddr)
		if len(st.Members) != 4 || len(st.Brokers) != 4 || !st.Quorum {
			t.Fatalf("status lists %d members, %d brokers, quorum %v; want 4, 4, true", len(st.Members), len(st.Brokers), st.Quorum)
		}
		for _, m := range st.Members {
			if !m.Healthy || m.Learner || m.NodeID < 1 {
				t.Errorf("member %+v", m)
			}
		}
		out, _, err := testnode.Run(t, 30*time.Second, "cluster", "status", "--http", nodes[0].HTTPAddr)
		if err != nil {
			t.Fatalf("cluster status: %v\n%s", err, out)
		}
		mustHave(t, out, "etcd members: 4", "brokers: 4 live", "etcd quorum: yes", "skiff-"+strconv.Itoa(int(fourth.ID)))
		t.Logf("skiff cluster status:\n%s", out)
	})

	ok = ok && t.Run("RemoveNodeRefused", func(t *testing.T) {
		md, err := adm.Metadata(ctx, "wide")
		if err != nil {
			t.Fatal(err)
		}
		var held []string
		for _, p := range md.Topics["wide"].Partitions.Sorted() {
			if slices.Contains(p.Replicas, fourth.ID) {
				held = append(held, fmt.Sprintf("wide/%d", p.Partition))
			}
		}
		id := strconv.Itoa(int(fourth.ID))
		_, stderr, err := testnode.Run(t, 30*time.Second, "cluster", "remove-node", id, "--drain=false", "--http", nodes[0].HTTPAddr)
		if err == nil {
			t.Fatal("removed a node holding replicas")
		}
		mustHave(t, stderr, "still holds replicas of 3 partitions: "+strings.Join(held, ", "), "move or delete these partitions first")
		_, stderr, err = testnode.Run(t, 30*time.Second, "cluster", "remove-node", id, "--http", fourth.HTTPAddr)
		if err == nil {
			t.Fatal("a node removed itself")
		}
		mustHave(t, stderr, "is the node answering this request")
		if !fourth.Running() {
			t.Fatal("the fourth node stopped")
		}
	})

	ok = ok && t.Run("RemoveNode", func(t *testing.T) {
		if _, err := adm.DeleteTopics(ctx, "wide"); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		out, stderr, err := testnode.Run(t, 60*time.Second, "cluster", "remove-node", strconv.Itoa(int(fourth.ID)), "--http", nodes[0].HTTPAddr)
		if err != nil {
			t.Fatalf("remove-node: %v\n%s", err, stderr)
		}
		mustHave(t, out, fmt.Sprintf("removed node %d", fourth.ID))
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		if err := fourth.Wait(wctx); err == nil {
			t.Error("the removed node exited with status 0")
		}
		t.Logf("removed node exited %v after remove-node", time.Since(t0))
		mustHave(t, fourth.Logs(), "this node was removed from the cluster")
		t.Logf("%s%s", out, fourth.Logs()[strings.LastIndex(fourth.Logs()[:len(fourth.Logs())-1], "\n")+1:])

		poll(t, 30*time.Second, "status lists 3 members and brokers", func() bool {
			st := clusterStatus(t, nodes[1].HTTPAddr)
			return st.Quorum && len(st.Members) == 3 && len(st.Brokers) == 3
		})
		if got := roundTrip(t, nodes[1].Addr, "grown", 600); len(got) != 6 {
			t.Fatalf("after the removal: records in partitions %v, want all 6", got)
		}
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, "after-removal"); err != nil {
			t.Fatal(err)
		}
	})
	ok = ok && t.Run("RemoveNodeWithDrain", func(t *testing.T) {
		fifth := testnode.Start(outer, append([]string{"--join", nodes[2].EtcdClient}, clusterArgs...)...)
		waitBrokers(t, 4, append(slices.Clone(nodes), fifth)...)
		if _, err := kadm.NewClient(newClient(t, fifth.Addr)).CreateTopic(ctx, 8, 1, nil, "moved"); err != nil {
			t.Fatal(err)
		}
		before := roundTrip(t, fifth.Addr, "moved", 400)
		t0 := time.Now()
		out, stderr, err := testnode.Run(t, 2*time.Minute, "cluster", "remove-node", strconv.Itoa(int(fifth.ID)), "--drain", "--http", nodes[0].HTTPAddr)
		if err != nil {
			t.Fatalf("remove-node --drain: %v\n%s%s", err, out, stderr)
		}
		mustHave(t, out, fmt.Sprintf("draining node %d: 2 partition replicas left", fifth.ID), fmt.Sprintf("removed node %d", fifth.ID))
		t.Logf("drained and removed in %v:\n%s", time.Since(t0), out)
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		if err := fifth.Wait(wctx); err == nil {
			t.Error("the removed node exited with status 0")
		}
		md, err := adm.Metadata(ctx, "moved")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range md.Topics["moved"].Partitions {
			if slices.Contains(p.Replicas, fifth.ID) || p.Leader == fifth.ID || p.Leader < 0 {
				t.Errorf("partition %d after the drain: leader %d, replicas %v", p.Partition, p.Leader, p.Replicas)
			}
		}
		// Every record written before the drain is still there: a second round trip
		// reads the whole topic from the start.
		after := readCounts(t, nodes[0].Addr, "moved", 400)
		for p, n := range before {
			if after[p] != n {
				t.Errorf("partition %d held %d records before the drain, %d after", p, n, after[p])
			}
		}
	})
	if !ok {
		t.Log("a step failed; the later ones did not run")
	}
}

// readCounts reads topic from the start until it has n records and counts them per
// partition.
func readCounts(t *testing.T, addr, topic string, n int) map[int32]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cons := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	per := map[int32]int{}
	for total := 0; total < n; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v (%d of %d records) of %s", per, total, n, topic)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			per[r.Partition]++
			total++
		})
	}
	return per
}

// waitBrokers waits until each of nodes knows count live brokers. A topic is placed
// by the node that creates it (the controller, for a client's CreateTopics) from
// what its own metadata cache knows, and a node that just joined is known to each
// node a moment after it is ready; so each node is asked itself (its seed broker),
// not whichever node a client's Metadata request goes to.
func waitBrokers(t *testing.T, count int, nodes ...*testnode.Node) {
	t.Helper()
	for _, n := range nodes {
		seed := newClient(t, n.Addr).SeedBrokers()[0]
		poll(t, 30*time.Second, fmt.Sprintf("node %d lists %d brokers", n.ID, count), func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := seed.Request(ctx, kmsg.NewPtrMetadataRequest())
			return err == nil && len(resp.(*kmsg.MetadataResponse).Brokers) == count
		})
	}
}

// clusterStatus asks a node's admin API for the cluster status.
func clusterStatus(t *testing.T, httpAddr string) appliance.ClusterStatus {
	t.Helper()
	out, stderr, err := testnode.Run(t, 30*time.Second, "cluster", "status", "--json", "--http", httpAddr)
	var st appliance.ClusterStatus
	if jerr := json.Unmarshal([]byte(out), &st); jerr != nil {
		t.Fatalf("cluster status --json: %v %v\nstdout: %s\nstderr: %s", err, jerr, out, stderr)
	}
	return st
}

// roundTrip produces n records to topic through addr and consumes the topic from
// the start until it has read them all back (each once), and returns the count per
// partition.
func roundTrip(t *testing.T, addr, topic string, n int) map[int32]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	for i := range n {
		v := fmt.Sprintf("%s-%d", run, i)
		prod.Produce(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce to %s: %v", topic, err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	per := map[int32]int{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s", len(seen), n, topic)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if !strings.HasPrefix(v, run+"-") {
				return // an earlier round trip's record
			}
			if seen[v] {
				t.Fatalf("record %s twice", v)
			}
			seen[v] = true
			per[r.Partition]++
		})
	}
	return per
}

func mustHave(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}
