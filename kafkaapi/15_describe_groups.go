package kafkaapi

// DescribeGroups, key 15, versions 0..4.
//
// Behaviour: each group's state (Empty, PreparingRebalance, CompletingRebalance,
// Stable; Dead for a group this coordinator does not know, with no error, as Kafka
// answers), protocol type, and members (client id, client host, group.instance.id
// v4+); the chosen protocol and each member's metadata and assignment only while the
// group is Stable. NOT_COORDINATOR per group this node does not coordinate.
//
// Not implemented: authorized operations (v3+ asks for them; the answer is Kafka's
// "not requested" value, since there are no ACLs).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(api[*kmsg.DescribeGroupsRequest]{
		min: 0, max: 4,
		handle:  (*Server).handleDescribeGroups,
		entries: func(r *kmsg.DescribeGroupsRequest) int { return len(r.Groups) },
	})
}

func (s *Server) handleDescribeGroups(_ *conn, _ *RequestHeader, req *kmsg.DescribeGroupsRequest) kmsg.Response {
	return s.cfg.Groups.DescribeGroups(req)
}
