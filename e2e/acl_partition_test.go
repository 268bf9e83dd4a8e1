package e2e

// An ACL removed while a node is cut off the network.

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"skiff/internal/batchtest"
	"skiff/internal/netlab"
	"skiff/internal/testnode"
)

const aclCutTopic = "acl-cut"

// TestACLRemovedWhileCutOff: three nodes with the ACL authorizer (SASL_PLAINTEXT
// with SCRAM for User:alice, PLAINTEXT for the super user), alice allowed to write
// a topic of 3 partitions with RF 3. The leader of partition 0 is cut off the
// network (internal/netlab), and on the majority's side alice's ACL is deleted.
// While cut off, the node must acknowledge none of alice's records: it lost its
// session, so it leads nothing (issue 21's rule), whatever its stale ACLs say.
// Healed, it must refuse alice (TOPIC_AUTHORIZATION_FAILED) within 30 s.
func TestACLRemovedWhileCutOff(t *testing.T) {
	nodes := startLabCluster(t, func(h *netlab.Host) []string {
		return append([]string{"--listeners", fmt.Sprintf("PLAINTEXT://%s:9092,SASL_PLAINTEXT://%s:9095", h.IP, h.IP),
			"--authorizer", "acl", "--super-users", "User:ANONYMOUS"}, faultArgs...)
	})
	createSCRAMUser(t, nodes[0].Addr, "alice", "alice-secret")
	createTopicWith(t, nodes[0].Addr, aclCutTopic, 3, 3, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	alice := kadm.NewACLs().Allow("User:alice").AllowHosts().Topics(aclCutTopic).
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite, kadm.OpDescribe)
	if rs, err := adm.CreateACLs(ctx, alice); err != nil || rs[0].Err != nil {
		t.Fatalf("create alice's ACL: %v %v", err, rs)
	}
	// alice as seen through each node's SASL listener, from the client's host.
	at := map[int32]*kgo.Client{}
	for _, n := range nodes {
		at[n.ID] = aliceClient(t, n, clientOpts...)
	}
	all := []int32{0, 1, 2}
	for _, n := range nodes {
		poll(t, 30*time.Second, fmt.Sprintf("node %d allowing alice", n.ID), func() bool {
			codes, err := aliceMetadata(ctx, at[n.ID])
			return err == nil && codes.topic == 0
		})
	}
	poll(t, 30*time.Second, "alice's records acknowledged by all replicas", func() bool {
		l := aclLeader(t, nodes, nodes[0])
		if at[l] == nil {
			return false
		}
		codes, err := aliceProduce(ctx, at[l], []int32{0}, -1, "allowed")
		return err == nil && codes[0] == 0
	})
	before := endOffsets(t, ctx, adm, aclCutTopic)

	victimID := aclLeader(t, nodes, nodes[0])
	var victim *testnode.Node
	for _, n := range nodes {
		if n.ID == victimID {
			victim = n
		}
	}
	other := anyRunning(nodes, victim)
	// alice as seen from inside the victim's own network namespace: the only
	// place it can still be reached from while it is cut off.
	inside := aliceClient(t, victim, kgo.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return victim.Host.DialContext(ctx, network, addr)
	}))
	victim.Host.Cut()
	cut := time.Now()
	t.Logf("cut off node %d, the leader of %s-0", victim.ID, aclCutTopic)
	oadm := kadm.NewClient(newClient(t, other.Addr))
	poll(t, time.Minute, "alice's ACL deleted on the majority's side", func() bool {
		rs, err := oadm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics(aclCutTopic).
			ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite, kadm.OpDescribe))
		return err == nil && len(rs) > 0 && rs[0].Err == nil
	})
	poll(t, time.Minute, "the majority leading partition 0 and refusing alice", func() bool {
		l := aclLeader(t, nodes, other)
		md, err := aliceMetadata(ctx, at[other.ID]) // no write: nothing to undo if allowed
		return l >= 0 && l != victim.ID && err == nil && md.topic == kerr.TopicAuthorizationFailed.Code
	})
	if codes, err := aliceProduce(ctx, at[other.ID], all, 1, "refused-by-majority"); err != nil || !refusedAll(codes, all) {
		t.Fatalf("node %d answered alice's produce with %v %v after refusing her Metadata", other.ID, codes, err)
	}
	t.Logf("%v after the cut: the majority leads partition 0 and refuses alice", time.Since(cut).Round(time.Millisecond))

	// While cut off: what the victim answers alice, for a few seconds.
	seen := map[string]int{}
	for i := 0; i < 20 || time.Since(cut) < 10*time.Second; i++ {
		codes, err := aliceProduce(ctx, inside, all, 1, fmt.Sprintf("cut-%d", i))
		if err != nil {
			seen["produce: "+err.Error()]++
			continue
		}
		for _, p := range all {
			if codes[p] == 0 {
				t.Errorf("node %d, cut off, acknowledged alice's record to %s-%d", victim.ID, aclCutTopic, p)
			}
			seen[fmt.Sprintf("produce to %d: %v", p, kerr.ErrorForCode(codes[p]))]++
		}
		md, err := aliceMetadata(ctx, inside)
		if err != nil {
			seen["metadata: "+err.Error()]++
			continue
		}
		seen[fmt.Sprintf("metadata: topic %v, leaders %v", kerr.ErrorForCode(md.topic), md.leaders)]++
		if slices.Contains(md.leaders, victim.ID) {
			t.Errorf("node %d, cut off, names itself leader in its Metadata: %v", victim.ID, md.leaders)
		}
	}
	t.Logf("node %d answered alice while cut off: %v", victim.ID, seen)

	victim.Host.Heal()
	healed := time.Now()
	took := poll(t, 30*time.Second, fmt.Sprintf("node %d refusing alice after the heal", victim.ID), func() bool {
		codes, err := aliceProduce(ctx, at[victim.ID], all, 1, "after-heal")
		if err != nil {
			return false
		}
		for _, p := range all {
			if codes[p] == 0 {
				t.Errorf("node %d acknowledged alice's record to %s-%d %v after the heal, her ACL deleted", victim.ID, aclCutTopic, p, time.Since(healed))
			}
		}
		if !refusedAll(codes, all) {
			return false
		}
		md, err := aliceMetadata(ctx, at[victim.ID])
		return err == nil && md.topic == kerr.TopicAuthorizationFailed.Code
	})
	t.Logf("node %d refused alice %v after the heal", victim.ID, took.Round(time.Millisecond))
	// None of alice's records after the cut is in the log (those acknowledged
	// before it were by every replica: acks=all).
	if after := endOffsets(t, ctx, adm, aclCutTopic); !maps.Equal(after, before) {
		t.Errorf("end offsets %v after the heal, %v before the cut: alice wrote after her ACL was deleted", after, before)
	}
}

// aliceClient is a client of User:alice seeded with n's SASL_PLAINTEXT listener only.
func aliceClient(t *testing.T, n *testnode.Node, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.Listeners["SASL_PLAINTEXT"]),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// aclLeader is the leader of partition 0 of the ACL topic that node n names, or -1.
func aclLeader(t *testing.T, nodes []*testnode.Node, n *testnode.Node) int32 {
	md, err := metadata(t, n.Addr, aclCutTopic)
	if err != nil {
		return -1
	}
	return md.Topics[aclCutTopic].Partitions[0].Leader
}

// aliceProduce sends one record to each of partitions of the ACL topic to cl's
// seed broker only, and returns the error codes by partition.
func aliceProduce(ctx context.Context, cl *kgo.Client, partitions []int32, acks int16, v string) (map[int32]int16, error) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.ProduceRequestTopic{Topic: aclCutTopic}
	for _, p := range partitions {
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{
			Partition: p, Records: batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), v)})
	}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return nil, err
	}
	codes := map[int32]int16{}
	for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
		for _, rp := range rt.Partitions {
			codes[rp.Partition] = rp.ErrorCode
		}
	}
	return codes, nil
}

type aliceMD struct {
	topic   int16   // the topic's error code
	leaders []int32 // by partition
}

// aliceMetadata asks cl's seed broker only for the ACL topic's metadata.
func aliceMetadata(ctx context.Context, cl *kgo.Client) (aliceMD, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(8)
	topic := aclCutTopic
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return aliceMD{}, err
	}
	var md aliceMD
	for _, rt := range resp.(*kmsg.MetadataResponse).Topics {
		md.topic = rt.ErrorCode
		for _, rp := range rt.Partitions {
			md.leaders = append(md.leaders, rp.Leader)
		}
	}
	return md, nil
}

// refusedAll reports whether every one of partitions was refused with
// TOPIC_AUTHORIZATION_FAILED.
func refusedAll(codes map[int32]int16, partitions []int32) bool {
	for _, p := range partitions {
		if c, ok := codes[p]; !ok || c != kerr.TopicAuthorizationFailed.Code {
			return false
		}
	}
	return true
}
