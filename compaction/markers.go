package compaction

import (
	"fmt"

	"skiff/internal/batch"
)

// Transaction markers (control batches) go once nothing of their transaction is
// left and delete.retention.ms has passed (Kafka's cleaner, KIP-534's delete
// horizon applied to markers), over several passes:
//
//  1. a pass drops an aborted transaction's records, or the last of a committed
//     one's records that later records of their keys replaced; its marker stays,
//     since the pass still read batches of its transaction;
//  2. a later pass finds the marker with no batch of its transaction before it:
//     it gives the marker a delete horizon (now + delete.retention.ms) and tells
//     the target to forget the aborted transaction (TxnTarget.ForgetAbortedTxns),
//     whose records are all gone;
//  3. the first pass after the horizon removes the marker (leaving an empty
//     header where a batch must stay, as for data batches).
//
// A read_committed reader that started before step 2 still finds the marker of
// every aborted transaction it was told about; a reader that fetched the
// aborted transaction before step 3 and read on after it reads no record of it,
// as there are none left.

// noteTxnBatch notes that the pass read a data batch of a transaction with
// records (kept or not): its marker must stay this pass. A batch already left
// empty does not hold the marker back (Kafka's cleaner counts it, so a
// committed transaction's marker stays as long as its producer's last batch
// does); the partition ignores such batches when it rebuilds its transactions.
func (w *worker) noteTxnBatch(h *batch.Header) {
	if h.Transactional() && !h.Control() && h.RecordCount > 0 {
		w.txnBatches[h.ProducerID] = true
	}
}

// filterMarker decides what of marker h (batch b) stays (see filter).
func (w *worker) filterMarker(h *batch.Header, b []byte, end int64, cfg Config, producers map[int64]int64,
	nowMs int64, st *passStats) ([]byte, error) {
	seen := w.txnBatches[h.ProducerID]
	delete(w.txnBatches, h.ProducerID)
	if seen {
		return b, nil // readers need it to end its transaction
	}
	if h.RecordCount == 0 {
		return w.emptied(h, end, producers, nowMs), nil // a marker already removed
	}
	for _, a := range w.aborted[h.ProducerID] {
		if a.LastOffset == h.BaseOffset {
			w.forget = append(w.forget, a)
		}
	}
	horizon, ok := h.DeleteHorizon()
	switch {
	case ok && horizon <= nowMs:
		return w.emptied(h, end, producers, nowMs), nil
	case ok:
		st.noteHorizon(horizon)
		return b, nil
	}
	horizon = nowMs + cfg.DeleteRetention.Milliseconds()
	st.noteHorizon(horizon)
	w.recs = w.recs[:0]
	err := w.dec.Records(b, func(r batch.Record) error {
		w.recs = append(w.recs, r)
		return nil
	})
	if err != nil || len(w.recs) == 0 {
		st.undecodable++
		return b, nil
	}
	out, err := w.rebuild(h, b, horizon, cfg)
	if err != nil {
		return nil, fmt.Errorf("compaction: rebuild marker %d: %w", h.BaseOffset, err)
	}
	w.out = out
	return out, nil
}

// noteHorizon keeps the earliest delete horizon of what the pass kept.
func (st *passStats) noteHorizon(h int64) {
	if st.horizon < 0 || h < st.horizon {
		st.horizon = h
	}
}
