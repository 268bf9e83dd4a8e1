package kafkaapi

// ConsumerGroupDescribe, key 69, versions 0..1 (KIP-848).
//
// Behaviour (package groups, consumer_describe.go): each KIP-848 consumer group's
// state (Empty, Assigning, Reconciling, Stable), group epoch, assignment epoch and
// assignor, and each member's epoch, subscription, current and target assignment.
// A classic, share or unknown group gets GROUP_ID_NOT_FOUND, as in Kafka (a share
// group: "Group G is not a consumer group.").
//
// Authorization, as in Kafka: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED),
// and DESCRIBE on every topic its members are assigned (else the group gets
// TOPIC_AUTHORIZATION_FAILED); authorized operations when asked.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.ConsumerGroupDescribeRequest]{
		min: 0, max: 1,
		handle:  (*Server).handleConsumerGroupDescribe,
		entries: func(r *kmsg.ConsumerGroupDescribeRequest) int { return len(r.Groups) },
	})
}

func (s *Server) handleConsumerGroupDescribe(c *conn, _ *RequestHeader, req *kmsg.ConsumerGroupDescribeRequest) kmsg.Response {
	var refused []kmsg.ConsumerGroupDescribeResponseGroup
	part := *req
	part.Groups = nil
	for _, g := range req.Groups {
		if c.allowed(acl.OpDescribe, acl.ResourceGroup, g) {
			part.Groups = append(part.Groups, g)
			continue
		}
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		rg.AuthorizedOperations = authorizedOperationsOmitted
		refused = append(refused, rg)
	}
	resp := s.cfg.Groups.ConsumerGroupDescribe(&part)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if g.ErrorCode != 0 {
			continue
		}
		if !c.describesAssignedTopics(g) {
			name := g.Group
			*g = kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = name, kerr.TopicAuthorizationFailed.Code
			g.AuthorizedOperations = authorizedOperationsOmitted
			continue
		}
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = c.authorizedOperations(acl.ResourceGroup, g.Group)
		}
	}
	resp.Groups = append(refused, resp.Groups...)
	return resp
}

// describesAssignedTopics reports whether the client may DESCRIBE every topic the
// group's members are assigned or targeted.
func (c *conn) describesAssignedTopics(g *kmsg.ConsumerGroupDescribeResponseGroup) bool {
	if c.srv.authorizer() == nil {
		return true
	}
	for _, m := range g.Members {
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, t := range a.TopicPartitions {
				if !c.may(acl.OpDescribe, acl.ResourceTopic, t.Topic) {
					return false
				}
			}
		}
	}
	return true
}
