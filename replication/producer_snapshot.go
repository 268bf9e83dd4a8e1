package replication

// Producer snapshots (docs/format/meta-index.md, tag 0x05) without holding the
// append lock for all producers: appends mark the producers they change, a
// snapshot copies only those under appendMu (into rows, its own mirror of the
// state at its latest capture), and encodes and writes outside it. A restore
// hands the snapshotter a fresh mirror of everything; a truncation or restore
// that happens between a capture and its write voids the write.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// snapshotVersion is the first byte of a snapshot (part of the format).
const snapshotVersion = 1

// snapRow is what a snapshot holds of one producer id.
type snapRow struct {
	entry         *producerEntry // nil: no idempotence state
	open          OpenTxn
	hasOpen       bool
	markers       uint64 // 0: none
	coordEpoch    int32
	hasCoordEpoch bool
}

func (r *snapRow) empty() bool {
	return r.entry == nil && !r.hasOpen && r.markers == 0 && !r.hasCoordEpoch
}

// snapshotState is a partition's snapshot bookkeeping.
type snapshotState struct {
	// mu makes one snapshot at a time; it guards rows and is taken before appendMu.
	mu   sync.Mutex
	rows map[int64]snapRow // the state at the latest capture, by producer id
	// dirty holds the producer ids changed since the latest capture, and fresh
	// the rows of a restore since, which the next capture takes whole; guarded
	// by appendMu.
	dirty map[int64]struct{}
	fresh map[int64]snapRow
	// storeMu orders the snapshot writes with the truncations' and restores'
	// Store writes (taken after appendMu, or alone). gen counts truncations and
	// restores, written under both locks; offset is the Store's snapshot offset
	// (-1: none), guarded by storeMu.
	storeMu sync.Mutex
	gen     uint64
	offset  int64
}

func newSnapshotState() snapshotState {
	return snapshotState{rows: map[int64]snapRow{}, dirty: map[int64]struct{}{}, offset: -1}
}

// rowLocked returns the snapshot row of producer pid. The caller holds appendMu
// and txns.mu.
func (p *Partition) rowLocked(pid int64) snapRow {
	var r snapRow
	if e := p.producers.m[pid]; e != nil {
		c := *e
		c.batches = slices.Clone(e.batches)
		r.entry = &c
	}
	x := p.txns
	r.open, r.hasOpen = x.open[pid]
	r.markers = x.markers[pid]
	r.coordEpoch, r.hasCoordEpoch = x.coordinatorEpochs[pid]
	return r
}

// allRowsLocked returns the rows of every producer. The caller holds appendMu.
func (p *Partition) allRowsLocked() map[int64]snapRow {
	x := p.txns
	x.mu.Lock()
	defer x.mu.Unlock()
	rows := make(map[int64]snapRow, len(p.producers.m))
	add := func(pid int64) {
		if _, ok := rows[pid]; !ok {
			rows[pid] = p.rowLocked(pid)
		}
	}
	for pid := range p.producers.m {
		add(pid)
	}
	for pid := range x.open {
		add(pid)
	}
	for pid := range x.markers {
		add(pid)
	}
	for pid := range x.coordinatorEpochs {
		add(pid)
	}
	return rows
}

// changedLocked marks producer pid changed since the latest capture. The caller
// holds appendMu.
func (p *Partition) changedLocked(pid int64) {
	if pid >= 0 {
		p.snap.dirty[pid] = struct{}{}
	}
}

// restartSnapshotsLocked hands the snapshotter the rows of the whole state, as
// a restore left it, and voids a snapshot captured before. The caller holds
// appendMu and snap.storeMu.
func (p *Partition) restartSnapshotsLocked(rows map[int64]snapRow) {
	p.snap.fresh = rows
	clear(p.snap.dirty)
	p.snap.gen++
}

// pidRow is a changed row; gone: the producer id has no state left.
type pidRow struct {
	pid  int64
	row  snapRow
	gone bool
}

// captureSnapshot copies, under appendMu, what changed since the latest
// capture, with the log end it is the state at; ok is false when nothing
// changed or no snapshot may be taken.
func (p *Partition) captureSnapshot() (end int64, changed []pidRow, gen uint64, ok bool) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	s := &p.snap
	if s.fresh != nil {
		s.rows, s.fresh = s.fresh, nil
	}
	end = p.log.LogEndOffset()
	s.storeMu.Lock()
	same := end == s.offset
	s.storeMu.Unlock()
	if (same && len(s.dirty) == 0) || p.abortUnrecorded {
		// An aborted transaction the Store missed must stay above the
		// snapshot, where the next open replays it from the log.
		return 0, nil, 0, false
	}
	changed = make([]pidRow, 0, len(s.dirty))
	p.txns.mu.Lock()
	for pid := range s.dirty {
		r := p.rowLocked(pid)
		changed = append(changed, pidRow{pid: pid, row: r, gone: r.empty()})
	}
	p.txns.mu.Unlock()
	clear(s.dirty)
	return end, changed, s.gen, true
}

// snapshotProducers writes a snapshot of the producer state at the log end if
// anything changed since the last one. Only the capture holds appendMu.
func (p *Partition) snapshotProducers() error {
	s := &p.snap
	s.mu.Lock()
	defer s.mu.Unlock()
	end, changed, gen, ok := p.captureSnapshot()
	if !ok {
		return nil
	}
	for _, c := range changed {
		if c.gone {
			delete(s.rows, c.pid)
		} else {
			s.rows[c.pid] = c.row
		}
	}
	b := encodeSnapshot(s.rows)
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	if s.gen != gen {
		// A truncation or restore came after the capture: the captured state
		// may describe records the log no longer has.
		return nil
	}
	err := p.store.UpdateProducerState(ProducerStateUpdate{SetSnapshot: true, SnapshotOffset: end, Snapshot: b})
	if err == nil {
		s.offset = end
	}
	return err
}

// encodeSnapshot returns rows in the snapshot layout of meta-index.md.
func encodeSnapshot(rows map[int64]snapRow) []byte {
	be := binary.BigEndian
	var prods, opens, marks, coords []byte
	var nProds, nOpens, nMarks, nCoords uint32
	for pid, r := range rows {
		if e := r.entry; e != nil {
			nProds++
			prods = be.AppendUint64(prods, uint64(pid))
			prods = be.AppendUint16(prods, uint16(e.epoch))
			prods = be.AppendUint64(prods, uint64(e.lastMs))
			prods = append(prods, byte(len(e.batches)))
			for _, b := range e.batches {
				prods = be.AppendUint32(prods, uint32(b.firstSeq))
				prods = be.AppendUint32(prods, uint32(b.lastSeq))
				prods = be.AppendUint64(prods, uint64(b.baseOffset))
				prods = be.AppendUint64(prods, uint64(b.lastOffset))
			}
		}
		if r.hasOpen {
			nOpens++
			opens = be.AppendUint64(opens, uint64(pid))
			opens = be.AppendUint16(opens, uint16(r.open.Epoch))
			opens = be.AppendUint64(opens, uint64(r.open.FirstOffset))
		}
		if r.markers != 0 {
			nMarks++
			marks = be.AppendUint64(marks, uint64(pid))
			marks = be.AppendUint64(marks, r.markers)
		}
		if r.hasCoordEpoch {
			nCoords++
			coords = be.AppendUint64(coords, uint64(pid))
			coords = be.AppendUint32(coords, uint32(r.coordEpoch))
		}
	}
	b := make([]byte, 0, 1+4*4+len(prods)+len(opens)+len(marks)+len(coords))
	b = append(b, snapshotVersion)
	b = append(be.AppendUint32(b, nProds), prods...)
	b = append(be.AppendUint32(b, nOpens), opens...)
	b = append(be.AppendUint32(b, nMarks), marks...)
	return append(be.AppendUint32(b, nCoords), coords...)
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
