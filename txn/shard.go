package txn

// A shard is one led partition of __transaction_state: the state of its
// transactional ids in memory, loaded from the log at election and changed by
// appending records that take effect once committed.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
	"skiff/replication"
)

const (
	readChunk  = 1 << 20
	retryLoad  = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

type shard struct {
	c     *Coordinator
	id    int32
	epoch int32 // leader epoch: the coordinator epoch written in markers
	log   Log

	ctx    context.Context // canceled by stop
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup // completions and the timeout loop
	ready  atomic.Bool

	mu      sync.Mutex
	txns    map[string]*txnMeta // guarded by mu
	changed chan struct{}       // closed and replaced when a transaction completes or a change is written; guarded by mu
	closing bool                // stop has begun: no new completion starts; guarded by mu
}

func newShard(c *Coordinator, id, epoch int32, log Log) *shard {
	sh := &shard{c: c, id: id, epoch: epoch, log: log, done: make(chan struct{}), txns: make(map[string]*txnMeta), changed: make(chan struct{})}
	sh.ctx, sh.cancel = context.WithCancel(context.Background())
	return sh
}

func (sh *shard) stop() {
	sh.mu.Lock()
	sh.closing = true
	sh.mu.Unlock()
	sh.cancel()
	<-sh.done
	sh.wg.Wait()
}

// run loads the shard, resumes the completion of prepared transactions (and
// of those an Ongoing record carries), and aborts timed-out ones until stop.
func (sh *shard) run() {
	defer close(sh.done)
	for {
		err := sh.load()
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.NotLeaderForPartition) && sh.ctx.Err() == nil {
			sh.c.logger.Warn("transaction coordinator: loading __transaction_state failed; retrying", "partition", sh.id, "err", err)
		}
		select {
		case <-sh.ctx.Done():
			return
		case <-time.After(retryLoad):
		}
	}
	sh.mu.Lock()
	var prepared, carrying []*txnMeta
	for _, m := range sh.txns {
		if m.state == PrepareCommit || m.state == PrepareAbort {
			prepared = append(prepared, m)
		}
		if m.carried != nil {
			carrying = append(carrying, m)
		}
	}
	loaded := len(sh.txns) // under mu: once ready, requests add ids
	sh.mu.Unlock()
	sh.ready.Store(true)
	sh.c.logger.Debug("transaction coordinator: partition loaded", "partition", sh.id, "transactional_ids", loaded)
	for _, m := range prepared {
		sh.startCompletion(m)
	}
	for _, m := range carrying {
		sh.resendCarried(m)
	}
	t := time.NewTicker(sh.c.cfg.AbortCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-sh.ctx.Done():
			return
		case <-t.C:
			sh.abortTimedOut(time.Now())
			sh.expireIDs(time.Now())
		}
	}
}

// load brings the partition's store up to the log end at election, once
// everything in it is committed (the store applies only what it has not yet),
// and takes the last state of each transactional id from it.
func (sh *shard) load() error {
	target := sh.log.LogEndOffset()
	wait, cancel := context.WithTimeout(sh.ctx, sh.c.cfg.CommitTimeout)
	defer cancel()
	if target > 0 {
		// Whichever leadership wrote them: the records up to the log end at
		// election (a lost leadership resigns the shard).
		if err := sh.log.WaitHighWatermark(wait, -1, target-1); err != nil {
			return err
		}
	}
	applied, err := sh.c.apply(sh.id, sh.log, target)
	if err != nil {
		return err
	}
	if applied < target {
		return fmt.Errorf("__transaction_state-%d applied up to %d of %d", sh.id, applied, target)
	}
	store, _ := sh.c.storeFor(sh.id)
	txns := make(map[string]*txnMeta)
	err = store.States(func(key, value []byte) error {
		id, m, err := parseRecord(batch.Record{Key: key, Value: value})
		if err != nil || m == nil {
			sh.c.logger.Warn("transaction coordinator: skipping a stored state it cannot read", "partition", sh.id, "transactional_id", id, "err", err)
			return nil
		}
		txns[id] = m
		return nil
	})
	if err != nil {
		return fmt.Errorf("__transaction_state-%d: %w", sh.id, err)
	}
	sh.mu.Lock()
	sh.txns = txns
	sh.mu.Unlock()
	return nil
}

// write appends the records of states and waits until they are committed. The
// caller has marked the transactions pending and applies the states after.
func (sh *shard) write(ms ...*txnMeta) error {
	last, err := sh.appendStates(ms...)
	if err != nil {
		return err
	}
	return sh.waitCommitted(last)
}

// waitCommitted waits until the last record appended (last) is committed, in
// the leadership that appended it.
func (sh *shard) waitCommitted(last replication.AppendResult) error {
	ctx, cancel := context.WithTimeout(sh.ctx, sh.c.cfg.CommitTimeout)
	defer cancel()
	if err := sh.log.WaitHighWatermark(ctx, last.LeaderEpoch, last.LastOffset); err != nil {
		if sh.ctx.Err() != nil {
			return errNotCoordinator
		}
		return err
	}
	return nil
}

// appendStates appends the records of states, in one batch, and returns where
// it went.
func (sh *shard) appendStates(ms ...*txnMeta) (replication.AppendResult, error) {
	recs := make([]batch.Record, len(ms))
	for i, m := range ms {
		recs[i] = m.record()
	}
	return sh.appendRecords(recs)
}

func (sh *shard) appendRecords(recs []batch.Record) (replication.AppendResult, error) {
	if sh.ctx.Err() != nil {
		return replication.AppendResult{}, errNotCoordinator
	}
	res, err := sh.log.Append(batch.Build(time.Now().UnixMilli(), recs), -1)
	if err != nil {
		return res, fmt.Errorf("append to __transaction_state-%d: %w", sh.id, err)
	}
	return res, nil
}

// writeRecords appends recs and waits until they are committed.
func (sh *shard) writeRecords(recs []batch.Record) error {
	last, err := sh.appendRecords(recs)
	if err != nil {
		return err
	}
	return sh.waitCommitted(last)
}

// transition writes next, a changed copy of m (marked pending by the caller), and
// makes it m's state once committed; on failure m stays as it was. Either way m is
// no longer pending, and the requests waiting for it to change are woken. A
// complete state of m not yet written goes first, in the same batch.
func (sh *shard) transition(m, next *txnMeta) error {
	sh.mu.Lock()
	states := make([]*txnMeta, 0, 2)
	if m.completeUnwritten {
		states = append(states, m.clone())
	}
	sh.mu.Unlock()
	next.pending, next.completeUnwritten = false, false
	err := sh.write(append(states, next)...)
	sh.mu.Lock()
	if err == nil {
		m.set(next)
	}
	m.pending = false
	sh.mu.Unlock()
	sh.notifyChanged()
	return err
}
