package kafkaapi

// DescribeTopicPartitions, key 75, version 0 (KIP-966): Metadata's topics in
// pages, with topic ids.
//
// Behaviour: the topics named (every topic when none is named), sorted by name,
// each with its id, whether it is internal and its partitions as Metadata v12
// describes them (leader, leader epoch, replicas, ISR, offline replicas; no
// eligible leader replicas: Skiff has no ELR, so those lists are null). At most
// response_partition_limit partitions (capped at 2000, Kafka's
// max.request.partition.size.limit) are answered; next_cursor then names the first
// partition left out, from which a request with that cursor goes on. A cursor's
// topic must be one named (INVALID_REQUEST otherwise); topics before it are
// skipped. Unknown topics get UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization, as in Kafka: DESCRIBE on each topic; a topic named without it
// is TOPIC_AUTHORIZATION_FAILED, a listing of all leaves it out. Each topic's
// authorized operations are reported (Kafka's "not known" value without an
// authorizer).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

// maxDescribedPartitions is Kafka's max.request.partition.size.limit default.
const maxDescribedPartitions = 2000

func init() {
	register(api[*kmsg.DescribeTopicPartitionsRequest]{
		min: 0, max: 0,
		handle:  (*Server).handleDescribeTopicPartitions,
		entries: func(r *kmsg.DescribeTopicPartitionsRequest) int { return len(r.Topics) },
	})
}

func (s *Server) handleDescribeTopicPartitions(c *conn, _ *RequestHeader, req *kmsg.DescribeTopicPartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	current := s.viewCurrent(c)
	snap := s.cache.Snapshot()
	var names []string
	for _, t := range req.Topics {
		names = append(names, t.Topic)
	}
	all := len(names) == 0
	if all {
		for _, t := range snap.Topics() {
			if c.may(acl.OpDescribe, acl.ResourceTopic, t.Name) {
				names = append(names, t.Name)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	first := int32(0)
	if cur := req.Cursor; cur != nil {
		i, found := slices.BinarySearch(names, cur.Topic)
		if !found && !all {
			n := cur.Topic
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.ErrorCode, rt.Topic = kerr.InvalidRequest.Code, &n
			resp.Topics = append(resp.Topics, rt)
			return resp
		}
		names, first = names[i:], max(cur.Partition, 0)
	}
	limit := int(req.ResponsePartitionLimit)
	if limit <= 0 || limit > maxDescribedPartitions {
		limit = maxDescribedPartitions
	}
	live := make(map[int32]bool)
	for _, b := range snap.Brokers() {
		live[b.ID] = true
	}
	mayDescribe := c.allowedTopics(acl.OpDescribe)
	for i, name := range names {
		n := name
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.AuthorizedOperations = &n, authorizedOperationsOmitted
		t, ok := snap.Topic(name)
		switch {
		case !all && !mayDescribe(name):
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case !ok:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			md, _ := s.describeTopic(snap, t, live, current)
			rt.TopicID, rt.IsInternal = t.ID, cluster.IsInternalTopic(name)
			rt.AuthorizedOperations = c.authorizedOperations(acl.ResourceTopic, name)
			if i > 0 {
				first = 0
			}
			for _, mp := range md.Partitions[min(int(first), len(md.Partitions)):] {
				if limit == 0 {
					resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: mp.Partition}
					break
				}
				limit--
				rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
				rp.ErrorCode, rp.Partition, rp.LeaderID, rp.LeaderEpoch = mp.ErrorCode, mp.Partition, mp.Leader, mp.LeaderEpoch
				rp.Replicas, rp.ISR, rp.OfflineReplicas = mp.Replicas, mp.ISR, mp.OfflineReplicas
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
		if limit == 0 && i+1 < len(names) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: names[i+1], Partition: 0}
			break
		}
	}
	return resp
}
