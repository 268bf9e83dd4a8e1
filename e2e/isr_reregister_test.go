package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"skiff/internal/testnode"
)

// TestNewPartitionsInSyncAfterReregistration: brokers that lost their etcd
// session and registered again keep their first registration's broker epoch
// (KIP-903; it is in their key's value, the key's create revision is new). A
// topic created afterwards, and partitions added to it, must come up in sync
// under that epoch: leader epoch 0 and all three replicas in the ISR, with no
// controller change. Before the fix of Store.brokerEpochs, new partitions were
// stamped with the keys' create revisions, the controller found every member
// "restarted" and shrank each ISR to its leader under leader epoch 1.
//
// One broker loses its session as a paused process does (SIGSTOP past the
// session TTL, SIGCONT), the other two as when a resumed etcd ex-leader revokes
// live leases (the test revokes them). Whether the controller has planned over
// the new partitions is known, not waited for: a preferred election asked for
// afterwards (ElectLeaders) is planned from a snapshot that holds them, and once
// its mark is gone from etcd everything that plan wrote is in etcd.
func TestNewPartitionsInSyncAfterReregistration(t *testing.T) {
	const (
		topic   = "isr-reregistered"
		barrier = "isr-barrier" // a partition whose preferred leader does not lead
	)
	start := time.Now()
	nodes := testnode.StartCluster(t, 3, "--session-timeout", "2s")
	etcds := make([]*clientv3.Client, len(nodes))
	for i, n := range nodes {
		etcds[i] = etcdClient(t, n)
	}
	// The paused broker is one whose etcd member does not lead etcd: pausing the
	// etcd leader would add an election and the leases' renewal by the new leader.
	paused := -1
	for i, n := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := etcds[i].Status(ctx, n.EtcdClient)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader != st.Header.MemberId {
			paused = i
			break
		}
	}
	if paused < 0 {
		t.Fatal("every etcd member says it leads")
	}
	x := nodes[paused]
	others := slices.Delete(slices.Clone(nodes), paused, paused+1)
	etcd := etcds[(paused+1)%len(nodes)] // never paused
	via := others[0]

	first := map[int32]int64{} // each broker's epoch: its first registration's
	for _, n := range nodes {
		first[n.ID] = registration(t, etcd, n.ID).epoch
	}
	createAssigned(t, via.Addr, barrier, 1, []int32{x.ID, others[0].ID, others[1].ID})

	// Two brokers lose their session to a revoked lease, one at a time (each is
	// back within the controller's departure grace, so nothing moves).
	for _, n := range others {
		r, restored := registration(t, etcd, n.ID), sessionsRestored(n)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := etcd.Revoke(ctx, clientv3.LeaseID(r.lease))
		cancel()
		if err != nil {
			t.Fatalf("revoke the lease of broker %d: %v", n.ID, err)
		}
		waitRegisteredAgain(t, etcd, n, r.created, first[n.ID], restored)
	}
	// The third is paused until its key expires and the barrier's leadership
	// has left it, then resumed.
	r, restored := registration(t, etcd, x.ID), sessionsRestored(x)
	if err := x.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, fmt.Sprintf("partition %s/0 led by another broker than paused %d", barrier, x.ID), func() bool {
		ps := leadersOf(t, via.Addr, barrier)
		return len(ps) == 1 && ps[0].Leader >= 0 && ps[0].Leader != x.ID
	})
	if err := x.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitRegisteredAgain(t, etcd, x, r.created, first[x.ID], restored)
	poll(t, 30*time.Second, fmt.Sprintf("broker %d back in the ISR of %s/0", x.ID, barrier), func() bool {
		ps := leadersOf(t, via.Addr, barrier)
		return len(ps) == 1 && len(ps[0].ISR) == 3
	})
	t.Logf("brokers %v (leases revoked) and %d (paused) registered again under their first epochs %v (%v since start)",
		ids(others), x.ID, first, time.Since(start).Round(time.Millisecond))

	// New partitions: CreateTopics, then CreatePartitions.
	createTopicWith(t, via.Addr, topic, 3, 3, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(newClient(t, via.Addr))
	if rs, err := adm.UpdatePartitions(ctx, 6, topic); err != nil || rs[topic].Err != nil {
		t.Fatalf("create partitions of %s: %v %v", topic, err, rs[topic].Err)
	}

	// The barrier: its election is planned from a snapshot holding the new
	// partitions; its mark is deleted once that plan's writes are in etcd.
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{barrier: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res[barrier][0]; !ok || r.Err != nil {
		t.Fatalf("preferred election of %s/0: %+v", barrier, r)
	}
	poll(t, 10*time.Second, "election marks gone", func() bool {
		resp, err := etcd.Get(ctx, "/skiff/elections/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 0
	})

	// Every new partition as etcd has it now: as created.
	resp, err := etcd.Get(ctx, "/skiff/partitions/"+topic+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 6 {
		t.Fatalf("%d partitions of %s in etcd, want 6", len(resp.Kvs), topic)
	}
	leaders := map[int32]int32{}
	for _, kv := range resp.Kvs {
		var st struct {
			Leader         int32   `json:"leader"`
			LeaderEpoch    int32   `json:"leader_epoch"`
			ISR            []int32 `json:"isr"`
			ISREpochs      []int64 `json:"isr_broker_epochs"`
			PartitionEpoch int32   `json:"partition_epoch"`
		}
		if err := json.Unmarshal(kv.Value, &st); err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(string(kv.Key[strings.LastIndexByte(string(kv.Key), '/')+1:]))
		leaders[int32(p)] = st.Leader
		var want []int64
		for _, b := range st.ISR {
			want = append(want, first[b])
		}
		if st.LeaderEpoch != 0 || st.PartitionEpoch != 0 || len(st.ISR) != 3 || !slices.Equal(st.ISREpochs, want) {
			t.Errorf("%s: leader %d, leader epoch %d, ISR %v stamped with broker epochs %v, partition epoch %d; want leader epoch 0, partition epoch 0 and all 3 replicas in sync under their brokers' epochs %v",
				kv.Key, st.Leader, st.LeaderEpoch, st.ISR, st.ISREpochs, st.PartitionEpoch, first)
		}
	}
	for _, n := range nodes {
		for _, line := range strings.Split(n.Logs(), "\n") {
			if strings.Contains(line, `"partition leadership changed"`) && strings.Contains(line, `"topic":"`+topic+`"`) {
				t.Errorf("controller on broker %d changed a new partition: %s", n.ID, line)
			}
		}
	}

	// Every broker's Metadata agrees, and an acks=all produce to every
	// partition is acknowledged at once.
	for _, n := range nodes {
		var ps kadm.PartitionDetails
		poll(t, 10*time.Second, fmt.Sprintf("broker %d lists the 6 partitions of %s", n.ID, topic), func() bool {
			ps = leadersOf(t, n.Addr, topic)
			return len(ps) == 6
		})
		for _, p := range ps.Sorted() {
			if p.LeaderEpoch != 0 || len(p.ISR) != 3 {
				t.Errorf("broker %d: %s/%d led by %d at leader epoch %d, ISR %v; want leader epoch 0 and a full ISR", n.ID, topic, p.Partition, p.Leader, p.LeaderEpoch, p.ISR)
			}
		}
	}
	if t.Failed() {
		return
	}
	for p := range int32(6) {
		var leader *testnode.Node
		for _, n := range nodes {
			if n.ID == leaders[p] {
				leader = n
			}
		}
		resp, err := rawRequest(t, leader.Addr, produceRequest(topic, []int32{p}, -1, 5000, "v"+strconv.Itoa(int(p))), 10*time.Second)
		if err != nil {
			t.Fatalf("produce to %s/%d: %v", topic, p, err)
		}
		if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Errorf("acks=all produce to %s/%d at broker %d: %v", topic, p, leader.ID, kerr.ErrorForCode(code))
		}
	}
	t.Logf("checked %v after start", time.Since(start).Round(time.Millisecond))
}

// etcdClient is a client of n's etcd member, closed when the test ends.
func etcdClient(t *testing.T, n *testnode.Node) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{n.EtcdClient}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// brokerRegistration is a broker key as etcd has it.
type brokerRegistration struct {
	created, lease int64
	epoch          int64 // the value's, else the create revision
}

// registration reads broker id's key, which must exist.
func registration(t *testing.T, c *clientv3.Client, id int32) brokerRegistration {
	t.Helper()
	r, ok, err := readRegistration(c, id)
	if err != nil || !ok {
		t.Fatalf("broker %d's key: found %v, %v", id, ok, err)
	}
	return r
}

func readRegistration(c *clientv3.Client, id int32) (brokerRegistration, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/skiff/brokers/"+strconv.Itoa(int(id)))
	if err != nil || len(resp.Kvs) == 0 {
		return brokerRegistration{}, false, err
	}
	kv := resp.Kvs[0]
	var v struct {
		Epoch int64 `json:"epoch"`
	}
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return brokerRegistration{}, false, err
	}
	r := brokerRegistration{created: kv.CreateRevision, lease: kv.Lease, epoch: v.Epoch}
	if r.epoch == 0 {
		r.epoch = kv.CreateRevision
	}
	return r, true, nil
}

// sessionsRestored counts the times n logged that it registered again and
// resumed leading.
func sessionsRestored(n *testnode.Node) int {
	return strings.Count(n.Logs(), `"msg":"broker session restored"`)
}

// waitRegisteredAgain waits until n's broker key, created at revision was, is
// created again (a new registration) under broker epoch epoch, and n has logged
// more restored sessions than restored.
func waitRegisteredAgain(t *testing.T, c *clientv3.Client, n *testnode.Node, was, epoch int64, restored int) {
	t.Helper()
	poll(t, 30*time.Second, fmt.Sprintf("broker %d registered again under epoch %d", n.ID, epoch), func() bool {
		r, ok, err := readRegistration(c, n.ID)
		if err != nil || !ok || r.created == was {
			return false
		}
		if r.epoch != epoch {
			t.Fatalf("broker %d registered again under epoch %d, want its first %d", n.ID, r.epoch, epoch)
		}
		return sessionsRestored(n) > restored
	})
}

func ids(nodes []*testnode.Node) []int32 {
	var out []int32
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	return out
}
