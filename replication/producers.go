package replication

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
)

// maxBatchesRetained is how many recent batches per producer are remembered to
// answer retries of an already-appended batch (Kafka keeps 5, the client's maximum
// number of in-flight requests with idempotence).
const maxBatchesRetained = 5

// batchRecord is one appended batch of a producer: its sequence range and where it landed.
type batchRecord struct {
	firstSeq, lastSeq int32
	baseOffset        int64
	lastOffset        int64
}

// producerEntry is the idempotence state of one producer id on one partition.
type producerEntry struct {
	epoch   int16
	batches []batchRecord // oldest first, at most maxBatchesRetained
	// lastMs is the max timestamp of its latest batch (Unix ms), for
	// producer.id.expiration.ms.
	lastMs int64
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastSeq
}

// producerStates holds the entries of every idempotent producer seen on a partition.
// It is guarded by the partition's append lock.
type producerStates struct {
	m map[int64]*producerEntry
}

func newProducerStates() producerStates { return producerStates{m: make(map[int64]*producerEntry)} }

// check decides what to do with an idempotent batch before it is appended. It returns
// dup != nil when the batch is an exact retry of a retained batch (answer with its
// original offset, append nothing), or an error carrying the Kafka code that refuses it.
func (s *producerStates) check(h *batch.Header) (dup *batchRecord, err error) {
	e := s.m[h.ProducerID]
	lastSeq := h.LastSequence()
	if e == nil {
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("producer %d unknown, first sequence %d: %w", h.ProducerID, h.BaseSequence, kerr.UnknownProducerID)
		}
		return nil, nil
	}
	switch {
	case h.ProducerEpoch < e.epoch:
		return nil, fmt.Errorf("producer %d epoch %d is older than %d: %w", h.ProducerID, h.ProducerEpoch, e.epoch, kerr.InvalidProducerEpoch)
	case h.ProducerEpoch > e.epoch:
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("producer %d new epoch %d starts at sequence %d: %w", h.ProducerID, h.ProducerEpoch, h.BaseSequence, kerr.OutOfOrderSequenceNumber)
		}
		return nil, nil
	}
	for i := range e.batches {
		if b := &e.batches[i]; b.firstSeq == h.BaseSequence && b.lastSeq == lastSeq {
			return b, nil
		}
	}
	if !inSequence(e.lastSeq(), h.BaseSequence) {
		return nil, fmt.Errorf("producer %d epoch %d: sequence %d after %d: %w", h.ProducerID, h.ProducerEpoch, h.BaseSequence, e.lastSeq(), kerr.OutOfOrderSequenceNumber)
	}
	return nil, nil
}

// inSequence reports whether next follows last, with the int32 wraparound Kafka uses.
func inSequence(last, next int32) bool {
	return next == last+1 || (last == 1<<31-1 && next == 0)
}

// record notes an appended batch (base offset already assigned). It is also used to
// rebuild the state from the log, where batches are trusted as written.
func (s *producerStates) record(h *batch.Header) {
	if !h.Idempotent() {
		return
	}
	e := s.m[h.ProducerID]
	if e == nil || h.ProducerEpoch > e.epoch {
		e = &producerEntry{epoch: h.ProducerEpoch}
		s.m[h.ProducerID] = e
	}
	if h.ProducerEpoch < e.epoch {
		return
	}
	e.lastMs = max(e.lastMs, h.MaxTimestamp)
	if h.Control() || h.BaseSequence < 0 {
		return // a marker or a coordinator's batch has no sequence: it only moves the epoch
	}
	if len(e.batches) == maxBatchesRetained {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:maxBatchesRetained-1]
	}
	e.batches = append(e.batches, batchRecord{
		firstSeq:   h.BaseSequence,
		lastSeq:    h.LastSequence(),
		baseOffset: h.BaseOffset,
		lastOffset: h.LastOffset(),
	})
}

// expire forgets the producers whose latest batch is older than cutoffMs (Unix
// ms) and for which keep is false (a transaction open), telling gone of each.
func (s *producerStates) expire(cutoffMs int64, keep func(pid int64) bool, gone func(pid int64)) int {
	n := 0
	for pid, e := range s.m {
		if e.lastMs < cutoffMs && !keep(pid) {
			delete(s.m, pid)
			gone(pid)
			n++
		}
	}
	return n
}
