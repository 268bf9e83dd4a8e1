package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// createAssigned creates topic with partitions placed on replicas (RF
// len(replicas), min.insync.replicas 2) and waits until each ISR is complete.
func createAssigned(t *testing.T, addr, topic string, partitions int32, replicas []int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range partitions {
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: p, Replicas: replicas})
	}
	rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr("2")}}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, newClient(t, addr))
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s on %v: %v %+v", topic, replicas, err, resp)
	}
	poll(t, 30*time.Second, "complete ISRs of "+topic, func() bool {
		ps := leadersOf(t, addr, topic)
		for _, p := range ps {
			if len(p.ISR) != len(replicas) || p.Leader < 0 {
				return false
			}
		}
		return len(ps) == int(partitions)
	})
}

// TestReassignWhileProducing moves every replica of a topic from nodes 1 and 2
// to nodes 2 and 3 with kadm's AlterPartitionAssignments while an idempotent
// acks=all producer and a consumer run: ListPartitionReassignments shows the
// moves until they end, every partition ends on 2 and 3 with both in sync, and
// the history check finds every acknowledged record in the log exactly once.
func TestReassignWhileProducing(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, faultArgs...)
	ids := []int32{nodes[0].ID, nodes[1].ID, nodes[2].ID}
	from, to := []int32{ids[0], ids[1]}, []int32{ids[1], ids[2]}
	createAssigned(t, nodes[0].Addr, faultTopic, 4, from)
	w := startWorkloadWith(t, nodes, workloadConfig{franzOpts: nil})
	w.progress(2000, time.Minute)

	adm := kadm.NewClient(newClient(t, nodes[1].Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var req kadm.AlterPartitionAssignmentsReq
	for p := range int32(4) {
		req.Assign(faultTopic, p, to)
	}
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || rs.Error() != nil {
		t.Fatalf("reassign: %v %v", err, rs.Error())
	}
	listed := false
	took := poll(t, time.Minute, "the reassignments end", func() bool {
		ls, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil {
			return false
		}
		ls.Each(func(r kadm.ListPartitionReassignmentsResponse) {
			if r.Topic == faultTopic && slices.Equal(r.AddingReplicas, []int32{ids[2]}) && slices.Equal(r.RemovingReplicas, []int32{ids[0]}) {
				listed = true
			}
		})
		ps := leadersOf(t, nodes[1].Addr, faultTopic)
		for _, p := range ps {
			if !slices.Equal(p.Replicas, to) || len(p.ISR) != 2 || !slices.Contains(to, p.Leader) {
				return false
			}
		}
		return len(ls) == 0 && len(ps) == 4
	})
	t.Logf("4 partitions moved from nodes %v to %v in %v while producing (seen in ListPartitionReassignments: %v)", from, to, took, listed)
	if !listed {
		t.Log("the moves ended before ListPartitionReassignments was asked")
	}
	w.progress(2000, time.Minute)
	w.finish(nodes[1].Addr)
}
