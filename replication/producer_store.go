package replication

// Producer state in the Store (docs/format/meta-index.md, tags 0x05 and 0x0a).
// Everything here is derived from the log; the Store only saves rereading it:
//   - every aborted transaction is recorded when its marker is appended (leader or
//     follower), without fsync;
//   - a snapshot of the producers, open transactions and marker state, taken at
//     the log end, is written at every open, every few seconds while the log end
//     moves, and at close, without fsync.
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
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"skiff/internal/batch"
)

// snapshotVersion is the first byte of a snapshot (part of the format).
const snapshotVersion = 1

// encodeSnapshotLocked returns the producer and transaction state (all but the
// aborted transactions) in the snapshot layout of meta-index.md. The caller
// holds appendMu.
func (p *Partition) encodeSnapshotLocked() []byte {
	be := binary.BigEndian
	b := []byte{snapshotVersion}
	b = be.AppendUint32(b, uint32(len(p.producers.m)))
	for pid, e := range p.producers.m {
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint64(b, uint64(e.lastMs))
		b = append(b, byte(len(e.batches)))
		for _, r := range e.batches {
			b = be.AppendUint32(b, uint32(r.firstSeq))
			b = be.AppendUint32(b, uint32(r.lastSeq))
			b = be.AppendUint64(b, uint64(r.baseOffset))
			b = be.AppendUint64(b, uint64(r.lastOffset))
		}
	}
	x := p.txns
	x.mu.Lock()
	defer x.mu.Unlock()
	b = be.AppendUint32(b, uint32(len(x.open)))
	for pid, t := range x.open {
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint16(b, uint16(t.Epoch))
		b = be.AppendUint64(b, uint64(t.FirstOffset))
	}
	b = be.AppendUint32(b, uint32(len(x.markers)))
	for pid, n := range x.markers {
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint64(b, n)
	}
	b = be.AppendUint32(b, uint32(len(x.coordinatorEpochs)))
	for pid, ce := range x.coordinatorEpochs {
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint32(b, uint32(ce))
	}
	return b
}

// errBadSnapshot: a snapshot does not decode (the whole log is replayed instead).
var errBadSnapshot = errors.New("replication: bad producer snapshot")

// snapshotReader reads a snapshot's fields, remembering the first short read.
type snapshotReader struct {
	b   []byte
	bad bool
}

func (r *snapshotReader) take(n int) []byte {
	if r.bad || len(r.b) < n {
		r.bad = true
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *snapshotReader) u64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }
func (r *snapshotReader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *snapshotReader) u16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }

// count reads a count of entries of at least size bytes each, refusing one the
// rest cannot hold (no allocation from a damaged count).
func (r *snapshotReader) count(size int) int {
	n := int(r.u32())
	if n*size > len(r.b) {
		r.bad = true
		return 0
	}
	return n
}

// restoreSnapshotLocked sets the producer and transaction state (but the aborted
// transactions) from snapshot b; open transactions count as started at now.
// The caller holds appendMu.
func (p *Partition) restoreSnapshotLocked(b []byte, now time.Time) error {
	if len(b) == 0 || b[0] != snapshotVersion {
		return fmt.Errorf("%w: version %x", errBadSnapshot, b[:min(len(b), 1)])
	}
	r := &snapshotReader{b: b[1:]}
	ps := newProducerStates()
	for range r.count(19) {
		pid := int64(r.u64())
		e := &producerEntry{epoch: int16(r.u16()), lastMs: int64(r.u64())}
		n := int(r.take(1)[0])
		if n > maxBatchesRetained {
			r.bad = true
		}
		for range min(n, maxBatchesRetained) {
			e.batches = append(e.batches, batchRecord{firstSeq: int32(r.u32()), lastSeq: int32(r.u32()),
				baseOffset: int64(r.u64()), lastOffset: int64(r.u64())})
		}
		ps.m[pid] = e
	}
	x := newTxnIndex()
	for range r.count(18) {
		t := OpenTxn{ProducerID: int64(r.u64()), Epoch: int16(r.u16()), FirstOffset: int64(r.u64()), Started: now}
		x.open[t.ProducerID] = t
		x.firstUnstable = min(x.firstUnstable, t.FirstOffset)
	}
	for range r.count(16) {
		pid := int64(r.u64())
		x.markers[pid] = r.u64()
	}
	for range r.count(12) {
		pid := int64(r.u64())
		x.coordinatorEpochs[pid] = int32(r.u32())
	}
	if r.bad || len(r.b) != 0 {
		return errBadSnapshot
	}
	p.producers = ps
	p.txns.mu.Lock()
	p.txns.open, p.txns.firstUnstable, p.txns.markers, p.txns.coordinatorEpochs = x.open, x.firstUnstable, x.markers, x.coordinatorEpochs
	p.txns.mu.Unlock()
	return nil
}

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
	u.SetSnapshot, u.SnapshotOffset, u.Snapshot = true, end, p.encodeSnapshotLocked()
	if err := p.store.UpdateProducerState(u); err != nil {
		return err
	}
	p.snapOffset, p.abortUnrecorded = end, false
	return nil
}

// dropProducerStoreFromLocked durably forgets what the Store holds at or past
// offset, before the log is truncated there: the aborted transactions whose
// markers go, and the snapshot if it is past offset. The caller holds appendMu.
func (p *Partition) dropProducerStoreFromLocked(offset int64) error {
	u := ProducerStateUpdate{Drop: [][2]int64{{offset, math.MaxInt64}}, Sync: true}
	if p.snapOffset > offset {
		u.DeleteSnapshot = true
		p.snapOffset = -1
	}
	return p.store.UpdateProducerState(u)
}

// snapshotProducers writes a snapshot of the producer state at the log end if
// the log end moved since the last one.
func (p *Partition) snapshotProducers() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	end := p.log.LogEndOffset()
	if end == p.snapOffset || p.abortUnrecorded {
		// An aborted transaction the Store missed must stay above the
		// snapshot, where the next open replays it from the log.
		return nil
	}
	// Written under appendMu: a truncation's drop must not be overtaken by an
	// older snapshot.
	err := p.store.UpdateProducerState(ProducerStateUpdate{SetSnapshot: true, SnapshotOffset: end, Snapshot: p.encodeSnapshotLocked()})
	if err == nil {
		p.snapOffset = end
	}
	return err
}

// forgetAbortedBefore drops the aborted transactions whose markers are below
// start, the new log start, in memory and in the Store.
func (p *Partition) forgetAbortedBefore(start int64) {
	p.txns.forgetBefore(start)
	if err := p.store.UpdateProducerState(ProducerStateUpdate{Drop: [][2]int64{{0, start}}}); err != nil {
		p.logger.Warn("forgetting aborted transactions below the log start", "err", err) // dropped at the next open
	}
}
