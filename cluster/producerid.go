package cluster

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	// ProducerIDBlockSize is how many producer ids a Store reserves in etcd
	// at a time. Ids of a block not handed out before the Store goes away
	// are never used: ids are unique, not dense.
	ProducerIDBlockSize = 1000
	// firstProducerID is the first id ever handed out (0 stays unused, so a
	// zero value is never a real producer).
	firstProducerID = 1
)

// AllocateProducerID returns a producer id never returned before by any
// Store of this cluster, across restarts. Ids come from blocks of
// ProducerIDBlockSize reserved in /skiff/producer-ids with a
// compare-and-swap, so only the first call of each block talks to etcd.
func (s *Store) AllocateProducerID(ctx context.Context) (int64, error) {
	s.pid.Lock()
	defer s.pid.Unlock()
	if s.pid.next >= s.pid.end {
		start, err := s.reserveProducerIDsLocked(ctx)
		if err != nil {
			return 0, err
		}
		s.pid.next, s.pid.end = start, start+ProducerIDBlockSize
	}
	id := s.pid.next
	s.pid.next++
	return id, nil
}

// reserveProducerIDsLocked moves /skiff/producer-ids past one block and
// returns the block's first id.
func (s *Store) reserveProducerIDsLocked(ctx context.Context) (int64, error) {
	for {
		resp, err := s.client.Get(ctx, keyProducerIDs)
		if err != nil {
			return 0, fmt.Errorf("cluster: read %s: %w", keyProducerIDs, err)
		}
		start := int64(firstProducerID)
		cmp := clientv3.Compare(clientv3.CreateRevision(keyProducerIDs), "=", 0)
		if len(resp.Kvs) > 0 {
			var v producerIDsValue
			if err := decode(keyProducerIDs, resp.Kvs[0].Value, &v, func() int { return v.Version }); err != nil {
				return 0, err
			}
			if v.Next < firstProducerID {
				return 0, fmt.Errorf("%w: %s: next %d", ErrCorrupt, keyProducerIDs, v.Next)
			}
			start = v.Next
			cmp = clientv3.Compare(clientv3.ModRevision(keyProducerIDs), "=", resp.Kvs[0].ModRevision)
		}
		next := encode(producerIDsValue{Version: valueVersion, Next: start + ProducerIDBlockSize})
		tr, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpPut(keyProducerIDs, next)).Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: reserve producer ids: %w", err)
		}
		if tr.Succeeded {
			s.logger.Debug("reserved producer ids", "first", start, "count", ProducerIDBlockSize)
			return start, nil
		}
	}
}
