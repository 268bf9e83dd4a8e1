package groups

// Offsets committed inside transactions (TxnOffsetCommit, KIP-98 and KIP-447): they
// are appended to the group's __consumer_offsets partition as a transactional batch
// of the producer, held pending in Pebble by the applier, and committed or dropped
// when the transaction coordinator's marker reaches the partition.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/replication"
)

// TxnVerifier asks the transaction coordinator of a TxnOffsetCommit's
// transactional id whether __consumer_offsets partition partition is in the
// producer's ongoing transaction (AddOffsetsToTxn put it there): 0 when it is,
// else the code to answer (INVALID_TXN_STATE: not in it).
//
// For a TxnOffsetCommit v5 (transaction version 2, KIP-890 part 2) it adds the
// partition to the transaction instead (no AddOffsetsToTxn before it).
type TxnVerifier func(ctx context.Context, partition int32) int16

// TxnOffsetCommit handles a TxnOffsetCommit request. A member of the group (v3+:
// member id and generation given) is checked as OffsetCommit checks it, so that a
// zombie of a previous generation cannot commit (KIP-447); a producer outside group
// management commits with generation -1. A consumer group's member commits with its
// member epoch (consumerCommitCodeLocked). A share group's id is
// GROUP_ID_NOT_FOUND for every partition, as Kafka answers (ShareGroup's
// validateOffsetCommit).
//
// When the batch would open a transaction of the producer on the group's
// partition, verify (nil: none) must first confirm that the partition is in the
// transaction (KIP-890 part 1, as Kafka's group coordinator does), so that no
// commit without AddOffsetsToTxn, or after the transaction ended, leaves a
// transaction there that no marker ends; a marker of the producer appended
// between the answer and the append voids it. From v5 (transaction version 2)
// verify adds the partition (addTxnOffsets).
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, verify TxnVerifier) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var parts []commitPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			cp := commitPartition{topic: t.Topic, partition: p.Partition, offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: p.Metadata, timestamp: -1}
			if req.Version < 2 {
				cp.leaderEpoch = -1
			}
			parts = append(parts, cp)
		}
	}
	codes := make([]int16, len(parts))
	defer func() {
		i := 0
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codes[i]
				rt.Partitions = append(rt.Partitions, rp)
				i++
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}()
	if c.isShareGroup(req.Group) { // Kafka: "Group G is not a consumer group."
		fillCodes(codes, kerr.GroupIDNotFound.Code)
		return resp
	}
	tv2 := req.Version >= 5
	var verifiedOn *shard
	var guard uint64
	var code int16
	if tv2 {
		verifiedOn, code = c.addTxnOffsets(ctx, req, verify)
	} else {
		verifiedOn, guard, code = c.verifyTxnOffsets(ctx, req, verify)
	}
	if code != 0 {
		fillCodes(codes, code)
		return resp
	}
	g, code := c.lockGroup(req.Group, true)
	if code != 0 {
		fillCodes(codes, code)
		return resp
	}
	if verifiedOn != nil && g.sh != verifiedOn {
		code = kerr.NotCoordinator.Code // the partition moved while it was verified
	} else if g.cg != nil {
		member, epoch := "", int32(-1) // v0..v2 name no member
		if req.Version >= 3 {
			member, epoch = req.MemberID, req.Generation
		}
		code = g.consumerCommitCodeLocked(member, epoch, parts, req.Version, true)
	} else if req.Version >= 3 && req.Generation >= 0 {
		switch {
		case g.fencedLocked(req.InstanceID, req.MemberID):
			code = kerr.FencedInstanceID.Code
		case g.members[req.MemberID] == nil:
			code = kerr.UnknownMemberID.Code
		case req.Generation != g.generation:
			code = kerr.IllegalGeneration.Code
		}
	}
	if code != 0 {
		g.mu.Unlock()
		fillCodes(codes, code)
		return resp
	}
	now := c.clock.Now()
	recs := c.commitRecords(req.Group, now, parts, codes)
	sh := g.sh
	var last int64
	var err error
	if len(recs) > 0 {
		var res replication.AppendResult
		b := batch.BuildTransactional(now.UnixMilli(), req.ProducerID, req.ProducerEpoch, recs)
		switch {
		case tv2:
			res, err = sh.log.AppendFromCoordinatorTV2(b)
		case verifiedOn != nil:
			res, err = sh.log.AppendFromCoordinatorVerified(b, guard)
		default:
			res, err = sh.log.AppendFromCoordinator(b)
		}
		if err == nil {
			err = sh.checkEpoch(res.LeaderEpoch)
		}
		if err == nil {
			last = res.LastOffset
			g.hasOffsets = true
		} else {
			err = fmt.Errorf("append to __consumer_offsets-%d: %w", sh.id, err)
		}
	}
	g.mu.Unlock()
	if len(recs) == 0 {
		return resp
	}
	if err == nil {
		err = sh.waitApplied(ctx, last)
	}
	code = waitCode(ctx, err)
	if err != nil {
		c.logger.Warn("group coordinator: transactional offset commit failed", "group", req.Group, "err", err)
		if code == kerr.CoordinatorNotAvailable.Code {
			code = errCodeOf(err, code, req.Version)
		}
	}
	settleCodes(codes, code)
	return resp
}

// errCodeOf returns INVALID_PRODUCER_EPOCH when err carries it (a fenced
// producer), the code of a transaction ended while it was verified when err
// carries INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS when a transaction
// version 2 batch found its producer's previous transaction open again
// (retriable), else def.
func errCodeOf(err error, def, version int16) int16 {
	switch {
	case errors.Is(err, kerr.InvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, kerr.ConcurrentTransactions):
		return kerr.ConcurrentTransactions.Code
	case errors.Is(err, kerr.InvalidTxnState):
		return notInTxnCode(kerr.InvalidTxnState.Code, version)
	}
	return def
}

// verifyTxnOffsets asks verify, when req's batch would open a transaction of
// its producer on the group's partition, whether that partition is in the
// transaction. It returns the shard verified (nil: no verification needed) with
// the partition's guard, or the code to answer.
func (c *Coordinator) verifyTxnOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, verify TxnVerifier) (*shard, uint64, int16) {
	if verify == nil {
		return nil, 0, 0
	}
	sh, code := c.shardFor(req.Group)
	if code != 0 {
		return nil, 0, code
	}
	guard, needed := sh.log.TxnVerification(req.ProducerID)
	if !needed {
		return nil, 0, 0 // the producer's transaction is open there: a marker ends it
	}
	if code := verify(ctx, sh.id); code != 0 {
		return nil, 0, notInTxnCode(code, req.Version)
	}
	return sh, guard, 0
}

// addTxnOffsets adds, for a TxnOffsetCommit v5 (transaction version 2), the
// group's partition to the producer's transaction (verify, nil: not asked),
// then waits until the marker of the producer's previous transaction there, if
// still open at an older epoch, is appended (the hold, docs/design/txn-v2.md
// §3): the batch then lands after it, and that marker cannot close the new
// transaction. Asked every time, not only when no transaction of the producer
// is open there: an open one may be the previous transaction, whose marker is
// not written yet; the coordinator answers an add it has at once. It returns
// the shard added on, or the code to answer: never a fatal one for something
// transient (a hold that times out is CONCURRENT_TRANSACTIONS, a partition
// that moves NOT_COORDINATOR).
func (c *Coordinator) addTxnOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, verify TxnVerifier) (*shard, int16) {
	sh, code := c.shardFor(req.Group)
	if code != 0 {
		return nil, code
	}
	if verify != nil {
		if code := verify(ctx, sh.id); code != 0 {
			return nil, notInTxnCode(code, req.Version)
		}
	}
	if err := sh.log.AwaitPreviousMarker(ctx, req.ProducerID, req.ProducerEpoch); err != nil {
		c.logger.Debug("group coordinator: transactional offset commit waited for a marker", "group", req.Group, "err", err)
		switch {
		case errors.Is(err, kerr.ConcurrentTransactions):
			return nil, kerr.ConcurrentTransactions.Code
		case errors.Is(err, kerr.NotLeaderForPartition):
			return nil, kerr.NotCoordinator.Code
		}
		return nil, waitCode(ctx, err)
	}
	return sh, 0
}

// notInTxnCode is the code of a TxnOffsetCommit whose offsets partition is not in
// the transaction, for a client at version: TRANSACTION_ABORTABLE from v4
// (KIP-1050), INVALID_TXN_STATE before, as Kafka's AddPartitionsToTxnManager
// maps them; other codes are kept.
func notInTxnCode(code, version int16) int16 {
	if code == kerr.InvalidTxnState.Code && version >= 4 {
		return kerr.TransactionAbortable.Code
	}
	return code
}

// WaitApplied waits until the record at offset of __consumer_offsets partition id,
// led here, is applied to Pebble (a transaction marker: the offsets it commits are
// then visible to OffsetFetch), or ctx ends.
func (c *Coordinator) WaitApplied(ctx context.Context, id int32, offset int64) error {
	c.mu.Lock()
	sh := c.mu.shards[id]
	c.mu.Unlock()
	if sh == nil {
		return errNotCoordinator
	}
	return sh.waitApplied(ctx, offset)
}
