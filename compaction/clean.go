package compaction

import (
	"context"
	"errors"
	"fmt"
	"time"

	"skiff/internal/batch"
	"skiff/internal/compress"
	"skiff/logstore"
)

// worker compacts one log at a time; each cleaner thread has one, with its own
// key map and buffers.
type worker struct {
	m        *offsetMap
	mapBytes int64 // the size m was made for
	dec      batch.Decoder
	rb       batch.Rebuilder
	recs     []batch.Record
	keys     []hashedKey
	out      []byte
	throttle *throttle
	// aborted holds the aborted transactions of the log being compacted, by
	// producer id (TxnTarget).
	aborted map[int64][]AbortedTxn
	// txnBatches holds the producers of which the pass read a transactional
	// data batch since their last marker (markers.go).
	txnBatches map[int64]bool
	// forget holds the aborted transactions of the group being rewritten whose
	// records are all gone: the target forgets them once the group is in place.
	forget []AbortedTxn

	ioPending int // bytes read or written not yet given to the throttle
}

// hashedKey is a key of a batch, hashed for the map, and its offset.
type hashedKey struct {
	h0     uint64
	h1     uint32
	offset int64
}

// passStats is what one pass did.
type passStats struct {
	segments     int   // segments rewritten
	files        int   // segment files they became
	bytesRead    int64 // both phases
	bytesWritten int64
	recordsIn    int64
	recordsOut   int64
	undecodable  int64 // batches kept whole because their records do not parse
	endOffset    int64 // the new cleaner point
	horizon      int64 // the earliest delete horizon of a kept tombstone, -1: none
}

// errNothing: the log had nothing to compact after all.
var errNothing = errors.New("compaction: nothing to compact")

// ioThrottleChunk is how many bytes go by between two throttle checks.
const ioThrottleChunk = 64 << 10

func (w *worker) io(ctx context.Context, n int) error {
	w.ioPending += n
	if w.ioPending < ioThrottleChunk {
		return nil
	}
	n, w.ioPending = w.ioPending, 0
	return w.throttle.wait(ctx, n)
}

// clean runs one pass over the log of t with span sp (planSpan), as of now: it
// maps the keys of the dirty segments to their latest offsets, then rewrites the
// span's segments up to the end of that map, in groups, keeping the latest
// record of each key and what lies past the map, and records the new cleaner
// point. ctx ends the pass early (the rewrite in progress is dropped).
func (w *worker) clean(ctx context.Context, t Target, sp span, now time.Time) (passStats, error) {
	l := t.Log()
	cfg := t.CompactionConfig()
	st := passStats{horizon: -1}
	w.loadAborted(t, l.LogStartOffset(), t.HighWatermark())
	if w.txnBatches == nil {
		w.txnBatches = make(map[int64]bool)
	}
	clear(w.txnBatches)
	if err := w.buildMap(ctx, l, sp, &st); err != nil {
		return st, err
	}
	end := w.m.latest + 1
	var todo []logstore.SegmentInfo
	for _, s := range sp.segs {
		if s.Base < end {
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		return st, errNothing
	}
	producers := t.LastProducerOffsets()
	segBytes := cfg.SegmentBytes
	if segBytes <= 0 {
		segBytes = logstore.DefaultSegmentBytes
	}
	tt, _ := t.(TxnTarget)
	for _, g := range groups(todo, segBytes) {
		w.forget = w.forget[:0]
		if err := w.rewrite(ctx, l, g, cfg, producers, now, &st); err != nil {
			return st, err
		}
		if tt != nil && len(w.forget) > 0 {
			tt.ForgetAbortedTxns(w.forget)
		}
		st.segments += len(g)
		st.files++
	}
	st.endOffset = end
	if err := l.SetCleanerPoint(end); err != nil {
		return st, err
	}
	return st, nil
}

// buildMap maps the keys of the dirty segments of sp (from the first dirty
// offset on) to their latest offsets, until the map is full; w.m.latest is then
// the last offset it covers.
func (w *worker) buildMap(ctx context.Context, l *logstore.Log, sp span, st *passStats) error {
	m := w.m
	m.reset(sp.firstDirty)
	for _, s := range sp.segs[sp.dirty:] {
		full := false
		err := l.ScanSegment(s.Base, func(h batch.Header, b []byte) error {
			st.bytesRead += int64(len(b))
			if err := w.io(ctx, len(b)); err != nil {
				return err
			}
			if h.LastOffset() < sp.firstDirty || h.Control() || w.isAborted(&h) {
				m.latest = max(m.latest, h.LastOffset())
				return nil
			}
			// The keys of a batch are hashed first, then put, each put
			// warming the slot of a key after it (putAll).
			w.keys = w.keys[:0]
			err := w.dec.Keys(b, func(key []byte, offset int64) error {
				if key != nil && offset >= sp.firstDirty {
					h0, h1 := m.hash(key)
					w.keys = append(w.keys, hashedKey{h0, h1, offset})
				}
				return nil
			})
			switch {
			case errors.Is(err, batch.ErrRecord):
				st.undecodable++ // its records are kept as they are
				m.keepAll(h.BaseOffset, h.LastOffset())
			case err != nil:
				return err
			}
			if !m.putAll(w.keys) {
				full = true
				return errMapFull
			}
			m.latest = h.LastOffset()
			return nil
		})
		if full {
			break
		}
		if err != nil {
			return err
		}
		// Offsets up to the next segment are covered, gaps included.
		m.latest = max(m.latest, s.Next-1)
	}
	if m.latest < sp.firstDirty && sp.dirtyBytes > 0 {
		return fmt.Errorf("compaction: the key map cannot hold the keys of one batch of %s", l.Dir())
	}
	return nil
}

var errMapFull = errors.New("compaction: key map full")

// rewrite replaces the segments of g by one holding what the pass keeps.
func (w *worker) rewrite(ctx context.Context, l *logstore.Log, g []logstore.SegmentInfo, cfg Config,
	producers map[int64]int64, now time.Time, st *passStats) (err error) {
	bases := make([]int64, len(g))
	for i, s := range g {
		bases[i] = s.Base
	}
	rw, err := l.BeginRewrite(bases)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			rw.Abort()
		}
	}()
	end := rw.End()
	for _, s := range g {
		// What is dropped whole is decided from its header: its records are
		// not read (nor their CRC checked: the map pass checked those of the
		// dirty segments).
		err := l.ScanSegmentSkipping(s.Base, w.dropsWhole, func(h batch.Header, b []byte) error {
			st.bytesRead += int64(len(b))
			out, err := w.filter(&h, b, end, cfg, producers, now, st)
			if err != nil {
				return err
			}
			if out == nil {
				return w.io(ctx, len(b))
			}
			st.bytesWritten += int64(len(out))
			if err := rw.Append(out); err != nil {
				return err
			}
			return w.io(ctx, len(b)+len(out))
		})
		if err != nil {
			return err
		}
	}
	return rw.Commit()
}

// dropsWhole reports whether every record of the data batch h goes, which its
// header tells: it is of an aborted transaction, or the key map covers it and
// none of its records is the latest of its key. filter reads nothing else of
// such a batch.
func (w *worker) dropsWhole(h *batch.Header) bool {
	if h.Control() {
		return false
	}
	m := w.m
	return w.isAborted(h) || m.covers(h.BaseOffset) && m.covers(h.LastOffset()) && !m.anyCurrent(h.BaseOffset, h.LastOffset())
}

// filter decides what of batch b (header h) stays in a segment that ends at
// end: nil for nothing, b itself when all of it stays, else the batch rebuilt
// with the records that stay, or emptied (Kafka's LogCleaner.cleanInto and
// MemoryRecords.filterTo).
//
// A record stays if it lies past the key map, or is the latest of its key (or
// of a key the map does not hold) and is not a tombstone whose batch's delete
// horizon has passed. Records without a key go, as in Kafka. A batch that keeps
// a tombstone gets a delete horizon (now + delete.retention.ms) the first time.
// A batch left without records is kept, empty, when it holds the last sequence
// of a producer active in the last ProducerIDExpiration, or when it ends the
// segment (so that segment files still tile the offsets); else it goes. Batches
// whose records do not parse stay whole. Transaction markers: markers.go. b
// may be nil when dropsWhole(h).
func (w *worker) filter(h *batch.Header, b []byte, end int64, cfg Config, producers map[int64]int64,
	now time.Time, st *passStats) ([]byte, error) {
	nowMs := now.UnixMilli()
	if h.Control() {
		return w.filterMarker(h, b, end, cfg, producers, nowMs, st)
	}
	w.noteTxnBatch(h)
	if w.isAborted(h) {
		// An aborted transaction's records go; the batch may stay, empty.
		st.recordsIn += int64(h.RecordCount)
		w.recs = w.recs[:0]
		return w.emptied(h, end, producers, nowMs), nil
	}
	horizon, hasHorizon := h.DeleteHorizon()
	retainDeletes := !hasHorizon || nowMs < horizon
	w.recs = w.recs[:0]
	total, tombstones := 0, false
	m := w.m
	var err error
	if w.dropsWhole(h) {
		total = int(h.RecordCount) // every record replaced: nothing to read
	} else {
		err = w.dec.Records(b, func(r batch.Record) error {
			total++
			var keep bool
			switch {
			case r.Offset > m.latest:
				keep = true // past the map
			case m.covers(r.Offset):
				keep = m.isCurrent(r.Offset) && (r.Value != nil || retainDeletes)
			case r.Key != nil: // below the map: replaced if a later record of its key is in it
				keep = r.Offset >= m.get(r.Key) && (r.Value != nil || retainDeletes)
			}
			if keep {
				w.recs = append(w.recs, r)
				tombstones = tombstones || r.Value == nil
			}
			return nil
		})
	}
	if errors.Is(err, batch.ErrRecord) {
		st.undecodable++
		return b, nil
	}
	if err != nil {
		return nil, err
	}
	st.recordsIn += int64(total)
	st.recordsOut += int64(len(w.recs))
	if len(w.recs) == 0 {
		return w.emptied(h, end, producers, nowMs), nil
	}
	newHorizon := int64(batch.NoHorizon)
	switch {
	case tombstones && hasHorizon:
		newHorizon = horizon
	case tombstones:
		newHorizon = nowMs + cfg.DeleteRetention.Milliseconds()
	}
	if tombstones {
		st.noteHorizon(newHorizon)
	}
	if len(w.recs) == total && hasHorizon == tombstones {
		return b, nil // unchanged
	}
	out, err := w.rebuild(h, b, newHorizon, cfg)
	if err != nil {
		return nil, fmt.Errorf("compaction: rebuild batch %d: %w", h.BaseOffset, err)
	}
	w.out = out
	return out, nil
}

// rebuild writes batch h (bytes b) again with the records of w.recs and delete
// horizon horizon (batch.NoHorizon: none), in the compressed form b had, at
// the topic's level when b's codec is the topic's compression.type.
func (w *worker) rebuild(h *batch.Header, b []byte, horizon int64, cfg Config) ([]byte, error) {
	f := compress.FormatOf(h.Codec(), b[batch.HeaderSize:])
	if cfg.LevelCodec != compress.None && h.Codec() == cfg.LevelCodec {
		return w.rb.RebuildLevel(w.out[:0], h, w.recs, horizon, f, cfg.Level)
	}
	return w.rb.Rebuild(w.out[:0], h, w.recs, horizon, f)
}

// emptied is what stays of batch h when none of its records does: nothing, or
// its header alone when it holds an active producer's last sequence or ends its
// segment.
func (w *worker) emptied(h *batch.Header, end int64, producers map[int64]int64, nowMs int64) []byte {
	last, known := producers[h.ProducerID]
	keepEmpty := h.NextOffset() == end ||
		h.Idempotent() && known && last == h.LastOffset() && h.MaxTimestamp >= nowMs-ProducerIDExpiration.Milliseconds()
	if !keepEmpty {
		return nil
	}
	w.out = batch.AppendEmpty(w.out[:0], h)
	return w.out
}

// loadAborted notes the aborted transactions of t in [from, to), when t is a
// TxnTarget.
func (w *worker) loadAborted(t Target, from, to int64) {
	clear(w.aborted)
	tt, ok := t.(TxnTarget)
	if !ok {
		return
	}
	if w.aborted == nil {
		w.aborted = make(map[int64][]AbortedTxn)
	}
	for _, a := range tt.AbortedTxns(from, to) {
		w.aborted[a.ProducerID] = append(w.aborted[a.ProducerID], a)
	}
}

// isAborted reports whether h is a batch of an aborted transaction.
func (w *worker) isAborted(h *batch.Header) bool {
	if !h.Transactional() || h.Control() {
		return false
	}
	for _, a := range w.aborted[h.ProducerID] {
		if h.BaseOffset >= a.FirstOffset && h.BaseOffset < a.LastOffset {
			return true
		}
	}
	return false
}
