package txn

// The requests of transactional producers: InitProducerId, AddPartitionsToTxn,
// AddOffsetsToTxn and Verify (EndTxn: endtxn.go).

import (
	"context"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// InitProducerID gives transactional id id its producer id and a new epoch, which
// fences every older producer of the id (PRODUCER_FENCED / INVALID_PRODUCER_EPOCH
// from then on). A transaction left open by the previous producer is aborted first:
// the answer is then CONCURRENT_TRANSACTIONS, and the client asks again. pid and
// epoch are the producer's own (-1 for a new producer, KIP-360). While the markers
// of an ended transaction of the id are being written it waits for them.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeout time.Duration, pid int64, epoch int16) (int64, int16, int16) {
	if timeout <= 0 || timeout > c.cfg.MaxTimeout {
		return -1, -1, codeInvalidTimeout
	}
	sh, code := c.shardFor(id)
	if code != 0 {
		return -1, -1, code
	}
	sh.mu.Lock()
	// A transaction being ended (by this producer, or aborted by the coordinator)
	// is waited for; the new epoch then follows its complete state.
	m := sh.awaitCompletion(ctx, id, pid, -1)
	if m == nil {
		// A new id: allocate its producer id, record it at epoch 0 (FirstEpoch).
		m = &txnMeta{id: id, pid: -1, epoch: -1, state: Empty, partitions: map[TopicPartition]struct{}{}, lastEpoch: -1,
			prevPID: -1, nextPID: -1, nextEpoch: -1, pending: true}
		sh.txns[id] = m
		sh.mu.Unlock()
		newPID, err := c.cfg.AllocateProducerID(ctx)
		if err != nil {
			c.logger.Warn("transaction coordinator: allocate producer id", "err", err)
			sh.forgetNew(m)
			return -1, -1, kerr.CoordinatorNotAvailable.Code
		}
		next := m.clone()
		next.pid, next.epoch, next.timeout, next.updated = newPID, c.cfg.FirstEpoch, timeout, time.Now()
		if err := sh.transition(m, next); err != nil {
			sh.forgetNew(m)
			return -1, -1, waitCode(err)
		}
		return newPID, next.epoch, 0
	}
	switch {
	case m.pending:
		sh.mu.Unlock()
		return -1, -1, codeConcurrent
	case pid >= 0 && !rotatedFrom(m, pid, epoch) &&
		(pid != m.pid || (epoch != m.epoch && (epoch < 0 || epoch != m.lastEpoch))):
		// Another producer, except a TV2 one whose EndTxn rotated its id and
		// which never got the answer (rotatedFrom, Kafka's isValidProducerId):
		// that one goes on with the new id, once a transaction open there is
		// aborted as for any InitProducerId.
		sh.mu.Unlock()
		return -1, -1, codeFenced
	case m.state == PrepareCommit || m.state == PrepareAbort, m.carried != nil:
		sh.mu.Unlock()
		return -1, -1, codeConcurrent
	case m.state == Ongoing:
		// Abort the previous producer's transaction under a bumped epoch, which
		// fences it on every partition the markers reach.
		next := m.clone()
		next.epoch, next.state, next.updated = m.epoch+1, PrepareAbort, time.Now()
		if pid >= 0 {
			// The producer itself asked (KIP-360, after an error): its retry with
			// the epoch it had is accepted once the abort is done.
			next.lastEpoch = m.epoch
		}
		m.pending = true
		if m.tv2 {
			// A TV2 transaction's abort bumps twice, as its timeout abort
			// (complete.go): then no EndTxn of the fenced producer passes
			// for a retry of it (endTxnV2).
			next.prevPID, next.nextPID = -1, -1
			if code := sh.bumpEpochLocked(ctx, m, next, 2); code != 0 {
				return -1, -1, code
			}
		} else {
			sh.mu.Unlock()
		}
		if err := sh.transition(m, next); err != nil {
			return -1, -1, waitCode(err)
		}
		sh.startCompletion(m)
		return -1, -1, codeConcurrent
	}
	next := m.clone()
	next.state, next.timeout, next.updated, next.lastEpoch = Empty, timeout, time.Now(), -1
	// The client picks its transaction version per transaction (TV2 at EndTxn v5).
	next.tv2, next.prevPID, next.nextPID = false, -1, -1
	next.partitions, next.started = map[TopicPartition]struct{}{}, time.Time{}
	// Pending from here, also while a new producer id is allocated without
	// the lock: a change meanwhile (an implicit add opening a transaction)
	// would be overwritten by this Empty state.
	m.pending = true
	if m.epoch >= math.MaxInt16-1 {
		sh.mu.Unlock()
		newPID, err := c.cfg.AllocateProducerID(ctx)
		if err != nil {
			sh.mu.Lock()
			m.pending = false
			sh.mu.Unlock()
			sh.notifyChanged()
			return -1, -1, kerr.CoordinatorNotAvailable.Code
		}
		next.pid, next.epoch = newPID, 0
	} else {
		next.epoch = m.epoch + 1
		sh.mu.Unlock()
	}
	if err := sh.transition(m, next); err != nil {
		return -1, -1, waitCode(err)
	}
	return next.pid, next.epoch, 0
}

// rotatedFrom reports whether (pid, epoch) is the id m's TV2 EndTxn rotated
// away from at an exhausted epoch.
func rotatedFrom(m *txnMeta, pid int64, epoch int16) bool {
	return m.prevPID >= 0 && pid == m.prevPID && pid != m.pid && epoch >= math.MaxInt16-1
}

// forgetNew drops a transactional id whose first record was never written.
func (sh *shard) forgetNew(m *txnMeta) {
	sh.mu.Lock()
	if sh.txns[m.id] == m && m.pid < 0 {
		delete(sh.txns, m.id)
	}
	m.pending = false
	sh.mu.Unlock()
}

// checkProducerLocked checks that pid and epoch are the id's current producer.
func checkProducerLocked(m *txnMeta, pid int64, epoch int16) int16 {
	switch {
	case m == nil || m.pid < 0 || m.pid != pid:
		return codeInvalidMapping
	case epoch != m.epoch:
		return codeInvalidEpoch
	case m.pending || m.state == PrepareCommit || m.state == PrepareAbort:
		return codeConcurrent
	}
	return 0
}

// AddPartitions adds partitions to the transaction of id, starting it if none is
// open. It returns one code for all of them (or a code per partition, when some
// are unknown: the others then get OPERATION_NOT_ATTEMPTED).
//
// implicit: a partition leader adds them for a TV2 producer's batch (KIP-890
// part 2, no AddPartitionsToTxn from the client): the transaction is then
// TV2, and its first add does not wait for the markers of the transaction the
// producer ended, whose completion its record carries (carry.go).
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition, implicit bool) (int16, map[TopicPartition]int16) {
	if c.cfg.TopicPartitions != nil {
		var bad map[TopicPartition]int16
		for _, tp := range parts {
			if n, ok := c.cfg.TopicPartitions(tp.Topic); !ok || tp.Partition < 0 || tp.Partition >= n {
				if bad == nil {
					bad = make(map[TopicPartition]int16)
				}
				bad[tp] = codeUnknownTopic
			}
		}
		if bad != nil {
			for _, tp := range parts {
				if _, ok := bad[tp]; !ok {
					bad[tp] = codeOperationNotAttempted
				}
			}
			return 0, bad
		}
	}
	sh, code := c.shardFor(id)
	if code != 0 {
		return code, nil
	}
	return sh.addPartitions(ctx, id, pid, epoch, parts, implicit), nil
}

// addBatch is the partitions that AddPartitionsToTxn requests of one producer
// (pid at epoch) asked for while its transaction could not change (a change
// being written, or the markers of the transaction it ended): the request that
// began the batch waits until the transaction can change, then writes them
// all in one record, and every request of the batch gets that answer. A client
// adds partitions as it first produces to each leader, in one request per
// leader, and pipelines them (franz-go): they then take one
// __transaction_state write, not one each in a row.
type addBatch struct {
	pid   int64
	epoch int16
	parts []TopicPartition
	done  chan struct{} // closed once code is set
	code  int16
}

// addPartitions is AddPartitions on the shard of id.
func (sh *shard) addPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition, implicit bool) int16 {
	ctx, cancel := context.WithTimeout(ctx, sh.c.cfg.CommitTimeout)
	defer cancel()
	b := &addBatch{pid: pid, epoch: epoch, parts: parts, done: make(chan struct{})}
	sh.mu.Lock()
	// Wait while the transaction cannot change (only its own producer waits;
	// others get their answer at once), gathering the producer's other
	// requests meanwhile. A transaction being ended has its markers waited for
	// (the complete state then goes into this change's batch, complete.go).
	var m *txnMeta
	for {
		m = sh.txns[id]
		if implicit && (carryableLocked(m, pid, epoch) || chainableLocked(m, pid, epoch)) {
			break
		}
		if m == nil || !((m.pid == pid && m.epoch == epoch) || (implicit && continuesLocked(m, pid, epoch))) {
			break
		}
		if o := m.adds; o != nil && o != b {
			// Another request of the producer waits to write: join it.
			o.parts = append(o.parts, parts...)
			sh.mu.Unlock()
			select {
			case <-o.done:
				return o.code
			case <-ctx.Done():
				return codeConcurrent
			}
		}
		if !m.pending && m.state != PrepareCommit && m.state != PrepareAbort {
			break
		}
		m.adds = b
		if sh.awaitChange(ctx, m) {
			m = sh.txns[id]
			break
		}
	}
	if m != nil && m.adds == b {
		m.adds = nil // no request joins from here on
	}
	var code int16
	switch {
	case implicit && carryableLocked(m, pid, epoch):
		code = sh.carryLocked(m, b.parts)
	case implicit && chainableLocked(m, pid, epoch):
		code = sh.chainAddLocked(m, b.parts)
	default:
		code = sh.addLocked(m, pid, epoch, b.parts, implicit)
	}
	b.code = code
	close(b.done)
	return code
}

// addLocked adds parts to the transaction of m, starting it if none is open,
// and returns the code to answer. It is called with sh.mu held and releases it.
func (sh *shard) addLocked(m *txnMeta, pid int64, epoch int16, parts []TopicPartition, implicit bool) int16 {
	if code := checkProducerLocked(m, pid, epoch); code != 0 {
		sh.mu.Unlock()
		return code
	}
	if m.state == Ongoing {
		missing := false
		for _, tp := range parts {
			if _, ok := m.partitions[tp]; !ok {
				missing = true
				break
			}
		}
		if !missing {
			sh.mu.Unlock()
			return 0
		}
	}
	next := m.clone()
	if m.state != Ongoing {
		next.partitions = make(map[TopicPartition]struct{}, len(parts))
		next.started = time.Now()
	}
	for _, tp := range parts {
		next.partitions[tp] = struct{}{}
	}
	next.state, next.updated = Ongoing, time.Now()
	var notices []Notice
	if implicit {
		// A TV2 producer's: its leaders added the partitions themselves.
		next.tv2 = true
	} else {
		// Bound to the stamps of markers written before this change: none of
		// the transaction it opens can be among them.
		notices = noticesLocked(m, parts)
	}
	m.pending = true
	sh.mu.Unlock()
	code := waitCode(sh.transition(m, next))
	if code == 0 {
		sh.notify(notices)
	}
	return code
}

// AddOffsets adds the __consumer_offsets partition of group to the transaction of
// id, so that its TxnOffsetCommit records are committed or aborted with it.
func (c *Coordinator) AddOffsets(ctx context.Context, id string, pid int64, epoch int16, group string) int16 {
	p, ok := c.cfg.OffsetsPartition(group)
	if !ok {
		return kerr.CoordinatorNotAvailable.Code
	}
	code, _ := c.AddPartitions(ctx, id, pid, epoch, []TopicPartition{{OffsetsTopic, p}}, false)
	return code
}

// OffsetsTopic is the internal topic of consumer offsets.
const OffsetsTopic = "__consumer_offsets"

// Verify answers a partition leader's question before it appends the first batch
// of a producer's transaction (KIP-890 part 1): is tp part of the open
// transaction of id at pid and epoch? INVALID_TXN_STATE when it is not (a
// transactional batch that would otherwise open a hanging transaction),
// INVALID_PRODUCER_EPOCH for another epoch.
func (c *Coordinator) Verify(id string, pid int64, epoch int16, tp TopicPartition) int16 {
	sh, code := c.shardFor(id)
	if code != 0 {
		return code
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	m := sh.txns[id]
	switch {
	case m == nil || m.pid != pid:
		return codeInvalidMapping
	case epoch != m.epoch:
		return codeInvalidEpoch
	case m.state != Ongoing:
		return codeInvalidState
	}
	if _, ok := m.partitions[tp]; !ok {
		return codeInvalidState
	}
	return 0
}
