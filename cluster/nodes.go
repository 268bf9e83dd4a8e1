package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// NodeMember links a node (its broker id) to the embedded etcd member it runs:
// /skiff/nodes/<id>. Unlike the broker registration it outlives the node's session,
// so a node that is down for good can still be found and removed from the cluster.
type NodeMember struct {
	NodeID int32
	// MemberName and MemberID name the node's etcd member (MemberID is etcd's id).
	MemberName string
	MemberID   uint64
}

// RecordNode writes n's record unless it is already stored as it is; every node
// does this at every start, so a record lost or written by an older Skiff is
// restored.
func (s *Store) RecordNode(ctx context.Context, n NodeMember) error {
	key := nodeKey(n.NodeID)
	val := encodeNode(n)
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(key), "=", val)).
		Else(clientv3.OpPut(key, val)).
		Commit()
	if err != nil {
		return fmt.Errorf("cluster: record node %d: %w", n.NodeID, err)
	}
	if !resp.Succeeded {
		s.logger.Info("recorded node", "node_id", n.NodeID, "member", n.MemberName, "member_id", fmt.Sprintf("%x", n.MemberID))
	}
	return nil
}

// Nodes returns every node record, sorted by node id. With serializable set it
// reads the local member's copy, which answers without quorum but may be stale.
func (s *Store) Nodes(ctx context.Context, serializable bool) ([]NodeMember, error) {
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	resp, err := s.client.Get(ctx, prefixNodes, opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: read %s: %w", prefixNodes, err)
	}
	var out []NodeMember
	for _, kv := range resp.Kvs {
		n, err := decodeNode(string(kv.Key), kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b NodeMember) int { return int(a.NodeID) - int(b.NodeID) })
	return out, nil
}

// ForgetNode deletes node id's record and revokes the lease of its broker
// registration, if any, so that the cluster sees the broker go at once (with its
// controller candidacy). It is the last step of removing a node whose etcd member
// is already gone.
func (s *Store) ForgetNode(ctx context.Context, id int32) error {
	if _, err := s.client.Delete(ctx, nodeKey(id)); err != nil {
		return fmt.Errorf("cluster: delete the record of node %d: %w", id, err)
	}
	resp, err := s.client.Get(ctx, brokerKey(id))
	if err != nil {
		return fmt.Errorf("cluster: read broker %d: %w", id, err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 {
		return nil
	}
	if _, err := s.client.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("cluster: end the session of broker %d: %w", id, err)
	}
	return nil
}
