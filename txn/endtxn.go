package txn

// EndTxn: a producer's decision to commit or abort its transaction.

import (
	"context"
	"time"
)

// EndTxn commits (commit set) or aborts the transaction of id: the decision is
// recorded (PrepareCommit / PrepareAbort), then markers are written to every
// partition of the transaction, then it is recorded complete. EndTxn answers once
// the decision is committed, as Kafka does; the markers are written in the
// background, and the producer's next AddPartitionsToTxn or AddOffsetsToTxn
// waits for them (awaitCompletion). A retry of the decision answers once they
// are written.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) int16 {
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
	case m.pending, m.state == PrepareCommit, m.state == PrepareAbort:
		sh.mu.Unlock()
		return codeConcurrent
	case m.state != Ongoing:
		sh.mu.Unlock()
		return codeInvalidState
	}
	next := m.clone()
	next.state, next.updated = want, time.Now()
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
	ctx, cancel := context.WithTimeout(ctx, sh.c.cfg.CommitTimeout)
	defer cancel()
	for {
		sh.mu.Lock()
		st, changed := m.state, sh.changed
		sh.mu.Unlock()
		if st == done {
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
