package cluster

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// PartitionChange is one change for AlterPartitions: topic/partition from
// partition epoch Expected to Next.
type PartitionChange struct {
	Topic     string
	Partition int32
	Expected  int32
	Next      PartitionState
}

// AlterOutcome is the outcome of one PartitionChange: the stored state
// (as AlterPartition returns it) or the error AlterPartition would return.
type AlterOutcome struct {
	State PartitionState
	Err   error
}

// MaxBatchedChanges bounds the changes AlterPartitions writes in one etcd
// transaction. etcd limits each of a transaction's compares, successes and
// failures to MaxTxnOps: a batch's read has at most 2 gets per change (its
// partition and, once per topic, its topic), its write at most 2 compares per
// change (likewise) and the fence, and a put per change, so at most 2,049
// operations, well below embedetcd's DefaultMaxTxnOps (16,384); and a request
// of at most about 1 MB even with 249-character topic names (embedetcd's
// DefaultMaxRequestBytes is 8 MiB). Each transaction is a WAL fsync and a metadata snapshot
// every node applies, so a restart of 10,000 partitions writes 10, not 40.
const MaxBatchedChanges = 1024

// AlterPartitions makes each change as AlterPartition would, and returns the
// outcomes in the order of changes and the revision of the last write. The
// changes that pass AlterPartition's checks are written in one transaction per
// MaxBatchedChanges, so that a controller moving the leadership of thousands of
// partitions (a broker's restart) writes etcd a few times, not once per
// partition. When a transaction's compares fail (some key moved on meanwhile),
// its changes are made one at a time with AlterPartition, which reads again and
// checks the fence. A change of a partition that an earlier change in the
// same transaction writes is made after that transaction with AlterPartition,
// so that it is checked against the earlier change's state, as if the changes
// were made one at a time. err is set only when etcd could not be read or
// written.
func (s *Store) AlterPartitions(ctx context.Context, changes []PartitionChange, fence ...clientv3.Cmp) ([]AlterOutcome, int64, error) {
	out := make([]AlterOutcome, len(changes))
	var rev int64
	for lo := 0; lo < len(changes); lo += MaxBatchedChanges {
		hi := min(lo+MaxBatchedChanges, len(changes))
		r, err := s.alterBatch(ctx, changes[lo:hi], out[lo:hi], fence)
		if err != nil {
			return out, rev, err
		}
		rev = max(rev, r)
	}
	return out, rev, nil
}

func (s *Store) alterBatch(ctx context.Context, changes []PartitionChange, out []AlterOutcome, fence []clientv3.Cmp) (int64, error) {
	// Read every topic and partition key at one revision.
	var reads []clientv3.Op
	topicAt := map[string]int{}         // topic key -> index in reads
	partAt := make([]int, len(changes)) // change -> index in reads
	for i, c := range changes {
		if err := ValidTopicName(c.Topic); err != nil {
			return 0, err
		}
		if _, ok := topicAt[topicKey(c.Topic)]; !ok {
			topicAt[topicKey(c.Topic)] = len(reads)
			reads = append(reads, clientv3.OpGet(topicKey(c.Topic)))
		}
		partAt[i] = len(reads)
		reads = append(reads, clientv3.OpGet(partitionKey(c.Topic, c.Partition)))
	}
	resp, err := s.client.Txn(ctx).Then(reads...).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: read %d partitions: %w", len(changes), err)
	}
	var (
		cmps     []clientv3.Cmp
		puts     []clientv3.Op
		written  []int
		later    []int // changes of a partition an earlier change of the batch writes
		putKeys  = map[string]bool{}
		compared = map[string]bool{}
		decoded  = map[string]decodedTopic{} // by topic key: every read is at one revision
	)
	decode := func(key string, value []byte) (Topic, error) {
		d, ok := decoded[key]
		if !ok {
			d.t, d.err = decodeTopic(key, value)
			decoded[key] = d
		}
		return d.t, d.err
	}
	for i, c := range changes {
		tkey, pkey := topicKey(c.Topic), partitionKey(c.Topic, c.Partition)
		if putKeys[pkey] {
			// It must be checked against what the earlier change writes, and etcd
			// refuses two puts of one key in a transaction: made after it.
			later = append(later, i)
			continue
		}
		tkvs := resp.Responses[topicAt[tkey]].GetResponseRange().Kvs
		pkvs := resp.Responses[partAt[i]].GetResponseRange().Kvs
		next := c.Next
		cur, err := checkAlterWith(c.Topic, c.Partition, c.Expected, &next, tkvs, pkvs, decode)
		if err != nil {
			out[i] = AlterOutcome{State: cur, Err: err}
			continue
		}
		out[i] = AlterOutcome{State: next}
		if !compared[tkey] {
			compared[tkey] = true
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(tkey), "=", tkvs[0].ModRevision))
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(pkey), "=", pkvs[0].ModRevision))
		puts = append(puts, clientv3.OpPut(pkey, encodePartition(next)))
		putKeys[pkey] = true
		written = append(written, i)
	}
	if len(puts) == 0 {
		return 0, nil
	}
	tr, err := s.client.Txn(ctx).If(append(cmps, fence...)...).Then(puts...).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: write %d partitions: %w", len(puts), err)
	}
	var rev int64
	if tr.Succeeded {
		rev, written = tr.Header.Revision, nil
	}
	// Something moved on (written: one at a time, each read again), and the
	// later changes of partitions the batch wrote, in order.
	for _, i := range append(written, later...) {
		c := changes[i]
		st, r, err := s.AlterPartition(ctx, c.Topic, c.Partition, c.Expected, c.Next, fence...)
		out[i] = AlterOutcome{State: st, Err: err}
		if err != nil && !isPartitionVerdict(err) {
			return rev, err // etcd failed, or ErrFenced
		}
		rev = max(rev, r)
	}
	return rev, nil
}

// decodedTopic is a topic key's value decoded once per batch.
type decodedTopic struct {
	t   Topic
	err error
}

// isPartitionVerdict reports whether err is AlterPartition's answer about one
// partition (the change cannot be made as asked), not a failure to reach etcd or
// a lost fence.
func isPartitionVerdict(err error) bool {
	return errors.Is(err, ErrStalePartitionEpoch) || errors.Is(err, ErrUnknownTopic) ||
		errors.Is(err, ErrUnknownPartition) || errors.Is(err, ErrInvalidPartitionState)
}
