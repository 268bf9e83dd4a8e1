package groups

// Group administration: DescribeGroups, ListGroups, DeleteGroups.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/offsets"
)

// authorizedOperationsOmitted is Kafka's "not requested / not known" (INT32_MIN).
const authorizedOperationsOmitted = -2147483648

// DescribeGroups handles a DescribeGroups request. An unknown group is described as
// Dead with no error, as Kafka does. Member metadata and assignments are given only
// for a Stable group (otherwise they belong to no settled generation).
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.State = name, stateDead.String()
		rg.AuthorizedOperations = authorizedOperationsOmitted
		g, code := c.lockGroup(name, false)
		rg.ErrorCode = code
		if g != nil && g.cg != nil {
			// Kafka describes consumer groups with ConsumerGroupDescribe only.
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			g.mu.Unlock()
			g = nil
		}
		if g != nil {
			rg.State, rg.ProtocolType = g.state.String(), g.protocolType
			stable := g.state == stateStable
			if stable {
				rg.Protocol = g.protocol
			}
			ms := make([]*member, 0, len(g.members))
			for _, m := range g.members {
				ms = append(ms, m)
			}
			slices.SortFunc(ms, func(a, b *member) int { return strings.Compare(a.id, b.id) })
			for _, m := range ms {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
				rm.ProtocolMetadata, rm.MemberAssignment = []byte{}, []byte{}
				if stable {
					if md := m.metadataFor(g.protocol); md != nil {
						rm.ProtocolMetadata = md
					}
					if m.assignment != nil {
						rm.MemberAssignment = m.assignment
					}
				}
				rg.Members = append(rg.Members, rm)
			}
			g.mu.Unlock()
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// ListGroups handles a ListGroups request: every group this node coordinates,
// including groups that only have committed offsets (protocol type ""). While a
// partition is still loading, the answer carries COORDINATOR_LOAD_IN_PROGRESS with
// the groups known so far (kafkaapi's ListGroups then answers the error alone).
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	gs, loading := c.groupsOf()
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	for _, g := range gs {
		g.mu.Lock()
		if g.state != stateDead {
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.name, g.protocolType, g.state.String(), "classic"
			if g.cg != nil {
				lg.GroupState, lg.GroupType = g.cg.stateName(), "consumer"
			}
			resp.Groups = append(resp.Groups, lg)
		}
		g.mu.Unlock()
	}
	return resp
}

// DeleteGroups handles a DeleteGroups request: a group without members is deleted
// with all its committed offsets (tombstones in the log); one with members gets
// NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = name
		rg.ErrorCode = c.deleteGroup(ctx, name)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (c *Coordinator) deleteGroup(ctx context.Context, name string) int16 {
	g, code := c.lockGroup(name, false)
	switch {
	case code != 0:
		return code
	case g == nil:
		return kerr.GroupIDNotFound.Code
	}
	if g.state != stateEmpty {
		g.mu.Unlock()
		return kerr.NonEmptyGroup.Code
	}
	recs, err := g.tombstonesLocked(nil)
	var last int64
	if err == nil {
		last, err = g.appendLocked(recs)
	}
	if err != nil {
		g.mu.Unlock()
		c.logger.Warn("group coordinator: delete group failed", "group", name, "err", err)
		return waitCode(ctx, err)
	}
	c.removeLocked(g)
	sh := g.sh
	g.mu.Unlock()
	c.logger.Info("group coordinator: deleted group", "group", name, "offsets", len(recs)-1)
	return waitCode(ctx, sh.waitApplied(ctx, last))
}

// tombstonesLocked returns the records deleting the group: a tombstone for each of
// its committed offsets (all of them when only is nil), then one for its metadata.
func (g *group) tombstonesLocked(only []offsets.GroupOffset) ([]batch.Record, error) {
	var recs []batch.Record
	if only == nil {
		err := g.sh.store.GroupOffsets(g.name, func(o offsets.GroupOffset) error {
			recs = append(recs, commitTombstone(o.Group, o.Topic, o.Partition))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, o := range only {
		recs = append(recs, commitTombstone(o.Group, o.Topic, o.Partition))
	}
	if g.cg != nil {
		return append(recs, g.consumerTombstonesLocked()...), nil
	}
	return append(recs, groupRecord(g.name, nil)), nil
}
