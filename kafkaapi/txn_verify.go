package kafkaapi

// KIP-890 part 1: a partition leader verifies with the transaction coordinator that
// a partition is in a producer's transaction before the producer's first batch of
// it is appended there, unless the coordinator told it so already (a notice,
// replication/txn_notice.go), which saves the round trip.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
	"skiff/internal/batch"
	"skiff/replication"
	"skiff/txn"
)

// verifyTimeout bounds a verification with another broker.
const verifyTimeout = 5 * time.Second

// txnVerified is a partition's verification done for a whole Produce request
// (verifyProduce): the guard taken before it and the coordinator's code.
type txnVerified struct {
	pid   int64
	epoch int16
	guard uint64
	code  int16
}

// verifyProduce verifies, in one question to the coordinator of id, every
// partition of req led here whose transactional batch would open a transaction
// there, when all of them are of one producer and epoch (a client's request
// is): a leader of several partitions of a transaction then pays one round trip
// to the coordinator, not one per partition in a row. It returns the
// verifications by partition (nil: none done; appendTransactional verifies
// alone whatever is missing).
func (s *Server) verifyProduce(c *conn, id string, req *kmsg.ProduceRequest, mayWrite func(string) bool) map[*replication.Partition]txnVerified {
	var parts []*replication.Partition
	var tps []txn.TopicPartition
	var guards []uint64
	pid, epoch := int64(-1), int16(-1)
	for _, t := range req.Topics {
		if !mayWrite(t.Topic) || cluster.IsInternalTopic(t.Topic) {
			continue
		}
		for _, rp := range t.Partitions {
			if !batch.IsTransactional(rp.Records) {
				continue
			}
			h, err := batch.ParseHeader(rp.Records)
			if err != nil {
				continue
			}
			p, code := s.localPartition(t.Topic, rp.Partition)
			if code != 0 {
				continue
			}
			guard, needed := p.TxnVerification(h.ProducerID)
			if !needed {
				continue
			}
			if _, noticed := p.TxnNoticed(h.ProducerID, h.ProducerEpoch); noticed {
				continue // appendTransactional appends it without asking
			}
			if len(parts) > 0 && (h.ProducerID != pid || h.ProducerEpoch != epoch) {
				return nil // several producers: each partition verifies alone
			}
			pid, epoch = h.ProducerID, h.ProducerEpoch
			parts, tps, guards = append(parts, p), append(tps, txn.TopicPartition{Topic: p.Topic, Partition: p.ID}), append(guards, guard)
		}
	}
	if len(parts) < 2 {
		return nil // one question either way
	}
	codes := s.verifyTxn(c.ctx, id, pid, epoch, tps)
	out := make(map[*replication.Partition]txnVerified, len(parts))
	for i, p := range parts {
		out[p] = txnVerified{pid: pid, epoch: epoch, guard: guards[i], code: codes[i]}
	}
	return out
}

// appendTransactional appends a transactional batch of transactional id id,
// verifying first when it would open a transaction on p, unless verified holds
// p's verification for this batch's producer and epoch or the coordinator's
// notice covers it.
func (s *Server) appendTransactional(c *conn, p *replication.Partition, id string, records []byte, acks int16, verified map[*replication.Partition]txnVerified) (replication.AppendResult, error) {
	h, err := batch.ParseHeader(records)
	if err != nil {
		return p.Append(records, acks) // refused there, with the right code
	}
	v, ok := verified[p]
	if !ok || v.pid != h.ProducerID || v.epoch != h.ProducerEpoch {
		var needed bool
		v.guard, needed = p.TxnVerification(h.ProducerID)
		if !needed {
			return p.Append(records, acks)
		}
		if guard, noticed := p.TxnNoticed(h.ProducerID, h.ProducerEpoch); noticed {
			s.metrics.txnFirstWrites.WithLabelValues("noticed").Inc()
			return p.AppendVerified(records, acks, guard)
		}
		tp := txn.TopicPartition{Topic: p.Topic, Partition: p.ID}
		v.code = s.verifyTxn(c.ctx, id, h.ProducerID, h.ProducerEpoch, []txn.TopicPartition{tp})[0]
	}
	if v.code != 0 {
		return replication.AppendResult{}, fmt.Errorf("transaction of %q does not include %s-%d: %w: %w", id, p.Topic, p.ID, errNotInTxn, kerr.ErrorForCode(v.code))
	}
	return p.AppendVerified(records, acks, v.guard)
}

// verifyTxn asks the coordinator of id, here or on its broker, whether each of
// tps is in the open transaction of pid at epoch, and returns their codes, in
// order.
func (s *Server) verifyTxn(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition) []int16 {
	s.metrics.txnFirstWrites.WithLabelValues("asked").Add(float64(len(tps)))
	codes := make([]int16, len(tps))
	all := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	t, ok := s.cache.Topic(cluster.TransactionTopic)
	if !ok {
		return all(kerr.InvalidTxnState.Code) // no transaction was ever begun
	}
	st, ok := s.cache.Partition(cluster.TransactionTopic, txn.PartitionFor(id, t.Partitions))
	switch {
	case !ok || st.Leader == cluster.NoLeader:
		return all(kerr.NotEnoughReplicas.Code) // retriable: the coordinator moves
	case st.Leader == s.cfg.NodeID:
		for i, tp := range tps {
			codes[i] = verifyCode(s.cfg.Txn.Verify(id, pid, epoch, tp))
		}
		return codes
	}
	code, got, err := s.askTxnCoordinator(ctx, st.Leader, true, id, pid, epoch, tps)
	if err != nil {
		s.logger.Debug("verify a transaction with its coordinator", "broker", st.Leader, "err", err)
		return all(kerr.NotEnoughReplicas.Code)
	}
	if code != 0 {
		return all(code)
	}
	for i, tp := range tps {
		code, ok := got[tp]
		if !ok {
			code = kerr.UnknownServerError.Code
		}
		codes[i] = verifyCode(code)
	}
	return codes
}

// askTxnCoordinator sends AddPartitionsToTxn for tps to the coordinator of id
// on broker: v4 verify-only (KIP-890 part 1) or v5 adding them (a transaction
// version 2 implicit add). It returns the request's code, else each
// partition's.
func (s *Server) askTxnCoordinator(ctx context.Context, broker int32, verifyOnly bool, id string, pid int64, epoch int16, tps []txn.TopicPartition) (int16, map[txn.TopicPartition]int16, error) {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(5)
	timeout := addTimeout
	if verifyOnly {
		req.SetVersion(4)
		timeout = verifyTimeout
	}
	x := kmsg.NewAddPartitionsToTxnRequestTransaction()
	x.TransactionalID, x.ProducerID, x.ProducerEpoch, x.VerifyOnly = id, pid, epoch, verifyOnly
	for _, tp := range tps {
		x.Topics = append(x.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	req.Transactions = append(req.Transactions, x)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := s.parts.BrokerRequest(ctx, broker, req)
	if err != nil {
		return 0, nil, err
	}
	r := resp.(*kmsg.AddPartitionsToTxnResponse)
	if r.ErrorCode != 0 {
		return r.ErrorCode, nil, nil
	}
	got := make(map[txn.TopicPartition]int16, len(tps))
	for _, rx := range r.Transactions {
		for _, rt := range rx.Topics {
			for _, rp := range rt.Partitions {
				got[txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.ErrorCode
			}
		}
	}
	return 0, got, nil
}

// verifyCode maps the coordinator's answer to the producer's: a coordinator that
// moved or loads is retriable for the producer too.
func verifyCode(code int16) int16 {
	if err := kerr.ErrorForCode(code); errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable) {
		return kerr.NotEnoughReplicas.Code
	}
	return code
}
