package kafkaapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fakeLister struct {
	code   int16
	groups []string
	typ    string
}

func (f fakeLister) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.ErrorCode = f.code
	for _, g := range f.groups {
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.GroupType = g, f.typ
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// While any coordinator partition is loading (here the group coordinator's,
// after a failover), ListGroups answers COORDINATOR_LOAD_IN_PROGRESS alone, as
// Kafka does: neither the share groups already loaded nor the classic groups of
// the loaded partitions are listed.
func TestListGroupsWhileLoading(t *testing.T) {
	req := kmsg.NewPtrListGroupsRequest()
	req.SetVersion(5)
	loading := fakeLister{code: kerr.CoordinatorLoadInProgress.Code, groups: []string{"c1"}, typ: "classic"}
	shares := fakeLister{groups: []string{"s1"}, typ: "share"}
	for _, ls := range [][]GroupLister{{loading, shares}, {shares, loading}} {
		resp := listGroups(req, ls)
		if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code || len(resp.Groups) != 0 {
			t.Errorf("while loading: %s with %d groups (%+v), want COORDINATOR_LOAD_IN_PROGRESS and none",
				kerr.ErrorForCode(resp.ErrorCode), len(resp.Groups), resp.Groups)
		}
	}
	resp := listGroups(req, []GroupLister{fakeLister{groups: []string{"c1"}, typ: "classic"}, shares})
	if resp.ErrorCode != 0 || len(resp.Groups) != 2 {
		t.Errorf("loaded: %s with %+v, want both groups", kerr.ErrorForCode(resp.ErrorCode), resp.Groups)
	}
}
