package cluster

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrNoCluster is returned by ClusterID when /skiff/cluster does not exist: the etcd
// cluster holds no Skiff cluster (yet).
var ErrNoCluster = errors.New("cluster: no Skiff cluster in this etcd cluster")

// ClusterID reads the cluster id without creating it (for a node about to join).
func (s *Store) ClusterID(ctx context.Context) (string, error) {
	resp, err := s.client.Get(ctx, keyCluster)
	if err != nil {
		return "", fmt.Errorf("cluster: read %s: %w", keyCluster, err)
	}
	if len(resp.Kvs) == 0 {
		return "", ErrNoCluster
	}
	cv, err := decodeCluster(resp.Kvs[0].Value)
	if err != nil {
		return "", err
	}
	return cv.ClusterID, nil
}

// nodeIDsValue is /skiff/node-ids: the next broker id to hand out.
type nodeIDsValue struct {
	Version int   `json:"version"`
	Next    int32 `json:"next"`
}

// AllocateNodeID returns a broker id never handed out before in this cluster (ids
// start at 1 and are never reused, even after a node is removed). Concurrent
// callers get distinct ids: the counter moves by compare-and-swap.
func (s *Store) AllocateNodeID(ctx context.Context) (int32, error) {
	for {
		resp, err := s.client.Get(ctx, keyNodeIDs)
		if err != nil {
			return 0, fmt.Errorf("cluster: read %s: %w", keyNodeIDs, err)
		}
		id := int32(1)
		cmp := clientv3.Compare(clientv3.CreateRevision(keyNodeIDs), "=", 0)
		if len(resp.Kvs) > 0 {
			var v nodeIDsValue
			if err := decode(keyNodeIDs, resp.Kvs[0].Value, &v, func() int { return v.Version }); err != nil {
				return 0, err
			}
			if v.Next < 1 {
				return 0, fmt.Errorf("%w: %s: next %d", ErrCorrupt, keyNodeIDs, v.Next)
			}
			id = v.Next
			cmp = clientv3.Compare(clientv3.ModRevision(keyNodeIDs), "=", resp.Kvs[0].ModRevision)
		}
		txn, err := s.client.Txn(ctx).If(cmp).
			Then(clientv3.OpPut(keyNodeIDs, encode(nodeIDsValue{Version: valueVersion, Next: id + 1}))).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: allocate node id: %w", err)
		}
		if txn.Succeeded {
			return id, nil
		}
	}
}
