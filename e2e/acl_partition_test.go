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

	"skiff/internal/netlab"
	"skiff/internal/testnode"
)

const aclCutTopic = "acl-cut"

// TestACLRemovedWhileCutOff: three nodes with the ACL authorizer (SASL_PLAINTEXT
// with SCRAM for User:alice, PLAINTEXT for the super user), alice allowed to write
// a topic of 3 partitions with RF 3. The leader of partition 0 is cut off the
// network (internal/netlab), and on the majority's side alice's ACL is deleted.
// While cut off, the node must acknowledge none of alice's records and name
// itself leader of nothing: it lost its session, so it leads nothing (issue 21's
// rule), whatever its stale ACLs say. Healed, it must refuse alice
// (TOPIC_AUTHORIZATION_FAILED) within 30 s, and none of her records written after
// the cut may be in the log.
func TestACLRemovedWhileCutOff(t *testing.T) {
	nodes := startLabCluster(t, func(h *netlab.Host) []string {
		return append([]string{"--listeners", fmt.Sprintf("PLAINTEXT://%s:9092,SASL_PLAINTEXT://%s:9095", h.IP, h.IP),
			"--authorizer", "acl", "--super-users", "User:ANONYMOUS"}, faultArgs...)
	})
	start := time.Now()
	createSCRAMUser(t, nodes[0].Addr, "alice", "alice-secret")
	createTopicWith(t, nodes[0].Addr, aclCutTopic, 3, 3, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, nodes[0].Addr))
	if rs, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics(aclCutTopic).
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite, kadm.OpDescribe)); err != nil || rs[0].Err != nil {
		t.Fatalf("create alice's ACL: %v %v", err, rs)
	}
	// Clients that send each request to one node only (SeedBrokers), from the
	// client's host: alice through its SASL listener, the super user through
	// its PLAINTEXT one.
	alice, super := map[int32]*kgo.Client{}, map[int32]*kgo.Client{}
	for _, n := range nodes {
		alice[n.ID] = aliceClient(t, n, clientOpts...)
		super[n.ID] = newClient(t, n.Addr)
	}
	all := []int32{0, 1, 2}
	for _, n := range nodes {
		poll(t, 30*time.Second, fmt.Sprintf("node %d allowing alice", n.ID), func() bool {
			md, err := topicMetadata(ctx, alice[n.ID], aclCutTopic)
			return err == nil && md.topic == 0
		})
	}
	var victim *testnode.Node
	poll(t, 30*time.Second, "a record of alice's acknowledged by all replicas", func() bool {
		md, err := topicMetadata(ctx, super[nodes[0].ID], aclCutTopic)
		if err != nil || len(md.leaders) == 0 || alice[md.leaders[0]] == nil {
			return false
		}
		codes, err := aliceProduce(ctx, alice[md.leaders[0]], []int32{0}, -1, "allowed")
		if err == nil && codes[0] == 0 {
			victim = nodeByID(t, nodes, md.leaders[0])
			return true
		}
		return false
	})
	before := endOffsets(t, ctx, adm, aclCutTopic)
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
	t.Logf("%v: cut off node %d, the leader of %s-0", time.Since(start).Round(time.Millisecond), victim.ID, aclCutTopic)
	poll(t, time.Minute, "alice's ACL deleted on the majority's side", func() bool {
		return deleteACLs(ctx, super[other.ID], "User:alice", aclCutTopic) == nil
	})
	poll(t, time.Minute, "the majority leading partition 0 and refusing alice", func() bool {
		md, err := topicMetadata(ctx, super[other.ID], aclCutTopic)
		if err != nil || len(md.leaders) == 0 || md.leaders[0] < 0 || md.leaders[0] == victim.ID {
			return false
		}
		md, err = topicMetadata(ctx, alice[other.ID], aclCutTopic) // no write: nothing to undo if allowed
		return err == nil && md.topic == kerr.TopicAuthorizationFailed.Code
	})
	if codes, err := aliceProduce(ctx, alice[other.ID], all, 1, "refused-by-majority"); err != nil || !refusedAll(codes, all) {
		t.Fatalf("node %d answered alice's produce with %v %v after refusing her Metadata", other.ID, codes, err)
	}
	t.Logf("%v after the cut: the majority leads partition 0 and refuses alice", time.Since(cut).Round(time.Millisecond))

	// While cut off: what the victim answers alice, for a few seconds. Seen so
	// far: Metadata from its stale ACLs (the topic described, no leaders) and
	// NOT_LEADER_OR_FOLLOWER to every Produce.
	seen := map[string]int{}
	for i := 0; i < 3 || time.Since(cut) < 8*time.Second; i++ {
		codes, err := aliceProduce(ctx, inside, all, 1, fmt.Sprintf("cut-%d", i))
		if err != nil {
			seen["produce: "+err.Error()]++
			continue
		}
		for _, p := range all {
			if codes[p] == 0 {
				t.Errorf("node %d, cut off, acknowledged alice's record to %s-%d", victim.ID, aclCutTopic, p)
			}
			seen[fmt.Sprintf("produce to %d: %s", p, errName(codes[p]))]++
		}
		md, err := topicMetadata(ctx, inside, aclCutTopic)
		if err != nil {
			seen["metadata: "+err.Error()]++
			continue
		}
		seen[fmt.Sprintf("metadata: topic %s, leaders %v", errName(md.topic), md.leaders)]++
		if slices.Contains(md.leaders, victim.ID) {
			t.Errorf("node %d, cut off, names itself leader in its Metadata: %v", victim.ID, md.leaders)
		}
	}
	t.Logf("%v: node %d answered alice while cut off: %v", time.Since(start).Round(time.Millisecond), victim.ID, seen)

	// Healed, the node answers from its stale view until its etcd member has
	// rejoined and its metadata cache has listed again: seconds, most of it the
	// TCP retransmission backoff of the connections the cut left open, which
	// grows with the cut's length (1-23 s after cuts of 10-30 s here; the cut
	// above is kept to about 8 s).
	victim.Host.Heal()
	healed := time.Now()
	seen = map[string]int{}
	took := poll(t, 30*time.Second, fmt.Sprintf("node %d refusing alice after the heal", victim.ID), func() bool {
		codes, err := aliceProduce(ctx, alice[victim.ID], all, 1, "after-heal")
		if err != nil {
			seen[fmt.Sprintf("produce: %v", err)]++
			return false
		}
		for _, p := range all {
			if codes[p] == 0 {
				t.Errorf("node %d acknowledged alice's record to %s-%d %v after the heal, her ACL deleted", victim.ID, aclCutTopic, p, time.Since(healed))
			}
			seen[fmt.Sprintf("produce to %d: %s", p, errName(codes[p]))]++
		}
		md, err := topicMetadata(ctx, alice[victim.ID], aclCutTopic)
		if err != nil {
			seen[fmt.Sprintf("metadata: %v", err)]++
			return false
		}
		seen[fmt.Sprintf("metadata: topic %s, leaders %v", errName(md.topic), md.leaders)]++
		return refusedAll(codes, all) && md.topic == kerr.TopicAuthorizationFailed.Code
	})
	t.Logf("node %d refused alice %v after the heal; it answered meanwhile: %v", victim.ID, took.Round(time.Millisecond), seen)
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

// aliceProduce sends one record to each of partitions of the ACL topic to cl's
// seed broker only, and returns the error codes by partition.
func aliceProduce(ctx context.Context, cl *kgo.Client, partitions []int32, acks int16, v string) (map[int32]int16, error) {
	resp, err := seedRequest(ctx, cl, produceRequest(aclCutTopic, partitions, acks, 5000, v))
	if err != nil {
		return nil, err
	}
	return produceCodes(resp), nil
}

// produceCodes is a Produce answer's error code by partition.
func produceCodes(resp kmsg.Response) map[int32]int16 {
	codes := map[int32]int16{}
	for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
		for _, rp := range rt.Partitions {
			codes[rp.Partition] = rp.ErrorCode
		}
	}
	return codes
}

// seedRequest sends req to cl's (first) seed broker only, and waits 5 s at most.
func seedRequest(ctx context.Context, cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, req)
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

// errName names an error code ("none" for 0).
func errName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		return err.(*kerr.Error).Message
	}
	return "none"
}

// topicMD is what a Metadata answer says of one topic.
type topicMD struct {
	topic   int16   // the topic's error code
	leaders []int32 // by partition
}

// topicMetadata asks cl's seed broker only for topic's metadata.
func topicMetadata(ctx context.Context, cl *kgo.Client, topic string) (topicMD, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(8)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	resp, err := seedRequest(ctx, cl, req)
	if err != nil {
		return topicMD{}, err
	}
	var md topicMD
	for _, rt := range resp.(*kmsg.MetadataResponse).Topics {
		md.topic = rt.ErrorCode
		md.leaders = make([]int32, len(rt.Partitions))
		for _, rp := range rt.Partitions {
			if int(rp.Partition) < len(md.leaders) {
				md.leaders[rp.Partition] = rp.Leader
			}
		}
	}
	return md, nil
}

// deleteACLs deletes every ACL of principal on the literal topic through cl's seed
// broker only.
func deleteACLs(ctx context.Context, cl *kgo.Client, principal, topic string) error {
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, &topic, kmsg.ACLResourcePatternTypeLiteral
	f.Principal, f.Operation, f.PermissionType = &principal, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	req.Filters = []kmsg.DeleteACLsRequestFilter{f}
	resp, err := seedRequest(ctx, cl, req)
	if err != nil {
		return err
	}
	for _, r := range resp.(*kmsg.DeleteACLsResponse).Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}
