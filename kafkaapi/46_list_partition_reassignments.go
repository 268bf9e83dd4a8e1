package kafkaapi

// ListPartitionReassignments, key 46, version 0 (KIP-455).
//
// Behaviour: the reassignments in progress (AlterPartitionReassignments) of the
// partitions named, or of every partition when topics is null: each partition's
// current replicas, the target replicas not among the original ones (adding) and
// the original replicas not in the target (removing). Partitions named without a
// reassignment in progress are left out, as in Kafka.
//
// Authorization, as in Kafka: DESCRIBE on the cluster; without it
// CLUSTER_AUTHORIZATION_FAILED and nothing listed.

import (
	"cmp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

func init() {
	register(api[*kmsg.ListPartitionReassignmentsRequest]{
		min: 0, max: 0,
		handle: (*Server).handleListPartitionReassignments,
		entries: func(r *kmsg.ListPartitionReassignmentsRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleListPartitionReassignments(c *conn, _ *RequestHeader, req *kmsg.ListPartitionReassignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !c.allowedCluster(acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	snap := s.cache.Snapshot()
	all := snap.Reassignments()
	var listed []cluster.TopicPartition
	if req.Topics == nil {
		for tp := range all {
			listed = append(listed, tp)
		}
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if tp := (cluster.TopicPartition{Topic: t.Topic, Partition: p}); !slices.Contains(listed, tp) {
				listed = append(listed, tp)
			}
		}
	}
	slices.SortFunc(listed, func(a, b cluster.TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, tp := range listed {
		ra, ok := all[tp]
		t, known := snap.Topic(tp.Topic)
		if !ok || !known || int(tp.Partition) >= len(t.Assignment) {
			continue
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition, rp.Replicas = tp.Partition, t.Assignment[tp.Partition]
		rp.AddingReplicas, rp.RemovingReplicas = missingFrom(ra.Original, ra.Target), missingFrom(ra.Target, ra.Original)
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp
}

// missingFrom lists the brokers of b that are not in a (never nil: Kafka's
// answers carry empty lists).
func missingFrom(a, b []int32) []int32 {
	out := []int32{}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}
