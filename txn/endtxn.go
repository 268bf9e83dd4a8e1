package txn

// EndTxn: a producer's decision to commit or abort its transaction, as a TV1
// client (EndTxn v0-v4) or a TV2 one (v5, KIP-890 part 2: every EndTxn bumps
// the epoch).

import (
	"context"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// EndTxn commits (commit set) or aborts the transaction of id: the decision is
// recorded (PrepareCommit / PrepareAbort), then markers are written to every
// partition of the transaction, then it is recorded complete. EndTxn answers once
// the decision is committed, as Kafka does; the markers are written in the
// background, and the producer's next AddPartitionsToTxn or AddOffsetsToTxn
// waits for them (awaitCompletion). A retry of the decision answers once they
// are written.
//
// tv2: the request is EndTxn v5 (endTxnV2). The answer is then the producer id
// and epoch the producer goes on with; a TV1 request gets -1, -1.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit, tv2 bool) (int64, int16, int16) {
	if tv2 {
		return c.endTxnV2(ctx, id, pid, epoch, commit)
	}
	return -1, -1, c.endTxnV1(ctx, id, pid, epoch, commit)
}

// endTxnV1 is EndTxn of a TV1 client: the epoch stays.
func (c *Coordinator) endTxnV1(ctx context.Context, id string, pid int64, epoch int16, commit bool) int16 {
	sh, code := c.shardFor(id)
	if code != 0 {
		return code
	}
	want, done := PrepareAbort, CompleteAbort
	if commit {
		want, done = PrepareCommit, CompleteCommit
	}
	sh.mu.Lock()
	m := sh.txns[id]
	switch {
	case m == nil || m.pid < 0 || m.pid != pid:
		sh.mu.Unlock()
		return codeInvalidMapping
	case epoch != m.epoch:
		sh.mu.Unlock()
		return codeInvalidEpoch
	case m.state == want || (m.state == done && !m.pending):
		// A retry of the same decision.
		sh.mu.Unlock()
		return sh.waitComplete(ctx, m, done)
	case m.pending, m.state == PrepareCommit, m.state == PrepareAbort, m.carried != nil:
		// A carried completion (TV2) stays until its markers are committed:
		// this v0 record would drop it from the log.
		sh.mu.Unlock()
		return codeConcurrent
	case m.state != Ongoing:
		sh.mu.Unlock()
		return codeInvalidState
	}
	next := m.clone()
	next.state, next.updated = want, time.Now()
	next.tv2, next.prevPID, next.nextPID = false, -1, -1
	m.pending = true
	sh.mu.Unlock()
	if err := sh.transition(m, next); err != nil {
		return waitCode(err)
	}
	sh.startCompletion(m)
	return 0
}

// waitComplete waits until m reaches state done, ctx ends or CommitTimeout
// passes; the decision is recorded already, so only a lost coordinatorship is an
// error.
func (sh *shard) waitComplete(ctx context.Context, m *txnMeta, done State) int16 {
	return sh.waitStateOf(ctx, m, func(st State) bool { return st == done })
}

// waitStateOf waits until m's state satisfies reached, ctx ends or
// CommitTimeout passes: 0, or NOT_COORDINATOR once the shard stops.
func (sh *shard) waitStateOf(ctx context.Context, m *txnMeta, reached func(State) bool) int16 {
	ctx, cancel := context.WithTimeout(ctx, sh.c.cfg.CommitTimeout)
	defer cancel()
	for {
		sh.mu.Lock()
		st, changed := m.state, sh.changed
		sh.mu.Unlock()
		if reached(st) {
			return 0
		}
		select {
		case <-sh.ctx.Done():
			return codeNotCoordinator
		case <-ctx.Done():
			return 0
		case <-changed:
		}
	}
}

// endTxnV2 is EndTxn of a TV2 client (KIP-890 part 2). The decision is
// recorded at the bumped epoch e+1 (lastEpoch e) and answered with it; at
// e >= 32766 the epoch is exhausted: the decision is recorded at 32767 with a
// new producer id, which the complete state takes at epoch 0, and the answer
// is that id at 0. An abort at the current epoch with nothing open (Empty or
// CompleteX) is an empty PrepareAbort with a bump: the client aborts when no
// produce succeeded, though one may have added a partition.
//
// Retries follow Kafka's TransactionCoordinator.endTransaction for TV2: the
// epoch before the bump (e) in PrepareX or CompleteX with the same result, or
// the old id at 32766 after an overflow, answers 0 with the current id and
// epoch; in PrepareX once the decision is complete or carried by the next
// transaction (waitDecided; Kafka answers CONCURRENT_TRANSACTIONS, which
// clients retry). Another epoch is PRODUCER_FENCED, another result
// INVALID_TXN_STATE.
func (c *Coordinator) endTxnV2(ctx context.Context, id string, pid int64, epoch int16, commit bool) (int64, int16, int16) {
	sh, code := c.shardFor(id)
	if code != 0 {
		return -1, -1, code
	}
	want, done := PrepareAbort, CompleteAbort
	if commit {
		want, done = PrepareCommit, CompleteCommit
	}
	sh.mu.Lock()
	m, answered, p, e, code := sh.awaitCarriedLocked(ctx, sh.txns[id], id, pid, epoch, commit)
	if answered {
		sh.mu.Unlock()
		return p, e, code
	}
	if m == nil || m.pid < 0 {
		sh.mu.Unlock()
		return -1, -1, codeInvalidMapping
	}
	// A retry of an EndTxn that bumped the epoch, or that rotated the id.
	bumped := m.tv2 && m.pid == pid && int(m.epoch) == int(epoch)+1
	overflowed := m.tv2 && m.prevPID >= 0 && m.prevPID == pid && epoch == math.MaxInt16-1 && m.epoch == 0
	fail := func(code int16) (int64, int16, int16) {
		sh.mu.Unlock()
		return -1, -1, code
	}
	switch {
	case m.pid != pid && !overflowed:
		return fail(codeInvalidMapping)
	case m.state == PrepareCommit || m.state == PrepareAbort:
		switch {
		case !bumped:
			return fail(codeFenced)
		case m.state != want:
			return fail(codeInvalidState)
		}
		p, e := m.continueAs() // what the decision answered
		sh.mu.Unlock()
		if code := sh.waitDecided(ctx, m, want); code != 0 {
			return -1, -1, code
		}
		return p, e, 0
	case m.pending:
		return fail(codeConcurrent)
	case m.state == CompleteCommit || m.state == CompleteAbort:
		switch {
		case bumped || overflowed:
			if m.state != done {
				return fail(codeInvalidState)
			}
			p, e := m.continueAs()
			sh.mu.Unlock()
			return p, e, 0
		case epoch != m.epoch:
			return fail(codeFenced)
		case commit:
			return fail(codeInvalidState)
		}
	case m.state == Empty:
		switch {
		case epoch != m.epoch:
			return fail(codeFenced)
		case commit:
			return fail(codeInvalidState)
		}
	case m.state == Ongoing:
		if epoch != m.epoch {
			return fail(codeFenced)
		}
	default:
		return fail(codeInvalidState)
	}
	next := m.clone()
	next.state, next.updated = want, time.Now()
	next.tv2, next.lastEpoch, next.prevPID, next.nextPID = true, m.epoch, -1, -1
	if m.state != Ongoing {
		next.partitions, next.started = map[TopicPartition]struct{}{}, time.Time{}
	}
	m.pending = true
	code = sh.bumpEpochLocked(ctx, m, next, 1)
	if code != 0 {
		return -1, -1, code
	}
	if err := sh.transition(m, next); err != nil {
		return -1, -1, waitCode(err)
	}
	sh.startCompletion(m)
	p, e = next.continueAs()
	return p, e, 0
}

// bumpEpochLocked sets next, a TV2 change of m being prepared, to m's epoch
// plus by, or, when that reaches the exhausted epochs (32766 and up, Kafka's
// TransactionMetadata.isEpochExhausted), to 32767 with a new producer id the
// complete state takes. It is called with sh.mu held and m pending, and
// releases the lock; on failure m is no longer pending.
func (sh *shard) bumpEpochLocked(ctx context.Context, m, next *txnMeta, by int) int16 {
	if int(m.epoch)+by <= math.MaxInt16-1 {
		next.epoch = m.epoch + int16(by)
		sh.mu.Unlock()
		return 0
	}
	sh.mu.Unlock()
	newPID, err := sh.c.cfg.AllocateProducerID(ctx)
	if err != nil {
		sh.c.logger.Warn("transaction coordinator: allocate producer id", "err", err)
		sh.mu.Lock()
		m.pending = false
		sh.mu.Unlock()
		sh.notifyChanged()
		return kerr.CoordinatorNotAvailable.Code
	}
	next.epoch, next.nextPID = math.MaxInt16, newPID
	return 0
}

// continueAs is the producer id and epoch a TV2 producer goes on with after
// the decision m records (or has recorded): the id it rotates to at epoch 0,
// or its own.
func (m *txnMeta) continueAs() (int64, int16) {
	if m.nextPID >= 0 {
		return m.nextPID, 0
	}
	return m.pid, m.epoch
}

// waitDecided waits until m leaves prepared state want (complete, or, under
// TV2, the producer's next transaction carries it), ctx ends or CommitTimeout
// passes.
func (sh *shard) waitDecided(ctx context.Context, m *txnMeta, want State) int16 {
	return sh.waitStateOf(ctx, m, func(st State) bool { return st != want })
}

// awaitCarriedLocked waits, with sh.mu held (released meanwhile), while the
// transaction of id carries the previous one's completion (one completion
// pending per id, so its EndTxn waits for those markers: rare, they take less
// time than a transaction), implicit adds are being written (chain.go), or the
// decision this EndTxn follows is still prepared (the producer's next EndTxn,
// at the id and epoch that decision answered: franz-go's empty abort; Kafka
// answers CONCURRENT_TRANSACTIONS first, KAFKA-18464, never a fence). A late
// retry of the carried decision is answered at once (answered set, with its
// answer). It returns the id's state then.
func (sh *shard) awaitCarriedLocked(ctx context.Context, m *txnMeta, id string, pid int64, epoch int16, commit bool) (_ *txnMeta, answered bool, _ int64, _ int16, _ int16) {
	busy := func(m *txnMeta) bool {
		return m != nil && (m.carried != nil || m.carrying != nil || m.chain != nil || continuesLocked(m, pid, epoch))
	}
	if !busy(m) {
		return m, false, 0, 0, 0
	}
	wait, cancel := context.WithTimeout(ctx, sh.c.cfg.CommitTimeout)
	defer cancel()
	for busy(m) {
		c := m.carrying
		if c == nil {
			c = m.carried
		}
		if c != nil && c.pid == pid && int(c.epoch) == int(epoch)+1 {
			if c.commit != commit {
				return m, true, -1, -1, codeInvalidState
			}
			p, e := m.continueAs()
			return m, true, p, e, 0
		}
		if sh.awaitChange(wait, m) {
			return m, true, -1, -1, codeConcurrent
		}
		m = sh.txns[id]
	}
	return m, false, 0, 0, 0
}
