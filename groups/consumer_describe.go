package groups

// ConsumerGroupDescribe: the state of KIP-848 consumer groups, with each member's
// current and target assignment.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Member types of ConsumerGroupDescribe v1 (KIP-1099).
const (
	memberTypeClassic  = 0
	memberTypeConsumer = 1
)

// ConsumerGroupDescribe handles a ConsumerGroupDescribe request. An unknown group,
// or a classic one, gets GROUP_ID_NOT_FOUND, as in Kafka.
func (c *Coordinator) ConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, name := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = name
		rg.AuthorizedOperations = authorizedOperationsOmitted
		g, code := c.lockGroup(name, false)
		switch {
		case code != 0:
			rg.ErrorCode = code
		case g == nil && c.isShareGroup(name):
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			rg.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a consumer group.")
		case g == nil:
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			rg.ErrorMessage = kmsg.StringPtr("group " + name + " not found")
		case g.cg == nil:
			g.mu.Unlock()
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			rg.ErrorMessage = kmsg.StringPtr("group " + name + " is not a consumer group")
		default:
			c.describeConsumerLocked(g, &rg)
			g.mu.Unlock()
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (c *Coordinator) describeConsumerLocked(g *group, rg *kmsg.ConsumerGroupDescribeResponseGroup) {
	cg := g.cg
	rg.State, rg.Epoch, rg.AssignmentEpoch = cg.stateName(), cg.epoch, cg.targetEpoch
	rg.AssignorName = cg.assignor
	if rg.AssignorName == "" {
		rg.AssignorName = g.chooseAssignorLocked()
	}
	names := make(map[[16]byte]string)
	for n, t := range c.topicIndex() {
		names[t.ID] = n
	}
	ms := make([]*cmember, 0, len(cg.members))
	for _, m := range cg.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *cmember) int { return strings.Compare(a.id, b.id) })
	for _, m := range ms {
		rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		rm.MemberID, rm.InstanceID, rm.RackID, rm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
		rm.ClientID, rm.ClientHost = m.clientID, m.clientHost
		rm.SubscribedTopics = append([]string{}, m.topics...)
		rm.SubscribedTopicRegex = m.regex
		rm.Assignment = describeAssignment(m.assigned, names)
		rm.TargetAssignment = describeAssignment(cg.target[m.id], names)
		rm.MemberType = memberTypeConsumer
		if m.classic != nil {
			rm.MemberType = memberTypeClassic
		}
		rg.Members = append(rg.Members, rm)
	}
}

func describeAssignment(parts partSet, names map[[16]byte]string) kmsg.Assignment {
	a := kmsg.NewAssignment()
	byTopic := parts.byTopic()
	for _, id := range sortedIDs(byTopic) {
		t := kmsg.NewAssignmentTopicPartition()
		t.TopicID, t.Topic, t.Partitions = id, names[id], byTopic[id]
		a.TopicPartitions = append(a.TopicPartitions, t)
	}
	return a
}
