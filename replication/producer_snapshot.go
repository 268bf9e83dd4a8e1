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
	"sync"
	"time"
)

// snapshotVersion is the first byte of a snapshot (part of the format).
const snapshotVersion = 1

// snapRow is what a snapshot holds of one producer id (no pointers: copying
// one under appendMu allocates nothing).
type snapRow struct {
	pid           int64
	hasEntry      bool // idempotence state: epoch, lastMs, batches
	epoch         int16
	nBatches      uint8
	lastMs        int64
	batches       [maxBatchesRetained]batchRecord
	hasOpen       bool // a transaction open since openFirst, at openEpoch
	openEpoch     int16
	openFirst     int64
	markers       uint64 // 0: none
	hasCoordEpoch bool
	coordEpoch    int32
}

func (r *snapRow) empty() bool {
	return !r.hasEntry && !r.hasOpen && r.markers == 0 && !r.hasCoordEpoch
}

// snapRows is a set of rows by producer id.
type snapRows struct {
	idx  map[int64]int // into rows
	rows []snapRow
}

func newSnapRows(n int) *snapRows {
	return &snapRows{idx: make(map[int64]int, n), rows: make([]snapRow, 0, n)}
}

// set adds r, or removes its producer id when r is empty.
func (s *snapRows) set(r *snapRow) {
	i, ok := s.idx[r.pid]
	switch {
	case ok && r.empty():
		last := len(s.rows) - 1
		s.rows[i] = s.rows[last]
		s.idx[s.rows[i].pid] = i
		s.rows = s.rows[:last]
		delete(s.idx, r.pid)
	case ok:
		s.rows[i] = *r
	case !r.empty():
		s.idx[r.pid] = len(s.rows)
		s.rows = append(s.rows, *r)
	}
}

// snapshotState is a partition's snapshot bookkeeping.
type snapshotState struct {
	// mu makes one snapshot at a time; it guards rows and changed (a buffer of
	// captureSnapshot) and is taken before appendMu.
	mu      sync.Mutex
	rows    *snapRows // the state at the latest capture
	changed []snapRow
	// dirty holds the producer ids changed since the latest capture, and fresh
	// the rows of a restore since, which the next capture takes whole; guarded
	// by appendMu.
	dirty map[int64]struct{}
	fresh *snapRows
	// storeMu orders the snapshot writes with the truncations' and restores'
	// Store writes (taken after appendMu, or alone). gen counts truncations and
	// restores, written under both locks; offset is the Store's snapshot offset
	// (-1: none), guarded by storeMu. deleted, guarded by storeMu, is set once
	// the partition is being deleted: a snapshot or high watermark checkpoint
	// still under way (the checkpoint loop listed the partition before) must
	// not write to the Store after the partition's entries were removed.
	storeMu sync.Mutex
	gen     uint64
	offset  int64
	deleted bool
}

func newSnapshotState() snapshotState {
	return snapshotState{rows: newSnapRows(0), dirty: map[int64]struct{}{}, offset: -1}
}

// rowLocked sets r to the row of producer pid. The caller holds appendMu and
// txns.mu.
func (p *Partition) rowLocked(pid int64, r *snapRow) {
	*r = snapRow{pid: pid}
	if e := p.producers.m[pid]; e != nil {
		r.hasEntry, r.epoch, r.lastMs = true, e.epoch, e.lastMs
		r.nBatches = uint8(copy(r.batches[:], e.batches))
	}
	x := p.txns
	if t, ok := x.open[pid]; ok {
		r.hasOpen, r.openEpoch, r.openFirst = true, t.Epoch, t.FirstOffset
	}
	r.markers = x.markers[pid]
	r.coordEpoch, r.hasCoordEpoch = x.coordinatorEpochs[pid]
}

// allRowsLocked returns the rows of every producer. The caller holds appendMu.
func (p *Partition) allRowsLocked() *snapRows {
	x := p.txns
	x.mu.Lock()
	defer x.mu.Unlock()
	rows := newSnapRows(len(p.producers.m))
	var r snapRow
	add := func(pid int64) {
		if _, ok := rows.idx[pid]; !ok {
			p.rowLocked(pid, &r)
			rows.set(&r)
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
func (p *Partition) restartSnapshotsLocked(rows *snapRows) {
	p.snap.fresh = rows
	p.snap.dirty = make(map[int64]struct{})
	p.snap.gen++
}

// captureSnapshot copies, under appendMu, the rows changed since the latest
// capture (into snap.changed), with the log end they are the state at; ok is
// false when nothing changed or no snapshot may be taken. The caller holds
// snap.mu.
func (p *Partition) captureSnapshot() (end int64, gen uint64, ok bool) {
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
		return 0, 0, false
	}
	if cap(s.changed) < len(s.dirty) {
		s.changed = make([]snapRow, 0, len(s.dirty))
	}
	s.changed = s.changed[:len(s.dirty)]
	i := 0
	p.txns.mu.Lock()
	for pid := range s.dirty {
		p.rowLocked(pid, &s.changed[i])
		i++
	}
	p.txns.mu.Unlock()
	s.dirty = make(map[int64]struct{}) // clear would cost the most it ever held
	return end, s.gen, true
}

// snapshotProducers writes a snapshot of the producer state at the log end if
// anything changed since the last one. Only the capture holds appendMu.
func (p *Partition) snapshotProducers() error {
	p.snap.mu.Lock()
	defer p.snap.mu.Unlock()
	end, gen, ok := p.captureSnapshot()
	if !ok {
		return nil
	}
	return p.writeSnapshot(end, gen)
}

// writeSnapshot brings the rows up to the latest capture and writes them. The
// caller holds snap.mu.
func (p *Partition) writeSnapshot(end int64, gen uint64) error {
	s := &p.snap
	for i := range s.changed {
		s.rows.set(&s.changed[i])
	}
	b := encodeSnapshot(s.rows.rows)
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	if s.deleted {
		return nil
	}
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
func encodeSnapshot(rows []snapRow) []byte {
	size := 1 + 4*4
	var nProds, nOpens, nMarks, nCoords uint32
	for i := range rows {
		r := &rows[i]
		if r.hasEntry {
			nProds++
			size += 19 + 24*int(r.nBatches)
		}
		if r.hasOpen {
			nOpens++
			size += 18
		}
		if r.markers != 0 {
			nMarks++
			size += 16
		}
		if r.hasCoordEpoch {
			nCoords++
			size += 12
		}
	}
	be := binary.BigEndian
	b := make([]byte, 0, size)
	b = append(b, snapshotVersion)
	b = be.AppendUint32(b, nProds)
	for i := range rows {
		if r := &rows[i]; r.hasEntry {
			b = be.AppendUint64(b, uint64(r.pid))
			b = be.AppendUint16(b, uint16(r.epoch))
			b = be.AppendUint64(b, uint64(r.lastMs))
			b = append(b, r.nBatches)
			for _, x := range r.batches[:r.nBatches] {
				b = be.AppendUint32(b, uint32(x.firstSeq))
				b = be.AppendUint32(b, uint32(x.lastSeq))
				b = be.AppendUint64(b, uint64(x.baseOffset))
				b = be.AppendUint64(b, uint64(x.lastOffset))
			}
		}
	}
	b = be.AppendUint32(b, nOpens)
	for i := range rows {
		if r := &rows[i]; r.hasOpen {
			b = be.AppendUint64(b, uint64(r.pid))
			b = be.AppendUint16(b, uint16(r.openEpoch))
			b = be.AppendUint64(b, uint64(r.openFirst))
		}
	}
	b = be.AppendUint32(b, nMarks)
	for i := range rows {
		if r := &rows[i]; r.markers != 0 {
			b = be.AppendUint64(b, uint64(r.pid))
			b = be.AppendUint64(b, r.markers)
		}
	}
	b = be.AppendUint32(b, nCoords)
	for i := range rows {
		if r := &rows[i]; r.hasCoordEpoch {
			b = be.AppendUint64(b, uint64(r.pid))
			b = be.AppendUint32(b, uint32(r.coordEpoch))
		}
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
