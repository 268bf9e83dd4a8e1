package kafkaapi

// DeleteGroups, key 42, versions 0..1 (v2+ are flexible).
//
// Behaviour: a group without members is deleted with every committed offset
// (tombstones in __consumer_offsets, applied before the answer); a group with
// members gets NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND, one this node
// does not coordinate NOT_COORDINATOR.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(api[*kmsg.DeleteGroupsRequest]{
		min: 0, max: 1,
		handle:  (*Server).handleDeleteGroups,
		entries: func(r *kmsg.DeleteGroupsRequest) int { return len(r.Groups) },
	})
}

func (s *Server) handleDeleteGroups(c *conn, _ *RequestHeader, req *kmsg.DeleteGroupsRequest) kmsg.Response {
	return s.cfg.Groups.DeleteGroups(c.ctx, req)
}
