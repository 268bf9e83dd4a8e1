package kafkaapi

// ListGroups, key 16, versions 0..5.
//
// Behaviour: every group this node coordinates with its protocol type ("consumer",
// or "" for a group that only has committed offsets), its state (v4+) and its type
// (v5+: "classic" or "consumer" from the group coordinator; other coordinators
// named in Config.MoreGroups add theirs, such as "share"). The states filter (v4+)
// and the types filter (v5+) keep the groups whose state or type is one of them,
// case-insensitively, as in Kafka; an empty filter keeps all. While a
// __consumer_offsets partition led here is still loading (after a failover), the
// answer is COORDINATOR_LOAD_IN_PROGRESS for the whole response and lists no
// group, as Kafka answers, whether loaded partitions hold classic, consumer or
// share groups; clients retry. Clients ask every broker and merge.
//
// Authorization, as in Kafka: with DESCRIBE on the cluster every group is listed;
// otherwise only those the client may DESCRIBE.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

func init() {
	register(api[*kmsg.ListGroupsRequest]{
		min: 0, max: 5,
		handle: (*Server).handleListGroups,
	})
}

// GroupLister is a coordinator whose groups ListGroups lists, besides the group
// coordinator's: it answers with its groups and their GroupType, and an error code
// (COORDINATOR_LOAD_IN_PROGRESS) while it is still loading. Filters are applied
// by ListGroups itself.
type GroupLister interface {
	ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse
}

func (s *Server) handleListGroups(c *conn, _ *RequestHeader, req *kmsg.ListGroupsRequest) kmsg.Response {
	resp := listGroups(req, append([]GroupLister{s.cfg.Groups}, s.cfg.MoreGroups...))
	if resp.ErrorCode != 0 {
		return resp
	}
	mayAll := c.mayCluster(acl.OpDescribe)
	kept := resp.Groups[:0]
	for _, g := range resp.Groups {
		if !anyFold(req.StatesFilter, g.GroupState) || (req.Version >= 5 && !anyFold(req.TypesFilter, g.GroupType)) {
			continue
		}
		if mayAll || c.may(acl.OpDescribe, acl.ResourceGroup, g.Group) {
			kept = append(kept, g)
		}
	}
	resp.Groups = kept
	return resp
}

// listGroups merges the groups of every coordinator. While one of them is still
// loading, the answer is its error alone (Kafka fails the whole request when any
// coordinator partition is loading), so that no partition's groups are missing
// from a list that looks complete, nor some partitions' listed without the rest.
func listGroups(req *kmsg.ListGroupsRequest, ls []GroupLister) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	for _, l := range ls {
		more := l.ListGroups(req)
		if more.ErrorCode != 0 {
			resp.ErrorCode, resp.Groups = more.ErrorCode, nil
			return resp
		}
		resp.Groups = append(resp.Groups, more.Groups...)
	}
	return resp
}

// anyFold reports whether s is one of filter, ignoring case; an empty filter
// holds everything.
func anyFold(filter []string, s string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(f, s) {
			return true
		}
	}
	return false
}
