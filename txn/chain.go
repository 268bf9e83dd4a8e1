package txn

// Pipelined implicit adds (TV2): a TV2 producer's leaders add their
// partitions at once, each for its first batch, and the first of them may
// start the transaction while the previous one's markers are written
// (carry.go). Rather than wait for a record's commit, the next add of the
// producer appends its record right after, built on the one in flight: the
// log keeps them in order, and each is answered once its own record is
// committed. TV1 requests keep transition (one change in flight).

import "time"

// addChain is the implicit adds of one producer whose records are appended
// and not all committed yet. Guarded by the shard's mu.
type addChain struct {
	tentative *txnMeta      // the state of the latest record appended
	appended  chan struct{} // closed once the latest record is appended, or failed to
	writes    int           // adds not answered yet
	seq       uint64        // of the latest record
	applied   uint64        // of the latest record committed and applied
}

// chainableLocked reports whether an implicit add of (pid, epoch) goes on the
// chain of m: one is in flight for that producer's open transaction, or none
// is and the producer may change its transaction now.
func chainableLocked(m *txnMeta, pid int64, epoch int16) bool {
	switch {
	case m == nil || m.completeUnwritten:
		return false
	case m.chain != nil:
		t := m.chain.tentative
		return t.pid == pid && t.epoch == epoch && t.state == Ongoing
	}
	return !m.pending && m.pid == pid && m.epoch == epoch &&
		(m.state == Ongoing || m.state == Empty || m.state == CompleteCommit || m.state == CompleteAbort)
}

// chainAddLocked adds parts to the producer's transaction as an implicit add
// on m's chain (chainableLocked holds). It is called with sh.mu held and
// releases it.
func (sh *shard) chainAddLocked(m *txnMeta, parts []TopicPartition) int16 {
	base := m
	if m.chain != nil {
		base = m.chain.tentative
	}
	if m.chain == nil && base.state == Ongoing {
		missing := false
		for _, tp := range parts {
			if _, ok := base.partitions[tp]; !ok {
				missing = true
				break
			}
		}
		if !missing {
			sh.mu.Unlock()
			return 0
		}
	}
	next := base.clone()
	now := time.Now()
	if base.state != Ongoing {
		next.partitions, next.started = make(map[TopicPartition]struct{}, len(parts)), now
	}
	for _, tp := range parts {
		next.partitions[tp] = struct{}{}
	}
	next.state, next.updated, next.tv2 = Ongoing, now, true
	return sh.chainWriteLocked(m, next)
}

// chainWriteLocked appends next, m's state after an implicit add, after the
// record of m in flight on its chain if any, and answers once it is
// committed. A committed state is applied only if newer than the chain's last
// applied (they commit in log order, their waiters wake in any); a record
// whose append failed is covered by a later one, built on it. When the chain
// empties, m is pending again only while its markers are written; a prepared
// m whose completion stopped for a carrying record that failed is completed
// again. It is called with sh.mu held and releases it.
func (sh *shard) chainWriteLocked(m, next *txnMeta) int16 {
	ch := m.chain
	if ch == nil {
		ch = &addChain{}
		m.chain = ch
	}
	ch.writes++
	ch.seq++
	seq, prev, mine := ch.seq, ch.appended, make(chan struct{})
	ch.appended, ch.tentative = mine, next
	next.pending, next.completeUnwritten = false, false
	m.pending = true
	sh.mu.Unlock()
	if prev != nil {
		<-prev // the id's records keep their order in the log
	}
	res, err := sh.appendStates(next)
	close(mine)
	if err == nil {
		err = sh.waitCommitted(res)
	}
	sh.mu.Lock()
	if err == nil && seq > ch.applied {
		ch.applied = seq
		m.set(next)
		m.pending = true // until the chain empties: no other change meanwhile
		if m.carried != nil && m.carried.done.Load() {
			m.carried = nil // its markers were committed meanwhile
		}
	}
	ch.writes--
	restart := false
	if ch.writes == 0 {
		m.chain, m.carrying = nil, nil
		prepared := m.state == PrepareCommit || m.state == PrepareAbort
		m.pending = prepared && m.completing
		restart = prepared && !m.completing
	}
	sh.mu.Unlock()
	sh.notifyChanged()
	if restart {
		sh.startCompletion(m) // markers again (idempotent), then the record
	}
	return waitCode(err)
}
