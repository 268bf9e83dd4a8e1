package txn

// Ending transactions: markers to every partition of a prepared transaction, then
// the complete state; and aborting transactions open longer than their timeout.

import (
	"context"
	"time"

	"skiff/internal/batch"
)

// startCompletion writes the markers of m, which is prepared, in the background.
// The prepared state is taken here, under the lock: once completing is set the
// producer's next transaction may carry the completion and replace m's state
// with its Ongoing one before the goroutine runs, whose markers would then be
// that transaction's, as an abort.
func (sh *shard) startCompletion(m *txnMeta) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closing {
		return // the next coordinator completes it
	}
	if m.state != PrepareCommit && m.state != PrepareAbort {
		return // not prepared: nothing to complete (defensive; callers pass a prepared m)
	}
	m.pending, m.completing = true, true
	sh.wg.Add(1)
	go sh.complete(m, m.clone())
}

// completionStarting, when set (tests only), is called as a completion's
// goroutine starts.
var completionStarting func()

// complete writes the markers of prepared transaction m (prepared, its state
// when the completion started) until they are all written, then records it
// complete. m is pending throughout, unless the producer's next transaction
// carries the completion (carry.go): then that transaction's record stands for
// the complete one.
func (sh *shard) complete(m, prepared *txnMeta) {
	defer sh.wg.Done()
	if completionStarting != nil {
		completionStarting()
	}
	commit := prepared.state == PrepareCommit
	markers := make([]Marker, 0, len(prepared.partitions))
	for _, tp := range prepared.sortedPartitions() {
		markers = append(markers, Marker{Topic: tp.Topic, Partition: tp.Partition, ProducerID: prepared.pid,
			Epoch: prepared.epoch, Commit: commit, CoordinatorEpoch: sh.epoch, TV2: prepared.tv2})
	}
	retry := sh.retrier(prepared.id)
	if !sh.writeMarkers(m, markers, retry) {
		return
	}
	next := prepared.clone()
	next.state, next.updated = CompleteAbort, time.Now()
	if commit {
		next.state = CompleteCommit
	}
	next.partitions, next.started = map[TopicPartition]struct{}{}, time.Time{}
	if prepared.nextPID >= 0 {
		// A TV2 epoch overflow: the producer goes on with the new id; the old
		// one recognizes a retry (endTxnV2).
		next.prevPID, next.pid, next.epoch, next.nextPID, next.lastEpoch = prepared.pid, prepared.nextPID, 0, -1, -1
	}
	// The complete state takes effect once the markers are written, before its
	// record is committed: every later change of this id is appended after it and
	// answered only once committed, which commits this record too; and a
	// coordinator that finds the transaction still prepared writes its markers
	// again, which partitions ignore. When the producer already waits to start
	// its next transaction, the record is left to that change (transition), so
	// that both take one append and one sync instead of two in a row.
	sh.mu.Lock()
	if carriedLocked(m, prepared.pid, prepared.epoch) {
		sh.mu.Unlock()
		sh.notifyChanged()
		return
	}
	// From here this record ends the transaction: no implicit add may carry
	// the completion any more (its Ongoing record could land before this one,
	// which would end it); one arriving now waits for this record (awaiting).
	m.completing = false
	if m.awaiting > 0 {
		m.set(next)
		m.pending, m.completeUnwritten = false, true
		sh.mu.Unlock()
		sh.notifyChanged()
		return
	}
	sh.mu.Unlock()
	for {
		_, err := sh.appendStates(next)
		if err == nil {
			sh.mu.Lock()
			m.set(next)
			m.pending = false
			sh.mu.Unlock()
			sh.notifyChanged()
			return
		}
		if !retry("recording a transaction complete", err) {
			return
		}
	}
}

// retrier returns the backoff between attempts of the background work on
// transactional id id: it logs the failure, waits, and reports false once the
// shard stops.
func (sh *shard) retrier(id string) func(what string, err error) bool {
	backoff := defaultMarkerRetryBackoff
	return func(what string, err error) bool {
		if sh.ctx.Err() != nil {
			return false
		}
		sh.c.logger.Warn("transaction coordinator: "+what+" failed; retrying", "transactional_id", id, "err", err)
		select {
		case <-sh.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, defaultMaxMarkerRetryBackof)
		return true
	}
}

// writeMarkers writes markers (to m's partitions, or to those of the
// completion m carries) until they are all written, noting their stamps; false
// when retry gives up (the shard stops).
func (sh *shard) writeMarkers(m *txnMeta, markers []Marker, retry func(string, error) bool) bool {
	for len(markers) > 0 {
		stamps, err := sh.c.cfg.WriteMarkers(sh.ctx, markers)
		if err != nil {
			stamps = nil // some may have been written again since: none is known
		}
		sh.mu.Lock()
		noteStampsLocked(m, markers, stamps)
		sh.mu.Unlock()
		if err == nil {
			return true
		}
		if !retry("writing transaction markers", err) {
			return false
		}
	}
	return true
}

// awaitCompletion returns the state of transactional id once the transaction
// its producer ended has its markers written, or ctx ends, or CommitTimeout
// passes: the producer's next request waits here rather than get
// CONCURRENT_TRANSACTIONS, which clients answer with a backoff. Only producer
// pid (any when negative) at epoch (any when negative) waits; others get their
// answer at once. It is called and returns with sh.mu held.
func (sh *shard) awaitCompletion(ctx context.Context, id string, pid int64, epoch int16) *txnMeta {
	ctx, cancel := context.WithTimeout(ctx, sh.c.cfg.CommitTimeout)
	defer cancel()
	for {
		m := sh.txns[id]
		if m == nil || (pid >= 0 && m.pid != pid) || (epoch >= 0 && m.epoch != epoch) ||
			(m.state != PrepareCommit && m.state != PrepareAbort) {
			return m
		}
		if sh.awaitChange(ctx, m) {
			return sh.txns[id]
		}
	}
}

// awaitChange waits, with sh.mu held (it is released meanwhile), for the next
// change of any transaction of the shard, counting the wait on m; it reports
// true when ctx or the shard ended first.
func (sh *shard) awaitChange(ctx context.Context, m *txnMeta) (done bool) {
	m.awaiting++
	changed := sh.changed
	sh.mu.Unlock()
	select {
	case <-changed:
	case <-ctx.Done():
		done = true
	case <-sh.ctx.Done():
		done = true
	}
	sh.mu.Lock()
	m.awaiting--
	return done
}

// abortTimedOut aborts the transactions open longer than their timeout, under a
// bumped epoch: the producer is fenced, and learns it at its next request.
func (sh *shard) abortTimedOut(now time.Time) {
	sh.mu.Lock()
	var expired []*txnMeta
	var nexts []*txnMeta
	for _, m := range sh.txns {
		if m.state != Ongoing || m.pending || m.carried != nil || now.Sub(m.started) <= m.timeout {
			continue
		}
		next := m.clone()
		next.lastEpoch, next.epoch, next.state, next.updated = m.epoch, m.epoch+1, PrepareAbort, now
		m.pending = true
		expired, nexts = append(expired, m), append(nexts, next)
	}
	sh.mu.Unlock()
	for i, m := range expired {
		sh.c.logger.Info("transaction coordinator: aborting a transaction open longer than its timeout",
			"transactional_id", m.id, "producer_id", m.pid, "timeout", m.timeout)
		if m.tv2 {
			// A TV2 transaction's abort bumps twice, as Kafka 4.x's
			// (prepareFenceProducerEpoch, then prepareAbortOrCommit): the
			// marker's epoch is above the data's and the producer is fenced.
			// Where the second bump would exhaust the epochs the id rotates.
			nexts[i].prevPID, nexts[i].nextPID = -1, -1
			sh.mu.Lock()
			if sh.bumpEpochLocked(sh.ctx, m, nexts[i], 2) != 0 {
				continue
			}
		}
		if err := sh.transition(m, nexts[i]); err != nil {
			sh.c.logger.Warn("transaction coordinator: aborting a timed-out transaction", "transactional_id", m.id, "err", err)
			continue
		}
		sh.startCompletion(m)
	}
}

// notifyChanged wakes the requests waiting for a transaction to complete or
// for a change being written to end.
func (sh *shard) notifyChanged() {
	sh.mu.Lock()
	close(sh.changed)
	sh.changed = make(chan struct{})
	sh.mu.Unlock()
}

// expireIDs forgets the transactional ids idle longer than IDExpiration with no
// transaction open: a tombstone each, in one batch.
func (sh *shard) expireIDs(now time.Time) {
	sh.mu.Lock()
	var expired []*txnMeta
	for _, m := range sh.txns {
		if m.pending || m.pid < 0 || now.Sub(m.updated) <= sh.c.cfg.IDExpiration {
			continue
		}
		if m.state == Empty || m.state == CompleteCommit || m.state == CompleteAbort {
			m.pending = true
			expired = append(expired, m)
		}
	}
	sh.mu.Unlock()
	if len(expired) == 0 {
		return
	}
	recs := make([]batch.Record, len(expired))
	for i, m := range expired {
		recs[i] = tombstone(m.id)
	}
	err := sh.writeRecords(recs)
	sh.mu.Lock()
	for _, m := range expired {
		m.pending = false
		if err == nil && sh.txns[m.id] == m {
			delete(sh.txns, m.id)
		}
	}
	sh.mu.Unlock()
	sh.notifyChanged()
	if err != nil {
		sh.c.logger.Warn("transaction coordinator: expiring transactional ids", "partition", sh.id, "err", err)
		return
	}
	sh.c.logger.Info("transaction coordinator: expired idle transactional ids", "partition", sh.id, "count", len(expired))
}
