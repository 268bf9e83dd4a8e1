package appliance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"

	"skiff/cluster"
	"skiff/embedetcd"
)

// removeFailure says why removeNode did not remove a node (the admin API answers
// each with its own HTTP status).
type removeFailure int

const (
	// removeRefused: the cluster's rules forbid it now (replicas left, last voter,
	// quorum at risk, or the node answering).
	removeRefused removeFailure = iota
	// removeNoSuchNode: the id names no node of this cluster.
	removeNoSuchNode
	// removeUnavailable: no quorum, the metadata cannot be read, or this node is
	// starting.
	removeUnavailable
	// removeFailed: a write failed after the checks passed.
	removeFailed
)

// removeError is a removal that was refused or failed.
type removeError struct {
	kind removeFailure
	msg  string
	// partitions are the partitions that keep a node from being removed.
	partitions []string
}

func (e *removeError) Error() string { return e.msg }

func refuse(kind removeFailure, format string, args ...any) *removeError {
	return &removeError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func noSuchNode(id int32) *removeError {
	return refuse(removeNoSuchNode, "there is no node %d in this cluster (skiff cluster status lists the nodes)", id)
}

// started reports whether Start has finished (removal and status need the cache).
func (n *Node) started() bool {
	select {
	case <-n.ready:
		return true
	default:
		return false
	}
}

// removeNode removes node id from the cluster: refused while it holds replicas (with
// drain, the node is marked for draining instead and the answer says how many replicas
// are left to move), when it is the node answering, or when etcd would lose its quorum
// (embedetcd.CheckRemove); otherwise its etcd member is removed (the node's process
// then stops), its record and draining mark deleted and its broker session ended.
//
// A topic created between the replica check and the removal could still place
// replicas on the node; such partitions show up as offline in the status and can be
// deleted.
func (n *Node) removeNode(ctx context.Context, id int32, drain bool) (RemoveResult, *removeError) {
	if !n.started() {
		return RemoveResult{}, refuse(removeUnavailable, "the node is starting; try again when it is ready")
	}
	if id == n.id {
		return RemoveResult{}, refuse(removeRefused, "node %d is the node answering this request; send remove-node to another node (--http HOST:PORT of another node's HTTP port)", id)
	}
	if err := n.member.Healthy(ctx); err != nil {
		return RemoveResult{}, refuse(removeUnavailable, "the cluster metadata (etcd) has no quorum, so no node can be removed: a majority of the nodes must be up (%v)", err)
	}
	// Check the partitions against a cache that has seen every write up to now.
	rev, err := n.store.Revision(ctx)
	if err == nil {
		err = n.cache.WaitRevision(ctx, rev)
	}
	if err != nil {
		return RemoveResult{}, refuse(removeUnavailable, "read the cluster metadata: %v", err)
	}
	snap := n.cache.Snapshot()
	if held := snap.ReplicasOn(id); len(held) > 0 {
		if drain {
			return n.drainNode(ctx, snap, id, held)
		}
		e := refuse(removeRefused, "node %d still holds replicas of %d partitions: %s; move or delete these partitions first "+
			"(skiff cluster remove-node %d --drain moves them to other nodes, one partition at a time, and then removes the node)",
			id, len(held), listSome(held), id)
		e.partitions = held
		return RemoveResult{}, e
	}

	nodes, err := n.store.Nodes(ctx, false)
	if err != nil {
		return RemoveResult{}, refuse(removeUnavailable, "read the node records: %v", err)
	}
	list, err := n.member.Client().MemberList(ctx)
	if err != nil {
		return RemoveResult{}, refuse(removeUnavailable, "list etcd members: %v", err)
	}
	target, known := memberOf(nodes, list.Members, id)
	if !known {
		if _, live := n.cache.Broker(id); !live {
			return RemoveResult{}, noSuchNode(id)
		}
	}
	if target == nil {
		if err := n.store.ForgetNode(ctx, id); err != nil {
			return RemoveResult{}, refuse(removeFailed, "%v", err)
		}
		if err := n.store.Undrain(ctx, id); err != nil {
			return RemoveResult{}, refuse(removeFailed, "%v", err)
		}
		return RemoveResult{NodeID: id, Message: fmt.Sprintf("node %d had no etcd member left; its record and broker registration were removed", id)}, nil
	}

	if err := embedetcd.CheckRemove(ctx, n.member.Client(), list.Members, target); err != nil {
		return RemoveResult{}, refuse(removeRefused, "%v", err)
	}
	if err := embedetcd.RemoveMember(ctx, n.member.Client(), target.ID); err != nil && !errors.Is(err, embedetcd.ErrMemberNotFound) {
		return RemoveResult{}, refuse(removeUnavailable, "remove the etcd member %s of node %d: %v", target.Name, id, err)
	}
	// Removing the etcd leader makes the others elect a new one first: retry.
	for attempt := 1; ; attempt++ {
		err := n.store.ForgetNode(ctx, id)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return RemoveResult{}, refuse(removeFailed, "node %d's etcd member was removed, but: %v; run remove-node again to finish", id, err)
		}
		n.logger.Info("deleting the record of a removed node failed; retrying", "removed_node_id", id, "attempt", attempt, "err", err)
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if err := n.store.Undrain(ctx, id); err != nil {
		n.logger.Warn("clearing the draining mark of a removed node", "removed_node_id", id, "err", err)
	}
	n.logger.Info("removed node from the cluster", "removed_node_id", id, "member", target.Name, "member_id", fmt.Sprintf("%x", target.ID))
	return RemoveResult{
		NodeID: id, MemberName: target.Name, MemberID: strconv.FormatUint(target.ID, 16),
		Message: fmt.Sprintf("removed node %d (etcd member %s) from the cluster; its process stops on its own, and its data directory can be deleted", id, target.Name),
	}, nil
}

// memberOf finds node id's etcd member among members through the node records, or,
// for a node that started before node records existed, by its default name. known
// says whether either names node id; target is nil when its member is gone.
func memberOf(nodes []cluster.NodeMember, members []*etcdserverpb.Member, id int32) (target *etcdserverpb.Member, known bool) {
	for _, nm := range nodes {
		if nm.NodeID != id {
			continue
		}
		known = true
		for _, m := range members {
			if m.ID == nm.MemberID {
				target = m
			}
		}
	}
	if !known {
		for _, m := range members {
			if m.Name == embedetcd.MemberName(id) {
				target, known = m, true
			}
		}
	}
	return target, known
}

// drainNode marks node id for draining (idempotent) and says how far it got: held are
// the partitions with a replica on it. Partitions whose records only node id has (it
// is down and no other replica is in sync) cannot move until it returns; the answer
// names them.
func (n *Node) drainNode(ctx context.Context, snap *cluster.Snapshot, id int32, held []string) (RemoveResult, *removeError) {
	if _, live := snap.Broker(id); !live && !snap.Draining(id) {
		// Not live and not draining: a node of this cluster only if it has a record.
		nodes, err := n.store.Nodes(ctx, false)
		if err != nil {
			return RemoveResult{}, refuse(removeUnavailable, "read the node records: %v", err)
		}
		if !slices.ContainsFunc(nodes, func(nm cluster.NodeMember) bool { return nm.NodeID == id }) {
			return RemoveResult{}, noSuchNode(id)
		}
	}
	if err := n.store.Drain(ctx, id); err != nil {
		return RemoveResult{}, refuse(removeUnavailable, "%v", err)
	}
	msg := fmt.Sprintf("draining node %d: %s left to move to other nodes", id, countOf(len(held), "partition replica"))
	if stuck := snap.Stranded(id); len(stuck) > 0 {
		msg += fmt.Sprintf("; node %d is down and is the only in-sync replica of %s: these cannot move until it returns (or delete them)", id, listSome(stuck))
	}
	return RemoveResult{NodeID: id, Draining: true, ReplicasLeft: len(held), Message: msg}, nil
}

// listSome joins up to 20 names, saying how many more there are.
func listSome(names []string) string {
	if len(names) <= 20 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:20], ", ") + fmt.Sprintf(" and %d more", len(names)-20)
}

// countOf is "1 partition", "2 partitions".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
