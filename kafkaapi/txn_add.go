package kafkaapi

// Transaction version 2 (KIP-890 part 2; docs/design/txn-v2.md): a producer
// that sends Produce v12 never sends AddPartitionsToTxn. The leader of a
// partition adds it to the producer's transaction itself, before the batch
// that opens the transaction there: in memory when the coordinator is here,
// else with AddPartitionsToTxn v5 in the brokers' add mode (verify_only
// false). The batch then waits for the marker of the producer's previous
// transaction on the partition if it is not appended yet (the hold,
// replication/txn_hold.go), and is appended.
//
// The add and the hold wait off the connection's loop (pipeline.go): the
// request's appends run on the goroutine of its answer, and a Produce
// pipelined behind it appends there too, after it, so that a partition's
// batches keep their order.

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

// addTimeout bounds an implicit add with another broker: above the
// coordinator's default commit timeout (10 s), which bounds its own waits.
const addTimeout = 15 * time.Second

// produceJob is one partition's batch of a Produce request that passed the
// request's checks, to be appended.
type produceJob struct {
	pr      *kmsg.ProduceResponseTopicPartition
	p       *replication.Partition
	records []byte
	// tv2: a transactional batch of a v12 request with a transactional id,
	// added implicitly when it would open a transaction (appendTV2).
	tv2 bool
}

// addsOffLoop reports whether the appends of jobs wait off the connection's
// loop: an append of an earlier request of c waits there still, or a v12
// transactional batch would open a transaction (an implicit add, maybe a hold).
func addsOffLoop(c *conn, jobs []produceJob) bool {
	if prev := c.acks.appends; prev != nil {
		select {
		case <-prev:
			c.acks.appends = nil
		default:
			return true
		}
	}
	for _, j := range jobs {
		if !j.tv2 {
			continue
		}
		if h, err := batch.ParseHeader(j.records); err == nil {
			if _, needed := j.p.TxnAddNeeded(h.ProducerID, h.ProducerEpoch); needed {
				return true
			}
		}
	}
	return false
}

// appendsOffLoop hands jobs to the goroutine of the answer (pipeline.go): it
// copies their records (the frame goes back to the pool and the budget now:
// the add may wait for a __transaction_state commit, which needs followers'
// fetches read, and so budget free), and returns the function that appends
// them, behind the appends of c's earlier requests, then returns what
// appendJobs returns. The caller releases the frame.
//
// The copy is one pooled buffer (bufpool.go), returned once the appends are
// done: nothing keeps a batch's bytes after its append, as on the loop, where
// the frame goes back right after. Under transaction version 2 every request
// of a transaction may come this way, about 1 MB a transaction in the bench:
// allocated each time, that was 1.7 GB and 156 collections in a 10 s bench on
// one node, against 0.1 GB and 8 under TV1 (docs/performance.md).
func (s *Server) appendsOffLoop(c *conn, id *string, acks int16, version int16, jobs []produceJob) func(ctx context.Context) ([]ackPending, int) {
	buf := getBuf(jobBytes(jobs))
	n := 0
	for i := range jobs {
		end := n + copy(buf[n:], jobs[i].records)
		jobs[i].records = buf[n:end:end]
		n = end
	}
	prev, mine := c.acks.appends, make(chan struct{})
	c.acks.appends = mine
	return func(ctx context.Context) ([]ackPending, int) {
		defer putBuf(buf)
		defer close(mine)
		if prev != nil {
			select {
			case <-prev:
			case <-ctx.Done():
				return nil, 0 // the connection was dropped: nobody reads the answer
			}
		}
		return s.appendJobs(ctx, c, id, acks, version, jobs, nil)
	}
}

// appendJobs appends jobs in order, filling their answers: first the
// implicit adds of the v12 transactional ones that would open a transaction;
// a transactional batch of an older version is verified (appendTransactional,
// with verified). It returns the appends to wait for (acks=all, or
// flush.policy=always) and the record bytes appended.
func (s *Server) appendJobs(ctx context.Context, c *conn, id *string, acks int16, version int16, jobs []produceJob, verified map[*replication.Partition]txnVerified) (waits []ackPending, appended int) {
	var steps []tv2Step
	if id != nil && version >= 12 {
		steps = s.implicitAdds(ctx, *id, jobs)
	}
	for i, j := range jobs {
		var res replication.AppendResult
		var err error
		switch {
		case j.tv2 && steps[i].code != 0:
			err = fmt.Errorf("the coordinator did not add %s-%d to the transaction of %q: %w", j.p.Topic, j.p.ID, *id, kerr.ErrorForCode(steps[i].code))
		case j.tv2:
			res, err = s.appendTV2(ctx, j.p, j.records, acks, steps[i])
		case id != nil && batch.IsTransactional(j.records):
			res, err = s.appendTransactional(c, j.p, *id, j.records, acks, verified)
		default:
			res, err = j.p.Append(j.records, acks)
		}
		if w, ok := s.answerAppend(c, j, version, acks, res, err); ok {
			waits = append(waits, w)
		}
		if err == nil && !res.Duplicate {
			appended += len(j.records)
		}
	}
	return waits, appended
}

// tv2Step is how a v12 transactional batch goes in: the producer's code if
// its implicit add failed; added, if the coordinator added its partition
// (the batch then waits for the previous transaction's marker); else the
// guard taken when its transaction was found open here at its epoch.
type tv2Step struct {
	code  int16
	added bool
	guard uint64
}

// appendTV2 appends a transactional batch of a v12 request, as step says:
// once added, after the producer's previous transaction on p, if open, has
// its marker (the hold), with a guard taken then. A marker of the producer
// appended after the guard voids the batch's place in its transaction
// (TRANSACTION_ABORTABLE, not appended): it would open one no coordinator
// knows.
func (s *Server) appendTV2(ctx context.Context, p *replication.Partition, records []byte, acks int16, step tv2Step) (replication.AppendResult, error) {
	guard := step.guard
	if step.added {
		h, err := batch.ParseHeader(records)
		if err != nil {
			return p.AppendTV2(records, acks) // refused there, with the right code
		}
		if err := p.AwaitPreviousMarker(ctx, h.ProducerID, h.ProducerEpoch); err != nil {
			return replication.AppendResult{}, err
		}
		guard, _ = p.TxnVerification(h.ProducerID)
	}
	res, err := p.AppendTV2Verified(records, acks, guard)
	if errors.Is(err, kerr.InvalidTxnState) {
		err = fmt.Errorf("%w: %w", errNotInTxn, err)
	}
	return res, err
}

// implicitAdds returns the step of each v12 transactional job (tv2Step),
// adding to the transaction of id the partitions whose batch would open a
// transaction there. The jobs of one producer and epoch (a client's request)
// take one question to the coordinator, as verifyProduce's do.
func (s *Server) implicitAdds(ctx context.Context, id string, jobs []produceJob) []tv2Step {
	type producer struct {
		pid   int64
		epoch int16
	}
	steps := make([]tv2Step, len(jobs))
	var order []producer
	asks := map[producer][]int{} // job indexes
	for i, j := range jobs {
		if !j.tv2 {
			continue
		}
		h, err := batch.ParseHeader(j.records)
		if err != nil {
			continue // refused at append, with the right code
		}
		var needed bool
		if steps[i].guard, needed = j.p.TxnAddNeeded(h.ProducerID, h.ProducerEpoch); !needed {
			continue
		}
		k := producer{h.ProducerID, h.ProducerEpoch}
		if _, ok := asks[k]; !ok {
			order = append(order, k)
		}
		asks[k] = append(asks[k], i)
	}
	for _, k := range order {
		tps := make([]txn.TopicPartition, len(asks[k]))
		for n, i := range asks[k] {
			tps[n] = txn.TopicPartition{Topic: jobs[i].p.Topic, Partition: jobs[i].p.ID}
		}
		for n, code := range s.addTxn(ctx, id, k.pid, k.epoch, tps) {
			steps[asks[k][n]] = tv2Step{code: addCode(code), added: true}
		}
	}
	return steps
}

// addTxn adds tps to the transaction of pid at epoch of id, with its
// coordinator here or on its broker, and returns the coordinator's codes, in
// order.
func (s *Server) addTxn(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition) []int16 {
	s.metrics.txnFirstWrites.WithLabelValues("added").Add(float64(len(tps)))
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
		return all(kerr.CoordinatorNotAvailable.Code)
	case st.Leader == s.cfg.NodeID:
		if s.cfg.Txn == nil {
			return all(kerr.CoordinatorNotAvailable.Code)
		}
		code, got := s.cfg.Txn.AddPartitions(ctx, id, pid, epoch, tps, true)
		for i, tp := range tps {
			codes[i] = code
			if c, ok := got[tp]; ok {
				codes[i] = c
			}
		}
		return codes
	}
	code, got, err := s.askTxnCoordinator(ctx, st.Leader, false, id, pid, epoch, tps)
	if err != nil {
		s.logger.Debug("add to a transaction with its coordinator", "broker", st.Leader, "err", err)
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	if code != 0 {
		return all(code)
	}
	for i, tp := range tps {
		code, ok := got[tp]
		if !ok {
			code = kerr.CoordinatorNotAvailable.Code // an answer without it: ask again
		}
		codes[i] = code
	}
	return codes
}

// addCode maps the coordinator's answer to an implicit add to the producer's
// code (docs/design/txn-v2.md §1): under transaction version 2 a producer
// recovers only from retriable codes, UNKNOWN_PRODUCER_ID and
// TRANSACTION_ABORTABLE, so nothing transient may get a fatal code. A
// coordinator that moved or loads is NOT_ENOUGH_REPLICAS, as verifyCode
// maps it; CONCURRENT_TRANSACTIONS (retried) passes through; a partition the
// transaction cannot take (INVALID_TXN_STATE, or the coordinator's broker
// refusing this one, CLUSTER_AUTHORIZATION_FAILED, as Kafka's leaders map it)
// is TRANSACTION_ABORTABLE; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, as
// Kafka's leaders answer it. An ended epoch (INVALID_PRODUCER_EPOCH) and a
// producer id that is not the transactional id's (INVALID_PRODUCER_ID_MAPPING)
// are real fences (KIP-890) and pass through.
func addCode(code int16) int16 {
	switch err := kerr.ErrorForCode(code); {
	case code == 0:
		return 0
	case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorLoadInProgress),
		errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.OperationNotAttempted),
		errors.Is(err, kerr.RequestTimedOut), errors.Is(err, kerr.UnknownServerError):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.TransactionAbortable),
		errors.Is(err, kerr.ClusterAuthorizationFailed):
		return kerr.TransactionAbortable.Code
	case errors.Is(err, kerr.ProducerFenced):
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// addImplicitly is AddPartitionsToTxn v5 in the brokers' add mode
// (verify_only false): the partition leaders of a transaction version 2
// producer add its partitions for it (implicit adds, txn.Coordinator).
func (s *Server) addImplicitly(ctx context.Context, id string, pid int64, epoch int16, topics []kmsg.AddPartitionsToTxnRequestTopic) []kmsg.AddPartitionsToTxnResponseTopic {
	if s.cfg.Txn == nil {
		return addPartitionsAnswer(topics, kerr.NotCoordinator.Code, nil)
	}
	code, codes := s.cfg.Txn.AddPartitions(ctx, id, pid, epoch, txnPartitions(topics), true)
	return addPartitionsAnswer(topics, code, codes)
}
