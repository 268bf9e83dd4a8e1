package kafkaapi

// ShareGroupDescribe, key 77, version 1.
//
// Behaviour: each share group this node coordinates with its state (Empty,
// Stable), epochs, assignor ("simple") and members with their subscriptions and
// assignments; an unknown group GROUP_ID_NOT_FOUND ("Group G not found.", or
// "Group G is not a share group." for a classic or consumer group, as Kafka
// answers), one coordinated elsewhere
// NOT_COORDINATOR. authorized_operations is -2147483648 (not asked) unless asked,
// then the group's allowed operations are not computed (0).
//
// Authorization, as in Kafka: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.ShareGroupDescribeRequest]{
		min: 1, max: 1,
		handle:  (*Server).handleShareGroupDescribe,
		entries: func(r *kmsg.ShareGroupDescribeRequest) int { return len(r.GroupIDs) },
	})
}

func (s *Server) handleShareGroupDescribe(c *conn, _ *RequestHeader, req *kmsg.ShareGroupDescribeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	names := s.topicNames()
	for _, g := range req.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID = g
		switch {
		case !c.allowed(acl.OpDescribe, acl.ResourceGroup, g):
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case s.coordinatesGroup(g) != 0:
			rg.ErrorCode = s.coordinatesGroup(g)
		default:
			var ok bool
			rg, ok = s.cfg.ShareGroups.Describe(g, func(id [16]byte) string { return names[id] })
			if !ok {
				rg.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + g + " not found."
				if s.cfg.Groups.IsGroup(g) {
					msg = "Group " + g + " is not a share group."
				}
				rg.ErrorMessage = &msg
			}
		}
		if !req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = -2147483648
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
