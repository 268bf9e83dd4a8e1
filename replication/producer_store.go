package replication

// Producer state in the Store (docs/format/meta-index.md, tags 0x05 and 0x0a).
// Everything here is derived from the log; the Store only saves rereading it:
//   - every aborted transaction is recorded when its marker is appended (leader or
//     follower), without fsync;
//   - a snapshot of the producers, open transactions and marker state, taken at
//     the log end, is written at every open, every few seconds while the state
//     changes, and at close, without fsync (producer_snapshot.go: only the
//     producers changed since the last one are copied under appendMu).
//
// A producer idle past producer.id.expiration.ms with no transaction open is
// forgotten (with its marker count and coordinator epoch) by the retention
// check and by every restore, as Kafka's snapshot load skips expired ones.
//
// An open restores the snapshot when it lies within the log (log start <= its
// offset <= log end), keeps the recorded aborted transactions below it, and
// replays only the log after it; otherwise it replays the whole log. Pebble
// keeps its writes in order, so a snapshot that survived a crash comes with
// every aborted transaction recorded before it. A snapshot past the log end
// (the log lost an unsynced tail) is replaced durably before anything is
// appended again, and a truncation durably drops what is past its offset
// first, so a snapshot never describes a history the log no longer has.

import (
	"math"
	"time"

	"skiff/internal/batch"
)

// restoreProducersLocked sets producer and transaction state from the Store's
// snapshot and the log after it, or from the whole log when the snapshot is
// missing, outside the log, damaged, or full is set; it then brings the Store in
// step (aborted transactions outside the log dropped, those replayed recorded, a
// new snapshot at the log end). each, if not nil, sees every replayed batch.
// The caller holds appendMu.
func (p *Partition) restoreProducersLocked(full bool, each func(h *batch.Header)) error {
	start, end := p.log.LogStartOffset(), p.log.LogEndOffset()
	p.producers = newProducerStates()
	p.txns.reset()
	now := time.Now()
	off, snap, ok, err := p.store.ProducerSnapshot()
	if err != nil {
		return err
	}
	from := start
	u := ProducerStateUpdate{Drop: [][2]int64{{0, math.MaxInt64}}}
	switch {
	case !ok:
	case full:
		// A snapshot past the log end must not outlive its replacement's
		// write: the log may grow past it again under another history.
		u.Sync = off > end
	case off < start || off > end:
		// Behind the log start (retention or DeleteRecords), or past the log
		// end (an unsynced tail lost): the whole log decides, and the snapshot
		// is replaced durably before anything is appended past it.
		p.logger.Info("producer snapshot outside the log; replaying the whole log", "snapshot_offset", off, "log_start_offset", start, "log_end_offset", end)
		u.Sync = true
	default:
		if err := p.restoreSnapshotLocked(snap, now); err != nil {
			p.logger.Warn("producer snapshot unreadable; replaying the whole log", "err", err)
			p.producers = newProducerStates()
			p.txns.reset()
			u.Sync = true
			break
		}
		var kept []abortedRecord
		if err := p.store.AbortedTxnRecords(func(a abortedRecord) error {
			if a.LastOffset >= start && a.LastOffset < off {
				kept = append(kept, a)
			}
			return nil
		}); err != nil {
			return err
		}
		p.txns.mu.Lock()
		p.txns.aborted = kept
		p.txns.mu.Unlock()
		from = off
		u.Drop = [][2]int64{{0, start}, {off, math.MaxInt64}}
	}
	if err := p.log.ScanHeaders(from, func(h batch.Header) error {
		if from > start && h.BaseOffset < from {
			return nil // the snapshot has it
		}
		a, err := p.noteLocked(&h, nil)
		if a != nil {
			u.Aborted = append(u.Aborted, *a)
		}
		if each != nil {
			each(&h)
		}
		return err
	}); err != nil {
		return err
	}
	if p.producerExpiry > 0 {
		// As Kafka's load of a snapshot: a producer idle for longer is gone,
		// whether or not it was forgotten before the restart.
		p.expireProducersLocked(now.Add(-p.producerExpiry).UnixMilli())
	}
	p.pruneTxnProducersLocked()
	rows := p.allRowsLocked()
	u.SetSnapshot, u.SnapshotOffset, u.Snapshot = true, end, encodeSnapshot(rows.rows)
	p.snap.storeMu.Lock()
	defer p.snap.storeMu.Unlock()
	p.restartSnapshotsLocked(rows)
	if err := p.store.UpdateProducerState(u); err != nil {
		return err
	}
	p.snap.offset, p.abortUnrecorded = end, false
	return nil
}

// dropProducerStoreFromLocked durably forgets what the Store holds at or past
// offset, before the log is truncated there: the aborted transactions whose
// markers go, and the snapshot if it is past offset. The caller holds appendMu.
func (p *Partition) dropProducerStoreFromLocked(offset int64) error {
	s := &p.snap
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	s.gen++ // a snapshot captured before must not land after this
	u := ProducerStateUpdate{Drop: [][2]int64{{offset, math.MaxInt64}}, Sync: true}
	if s.offset > offset {
		u.DeleteSnapshot = true
		s.offset = -1
	}
	return p.store.UpdateProducerState(u)
}

// forgetAbortedBefore drops the aborted transactions whose markers are below
// start, the new log start, in memory and in the Store.
func (p *Partition) forgetAbortedBefore(start int64) {
	p.txns.forgetBefore(start)
	if err := p.store.UpdateProducerState(ProducerStateUpdate{Drop: [][2]int64{{0, start}}}); err != nil {
		p.logger.Warn("forgetting aborted transactions below the log start", "err", err) // dropped at the next open
	}
}
