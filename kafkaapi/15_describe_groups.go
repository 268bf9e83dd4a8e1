package kafkaapi

// DescribeGroups, key 15, versions 0..4.
//
// Behaviour: each group's state (Empty, PreparingRebalance, CompletingRebalance,
// Stable; Dead for a group this coordinator does not know, with no error, as Kafka
// answers), protocol type, and members (client id, client host, group.instance.id
// v4+); the chosen protocol and each member's metadata and assignment only while the
// group is Stable. NOT_COORDINATOR per group this node does not coordinate.
//
// Authorization, as in Kafka: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED for
// it). Asked for (v3+), a described group's authorized operations are reported; without
// an authorizer they are Kafka's "not known" value.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.DescribeGroupsRequest]{
		min: 0, max: 4,
		handle:  (*Server).handleDescribeGroups,
		entries: func(r *kmsg.DescribeGroupsRequest) int { return len(r.Groups) },
	})
}

func (s *Server) handleDescribeGroups(c *conn, _ *RequestHeader, req *kmsg.DescribeGroupsRequest) kmsg.Response {
	if s.authorizer() == nil {
		return s.cfg.Groups.DescribeGroups(req)
	}
	var refused []kmsg.DescribeGroupsResponseGroup
	part := *req
	part.Groups = nil
	for _, g := range req.Groups {
		if c.allowed(acl.OpDescribe, acl.ResourceGroup, g) {
			part.Groups = append(part.Groups, g)
			continue
		}
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		rg.AuthorizedOperations = authorizedOperationsOmitted
		refused = append(refused, rg)
	}
	resp := s.cfg.Groups.DescribeGroups(&part)
	if req.IncludeAuthorizedOperations {
		for i := range resp.Groups {
			if g := &resp.Groups[i]; g.ErrorCode == 0 {
				g.AuthorizedOperations = c.authorizedOperations(acl.ResourceGroup, g.Group)
			}
		}
	}
	resp.Groups = append(refused, resp.Groups...)
	return resp
}
