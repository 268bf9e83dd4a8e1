package kafkaapi_test

// The refusal cases of the admin keys of issue 19 (TestACLRefusals).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func adminRefusals() []refusal {
	return []refusal{
		// DescribeCluster refuses nothing: without DESCRIBE on the cluster it
		// reports no authorized operations, which the case reads as a refusal.
		{name: "DescribeCluster's authorized operations need DESCRIBE on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(*refusalRun) kmsg.Request {
				req := kmsg.NewPtrDescribeClusterRequest()
				req.IncludeClusterAuthorizedOperations = true
				return req
			},
			codes: topLevel(func(r *kmsg.DescribeClusterResponse) int16 {
				if r.ErrorCode == 0 && r.ClusterAuthorizedOperations == 0 {
					return kerr.ClusterAuthorizationFailed.Code
				}
				return r.ErrorCode
			}),
			grants: []string{"ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster"}},
		{name: "DescribeLogDirs needs DESCRIBE on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDescribeLogDirsRequest()
				rt := kmsg.NewDescribeLogDirsRequestTopic()
				rt.Topic, rt.Partitions = r.topic, []int32{0}
				req.Topics = append(req.Topics, rt)
				return req
			},
			codes: topLevel(func(r *kmsg.DescribeLogDirsResponse) int16 {
				if r.ErrorCode == 0 && (len(r.Dirs) != 1 || len(r.Dirs[0].Topics) != 1) {
					return -1 // allowed, but the partition is not described
				}
				return r.ErrorCode
			}),
			grants: []string{"ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster"}},
		{name: "ElectLeaders needs ALTER on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			writesNothing: "the topic's one replica leads already: allowed, the election changes nothing (ELECTION_NOT_NEEDED)",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrElectLeadersRequest()
				rt := kmsg.NewElectLeadersRequestTopic()
				rt.Topic, rt.Partitions = r.topic, []int32{0}
				req.Topics = append(req.Topics, rt)
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				r := resp.(*kmsg.ElectLeadersResponse)
				return partitionThenTop(r.Topics[0].Partitions[0].ErrorCode, r.ErrorCode)
			},
			// The node's one replica leads already.
			grants: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}, aliceWant: kerr.ElectionNotNeeded.Code},
		{name: "AlterPartitionReassignments needs ALTER on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			writesNothing: "the node is the only broker and the topic's one replica: a move to the same replicas records nothing (cluster.Store.Reassign), and any other names a broker that is not live",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
				rt.Topic = r.topic
				rt.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{aclNode.node.ID()}}}
				req.Topics = append(req.Topics, rt)
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
				return partitionThenTop(r.Topics[0].Partitions[0].ErrorCode, r.ErrorCode)
			},
			grants: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}},
		{name: "DescribeTopicPartitions needs DESCRIBE on the topic", want: kerr.TopicAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDescribeTopicPartitionsRequest()
				req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: r.topic}}
				return req
			},
			codes:  topLevel(func(r *kmsg.DescribeTopicPartitionsResponse) int16 { return r.Topics[0].ErrorCode }),
			grants: []string{"ALLOW DESCRIBE TOPIC LITERAL TOPIC_NAME"}},
		{name: "ListPartitionReassignments needs DESCRIBE on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			writesNothing: "a read",
			req:           func(*refusalRun) kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() },
			codes:         topLevel(func(r *kmsg.ListPartitionReassignmentsResponse) int16 { return r.ErrorCode }),
			grants:        []string{"ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster"}},
	}
}

// partitionThenTop are the codes of an answer with a partition's code and a
// top-level one that is set only when the whole request is refused.
func partitionThenTop(partition, top int16) []int16 {
	if top != 0 {
		return []int16{partition, top}
	}
	return []int16{partition}
}
