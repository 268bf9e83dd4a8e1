package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// TestCreateTopicsBatch: one CreateTopics request of six single-partition
// topics with one replica, sent to one node of three. The topics are written
// together before the answer waits for them all, so each
// placement must count the topics written before it even when the node's
// cached metadata does not show them yet: each broker leads two. When the
// answer comes, the node that gave it serves its own partitions of every
// topic (ListOffsets answers without an error) and lists them all.
func TestCreateTopicsBatch(t *testing.T) {
	nodes := testnode.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	at := nodes[1]
	cl := newClient(t, at.Addr)
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	node := cl.Broker(int(at.ID))

	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 60_000
	var names []string
	for i := range 6 {
		name := fmt.Sprintf("batch-%d", i)
		names = append(names, name)
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
	}
	r, err := node.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range r.(*kmsg.CreateTopicsResponse).Topics {
		if rt.ErrorCode != 0 || rt.NumPartitions != 1 {
			t.Fatalf("create %s: error code %d, %d partitions", rt.Topic, rt.ErrorCode, rt.NumPartitions)
		}
	}

	// Ask the answering node itself, at once: no client cache, no retry.
	mreq := kmsg.NewPtrMetadataRequest()
	for _, name := range names {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		mreq.Topics = append(mreq.Topics, mt)
	}
	mr, err := node.Request(ctx, mreq)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	var own []string
	for _, mt := range mr.(*kmsg.MetadataResponse).Topics {
		if mt.ErrorCode != 0 || len(mt.Partitions) != 1 || mt.Partitions[0].Leader < 0 {
			t.Fatalf("metadata of %v right after the answer: error code %d, partitions %+v", mt.Topic, mt.ErrorCode, mt.Partitions)
		}
		leaders[mt.Partitions[0].Leader]++
		if mt.Partitions[0].Leader == at.ID {
			own = append(own, *mt.Topic)
		}
	}
	for _, n := range nodes {
		if leaders[n.ID] != 2 {
			t.Fatalf("leaders per broker %v, want 2 on each of the three", leaders)
		}
	}
	lreq := kmsg.NewPtrListOffsetsRequest()
	lreq.ReplicaID = -1
	for _, name := range own {
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = name
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = 0, -1
		lt.Partitions = append(lt.Partitions, lp)
		lreq.Topics = append(lreq.Topics, lt)
	}
	lr, err := node.Request(ctx, lreq)
	if err != nil {
		t.Fatal(err)
	}
	for _, lt := range lr.(*kmsg.ListOffsetsResponse).Topics {
		for _, lp := range lt.Partitions {
			if lp.ErrorCode != 0 {
				t.Fatalf("ListOffsets of %s/%d on the node that answered: error code %d", lt.Topic, lp.Partition, lp.ErrorCode)
			}
		}
	}
}
