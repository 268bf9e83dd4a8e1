package kafkaapi

// ListGroups, key 16, versions 0..2.
//
// Behaviour: every group this node coordinates with its protocol type ("consumer",
// or "" for a group that only has committed offsets). While a __consumer_offsets
// partition is still loading, the answer carries COORDINATOR_LOAD_IN_PROGRESS with
// the groups of the loaded partitions. Clients ask every broker and merge.
//
// Not implemented: the state and type filters (v4+) are outside the served range.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(api[*kmsg.ListGroupsRequest]{
		min: 0, max: 2,
		handle: (*Server).handleListGroups,
	})
}

func (s *Server) handleListGroups(_ *conn, _ *RequestHeader, req *kmsg.ListGroupsRequest) kmsg.Response {
	return s.cfg.Groups.ListGroups(req)
}
