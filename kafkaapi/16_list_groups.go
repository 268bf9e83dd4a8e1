package kafkaapi

// ListGroups, key 16, versions 0..2.
//
// Behaviour: every group this node coordinates with its protocol type ("consumer",
// or "" for a group that only has committed offsets). While a __consumer_offsets
// partition is still loading, the answer carries COORDINATOR_LOAD_IN_PROGRESS with
// the groups of the loaded partitions. Clients ask every broker and merge.
//
// Authorization, as in Kafka: with DESCRIBE on the cluster every group is listed;
// otherwise only those the client may DESCRIBE.
//
// Not implemented: the state and type filters (v4+) are outside the served range.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.ListGroupsRequest]{
		min: 0, max: 2,
		handle: (*Server).handleListGroups,
	})
}

func (s *Server) handleListGroups(c *conn, _ *RequestHeader, req *kmsg.ListGroupsRequest) kmsg.Response {
	resp := s.cfg.Groups.ListGroups(req)
	if c.mayCluster(acl.OpDescribe) {
		return resp
	}
	kept := resp.Groups[:0]
	for _, g := range resp.Groups {
		if c.may(acl.OpDescribe, acl.ResourceGroup, g.Group) {
			kept = append(kept, g)
		}
	}
	resp.Groups = kept
	return resp
}
