package kafkaapi

// DeleteGroups, key 42, versions 0..1 (v2+ are flexible).
//
// Behaviour: a group without members is deleted with every committed offset
// (tombstones in __consumer_offsets, applied before the answer); a group with
// members gets NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND, one this node
// does not coordinate NOT_COORDINATOR.
//
// A share group (package sharegroup) is deleted the same way: NON_EMPTY_GROUP
// while it has members, else its share-partition states are deleted
// at their partitions' leaders (kafkaapi/share.go, share_states.go); a state that
// cannot be deleted (LEADER_NOT_AVAILABLE: its leader is down) keeps the group.
//
// A deleted group's configs (the GROUP config resource) are deleted with it, as
// in Kafka (share_configs.go).
//
// Authorization: DELETE on each group (GROUP_AUTHORIZATION_FAILED for it, not
// deleted), as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.DeleteGroupsRequest]{
		min: 0, max: 1,
		handle:  (*Server).handleDeleteGroups,
		entries: func(r *kmsg.DeleteGroupsRequest) int { return len(r.Groups) },
	})
}

func (s *Server) handleDeleteGroups(c *conn, _ *RequestHeader, req *kmsg.DeleteGroupsRequest) kmsg.Response {
	part := *req
	part.Groups = nil
	var refused []kmsg.DeleteGroupsResponseGroup
	for _, g := range req.Groups {
		if !c.allowed(acl.OpDelete, acl.ResourceGroup, g) {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			refused = append(refused, rg)
			continue
		}
		if code, ok := s.deleteShareGroup(c, g); ok {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			refused = append(refused, rg)
			continue
		}
		part.Groups = append(part.Groups, g)
	}
	resp := s.cfg.Groups.DeleteGroups(c.ctx, &part)
	resp.Groups = append(resp.Groups, refused...)
	s.deleteGroupConfigs(c, resp.Groups)
	return resp
}
