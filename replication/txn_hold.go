package replication

// The hold of transaction version 2 (KIP-890 part 2; docs/design/txn-v2.md §3).
// A TV2 producer bumps its epoch with every EndTxn and may start its next
// transaction before the markers of the one it ended are written: Skiff's
// coordinator carries the pending completion in the next Ongoing record instead of
// making the producer wait. A batch of the new transaction (epoch E2) that reaches
// a partition where the producer's previous transaction (epoch E < E2) is still
// open waits here until that transaction's marker is appended: log order then
// puts the marker before the batch on every replica, so the marker closes only
// the transaction it ends (observe keys on the producer id, whatever the epoch).
//
// Nothing here is on disk: a hold is a wait of the request path (kafkaapi's
// Produce v12) before it appends, off the connection loop and without appendMu.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
)

// MarkerHoldTimeout bounds a hold: a previous transaction whose marker takes
// longer (its coordinator moved, or a leader of another of its partitions is
// slow) makes the batch CONCURRENT_TRANSACTIONS, which TV2 producers retry;
// never a fatal code for something transient. Markers usually follow EndTxn's
// answer within a few milliseconds.
const MarkerHoldTimeout = time.Second

// AwaitPreviousMarker returns once no transaction of producer pid at an epoch
// below epoch is open on this partition, so that a transactional batch of pid
// at epoch may be appended: at once when none is, else when its marker is
// appended. It fails with CONCURRENT_TRANSACTIONS after MarkerHoldTimeout,
// NOT_LEADER_OR_FOLLOWER if this replica stops leading or its leader epoch
// changes meanwhile (the log may be truncated), or ctx's error. The batch then
// goes to AppendTV2, which checks the same under the append lock: when nothing
// was open, a late batch of the ended transaction may still land before it.
func (p *Partition) AwaitPreviousMarker(ctx context.Context, pid int64, epoch int16) error {
	prev, held := p.previousTxn(pid, epoch)
	if !held {
		return nil
	}
	leaderEpoch := p.leaderEpoch.Load()
	// Woken by every append (the marker's among them) and every change of
	// leadership (notify); a hold is short and rare, so the extra wake-ups of
	// other appends cost less than a waiter list of its own.
	ch := make(chan struct{}, 1)
	p.AddWaiter(ch)
	defer p.RemoveWaiter(ch)
	p.holds.Add(1)
	defer p.holds.Add(-1)
	timer := time.NewTimer(MarkerHoldTimeout)
	defer timer.Stop()
	for {
		if !p.IsLeader() || p.leaderEpoch.Load() != leaderEpoch {
			return fmt.Errorf("%s-%d stopped leading (epoch %d) while producer %d's batch at epoch %d waited for the marker of its transaction at %d: %w",
				p.Topic, p.ID, leaderEpoch, pid, epoch, prev.Epoch, kerr.NotLeaderForPartition)
		}
		if prev, held = p.previousTxn(pid, epoch); !held {
			return nil
		}
		select {
		case <-ch:
		case <-timer.C:
			return fmt.Errorf("producer %d's batch at epoch %d waited %v for the marker of its transaction at epoch %d from offset %d of %s-%d: %w",
				pid, epoch, MarkerHoldTimeout, prev.Epoch, prev.FirstOffset, p.Topic, p.ID, kerr.ConcurrentTransactions)
		case <-ctx.Done():
			return fmt.Errorf("producer %d's batch at epoch %d waiting for a marker on %s-%d: %w", pid, epoch, p.Topic, p.ID, ctx.Err())
		}
	}
}

// AppendTV2 is Append for a batch of a transaction version 2 producer (Produce
// v12), after AwaitPreviousMarker: a transactional batch is refused with
// CONCURRENT_TRANSACTIONS (which the producer retries, and the retry holds)
// if a transaction of its producer at an older epoch is open here again. That
// takes a late batch of the ended transaction, added to it here before it
// ended, that was appended between the hold and this append: joined to it, the
// new batch would be decided by the old transaction's marker.
func (p *Partition) AppendTV2(records []byte, acks int16) (AppendResult, error) {
	return p.append(records, acks, nil, true)
}

// AppendFromCoordinatorTV2 is AppendFromCoordinator for the offsets of a
// transaction version 2 producer (TxnOffsetCommit v5), after
// AwaitPreviousMarker, with AppendTV2's check.
func (p *Partition) AppendFromCoordinatorTV2(records []byte) (AppendResult, error) {
	return p.appendFromCoordinator(records, nil, true)
}

// heldLocked refuses a TV2 transactional batch h while its producer's
// transaction at an older epoch is open here. The caller holds appendMu.
func (p *Partition) heldLocked(h *batch.Header) error {
	if prev, held := p.previousTxn(h.ProducerID, h.ProducerEpoch); held {
		return fmt.Errorf("producer %d's batch at epoch %d, while its transaction at epoch %d from offset %d of %s-%d is open: %w",
			h.ProducerID, h.ProducerEpoch, prev.Epoch, prev.FirstOffset, p.Topic, p.ID, kerr.ConcurrentTransactions)
	}
	return nil
}

// previousTxn returns producer pid's open transaction here when its epoch is
// below epoch, held true: a batch at epoch must wait for its marker.
func (p *Partition) previousTxn(pid int64, epoch int16) (t OpenTxn, held bool) {
	p.txns.mu.Lock()
	defer p.txns.mu.Unlock()
	t, open := p.txns.open[pid]
	return t, open && t.Epoch < epoch
}

// MarkerHolds returns how many batches wait in AwaitPreviousMarker now.
func (p *Partition) MarkerHolds() int { return int(p.holds.Load()) }
