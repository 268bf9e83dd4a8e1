package replication

// Transactions on a partition (KIP-98): which producers have a transaction open here
// (from their first transactional batch to their commit or abort marker), the last
// stable offset (LSO: below the first open transaction's first record, and below the
// high watermark), and the aborted transactions that read_committed consumers skip.
// All of it is derived from the log: batches carry their producer and the
// transactional flag, markers are control batches (internal/batch/control.go).
// The aborted transactions and snapshots of the rest are kept in the partition's
// Store so that an open reads only the log after the latest snapshot
// (producer_store.go).

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/compaction"
	"skiff/internal/batch"
	"skiff/logstore"
)

// AbortedTxn is one aborted transaction of a partition: its producer, the offset of
// its first record and the offset of its abort marker (compaction's type: the
// cleaner drops these records).
type AbortedTxn = compaction.AbortedTxn

// OpenTxn is one transaction open on a partition: its producer, epoch and first offset.
type OpenTxn struct {
	ProducerID  int64
	Epoch       int16
	FirstOffset int64
	// Started is when this replica saw its first batch (appended it, or found it in
	// its log when it opened).
	Started time.Time
}

// txnIndex is a partition's transaction state. Writers hold the partition's
// appendMu and then txnIndex.mu; readers (Fetch, ListOffsets) take only mu.
type txnIndex struct {
	mu      sync.Mutex
	open    map[int64]OpenTxn // by producer id
	aborted []abortedRecord   // by LastOffset
	// firstUnstable is the first offset of the earliest open transaction,
	// math.MaxInt64 when none is open.
	firstUnstable int64
	// markers counts the markers of each producer: a verification of a producer's
	// transaction holds while no marker came (AppendVerified).
	markers map[int64]uint64
	// coordinatorEpochs holds the coordinator epoch of each producer's latest
	// marker: a marker of an older coordinator is refused (WriteMarker).
	coordinatorEpochs map[int64]int32
	// stamps holds the stamp of each producer's latest marker since the
	// replica opened, and notices the coordinators' notices bound to them
	// (txn_notice.go). Neither is in snapshots.
	stamps  map[int64]uint64
	notices map[int64]txnNotice
}

func newTxnIndex() *txnIndex {
	return &txnIndex{open: make(map[int64]OpenTxn), firstUnstable: math.MaxInt64, markers: make(map[int64]uint64),
		coordinatorEpochs: make(map[int64]int32), stamps: make(map[int64]uint64), notices: make(map[int64]txnNotice)}
}

// abortedRecord is an aborted transaction as the Store keeps it: with the last
// stable offset once its marker was appended (Kafka's .txnindex entry), the
// first offset of any transaction aborted later.
type abortedRecord = struct {
	ProducerID, FirstOffset, LastOffset, LastStableOffset int64
}

// observe notes one batch appended to (or read back from) the log. raw returns the
// whole batch; it is called for control batches only. It returns the aborted
// transaction an abort marker ends.
func (x *txnIndex) observe(h *batch.Header, raw func() ([]byte, error), now time.Time) (*abortedRecord, error) {
	if !h.Transactional() {
		return nil, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !h.Control() {
		if h.RecordCount == 0 {
			// Left empty by the log cleaner, which compacts only decided
			// transactions: it may have removed the marker (compaction/markers.go).
			return nil, nil
		}
		if _, ok := x.open[h.ProducerID]; !ok {
			x.open[h.ProducerID] = OpenTxn{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, FirstOffset: h.BaseOffset, Started: now}
			x.firstUnstable = min(x.firstUnstable, h.BaseOffset)
		}
		return nil, nil
	}
	x.markers[h.ProducerID]++
	x.stampMarkerLocked(h.ProducerID)
	if h.RecordCount == 0 {
		return nil, nil // a marker the cleaner removed, its header left (compaction/markers.go)
	}
	b, err := raw()
	if err != nil {
		return nil, err
	}
	typ, coordinatorEpoch, err := batch.ParseControl(b)
	if err != nil {
		return nil, fmt.Errorf("control batch at %d: %w", h.BaseOffset, err)
	}
	if coordinatorEpoch >= 0 {
		x.coordinatorEpochs[h.ProducerID] = coordinatorEpoch
	}
	t, ok := x.open[h.ProducerID]
	if !ok {
		return nil, nil // a marker for a transaction that wrote nothing here
	}
	delete(x.open, h.ProducerID)
	x.firstUnstable = math.MaxInt64
	for _, o := range x.open {
		x.firstUnstable = min(x.firstUnstable, o.FirstOffset)
	}
	if typ != batch.ControlAbort {
		return nil, nil
	}
	a := abortedRecord{ProducerID: h.ProducerID, FirstOffset: t.FirstOffset, LastOffset: h.BaseOffset,
		LastStableOffset: min(x.firstUnstable, h.BaseOffset+1)}
	x.aborted = append(x.aborted, a)
	return &a, nil
}

// TxnVerification reports whether a transactional batch of producer pid needs
// its coordinator to confirm that this partition is in its transaction (KIP-890
// part 1): when none of its transactions is open here, the batch would open one.
// guard goes to AppendVerified.
func (p *Partition) TxnVerification(pid int64) (guard uint64, needed bool) {
	p.txns.mu.Lock()
	defer p.txns.mu.Unlock()
	_, open := p.txns.open[pid]
	return p.txns.markers[pid], !open
}

// TxnAddNeeded reports whether a transactional batch of producer pid at epoch
// would open a transaction here (transaction version 2, Produce v12): none of
// pid's is open, or the open one is of an older epoch (the batch is then held
// for its marker, AwaitPreviousMarker). The coordinator adds the partition
// first. A batch older than the open transaction needs none: its append
// fences it (INVALID_PRODUCER_EPOCH). guard goes to AppendTV2Verified when
// none is needed (a marker appended since means the transaction ended).
func (p *Partition) TxnAddNeeded(pid int64, epoch int16) (guard uint64, needed bool) {
	p.txns.mu.Lock()
	defer p.txns.mu.Unlock()
	t, open := p.txns.open[pid]
	return p.txns.markers[pid], !open || t.Epoch < epoch
}

// verifiedLocked reports whether a verification taken at guard still holds.
// The caller holds the partition's appendMu.
func (x *txnIndex) verifiedLocked(pid int64, guard uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, open := x.open[pid]
	return open || x.markers[pid] == guard
}

// reset forgets everything (the log is rebuilt or emptied).
func (x *txnIndex) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.open, x.aborted, x.firstUnstable = make(map[int64]OpenTxn), nil, math.MaxInt64
	clear(x.markers)
	clear(x.coordinatorEpochs)
	clear(x.stamps)
	clear(x.notices)
}

// abortedIn returns the aborted transactions whose records may be in [from, to):
// those ending at or after from that started before to. Every transaction
// aborted after one whose last stable offset is at or past to started at or
// after it, so the search stops there, as Kafka's does.
func (x *txnIndex) abortedIn(from, to int64) []AbortedTxn {
	x.mu.Lock()
	defer x.mu.Unlock()
	i := sort.Search(len(x.aborted), func(i int) bool { return x.aborted[i].LastOffset >= from })
	var out []AbortedTxn
	for _, a := range x.aborted[i:] {
		if a.FirstOffset < to {
			out = append(out, AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset, LastOffset: a.LastOffset})
		}
		if a.LastStableOffset >= to {
			break
		}
	}
	return out
}

// forgetBefore drops aborted transactions that ended below offset (the log start).
func (x *txnIndex) forgetBefore(offset int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	i := sort.Search(len(x.aborted), func(i int) bool { return x.aborted[i].LastOffset >= offset })
	x.aborted = append(x.aborted[:0:0], x.aborted[i:]...)
}

// forget drops the aborted transactions txns.
func (x *txnIndex) forget(txns []AbortedTxn) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.aborted = slices.DeleteFunc(x.aborted, func(a abortedRecord) bool {
		return slices.Contains(txns, AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset, LastOffset: a.LastOffset})
	})
}

// LastStableOffset is the offset below which every transaction is decided and
// every record committed: read_committed consumers read below it.
func (p *Partition) LastStableOffset() int64 {
	hw := p.hw.Load()
	p.txns.mu.Lock()
	defer p.txns.mu.Unlock()
	return min(hw, p.txns.firstUnstable)
}

// AbortedTxns returns the aborted transactions with records in [from, to).
func (p *Partition) AbortedTxns(from, to int64) []AbortedTxn { return p.txns.abortedIn(from, to) }

// OpenTxns returns the transactions open on this partition, by first offset.
func (p *Partition) OpenTxns() []OpenTxn {
	p.txns.mu.Lock()
	out := make([]OpenTxn, 0, len(p.txns.open))
	for _, t := range p.txns.open {
		out = append(out, t)
	}
	p.txns.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].FirstOffset < out[j].FirstOffset })
	return out
}

// ReadStable is Read for read_committed consumers: it never returns records at or
// above the last stable offset.
func (p *Partition) ReadStable(offset, maxBytes int64) (*logstore.Slice, error) {
	if !p.IsLeader() {
		return nil, fmt.Errorf("%s-%d is not led by this broker: %w", p.Topic, p.ID, kerr.NotLeaderForPartition)
	}
	if offset > p.log.LogEndOffset() || offset < p.log.LogStartOffset() {
		return nil, fmt.Errorf("offset %d outside [%d, %d]: %w", offset, p.log.LogStartOffset(), p.log.LogEndOffset(), kerr.OffsetOutOfRange)
	}
	lso := p.LastStableOffset()
	if offset >= lso {
		return &logstore.Slice{NextOffset: offset}, nil
	}
	return p.read(offset, maxBytes, lso)
}

// WriteMarker appends the commit (commit set) or abort marker of producer pid's
// transaction at epoch, as its coordinator asks (WriteTxnMarkers), and returns its
// offset and leader epoch; the caller waits for it to be committed
// (WaitHighWatermark). A marker of an epoch older than
// the producer's here is refused with INVALID_PRODUCER_EPOCH (a late marker of a
// fenced producer), and one of a coordinator epoch older than that of the
// producer's latest marker here with TRANSACTION_COORDINATOR_FENCED (a late marker
// of a coordinator that lost its partition of __transaction_state), as in Kafka.
//
// tv2 marks a marker of transaction version 2 (KIP-890 part 2, WriteTxnMarkers v2's
// transaction_version): its epoch is the transaction's plus one (two after a
// timeout), so one at or below the epoch of the producer's open transaction here
// belongs to an ended transaction (staleMarkerLocked): nothing is appended, and the
// answer stands for the marker that did end it, committed once the open
// transaction's first batch is.
func (p *Partition) WriteMarker(pid int64, epoch int16, commit bool, coordinatorEpoch int32, tv2 bool) (AppendResult, error) {
	b := batch.BuildControl(time.Now().UnixMilli(), pid, epoch, commit, coordinatorEpoch)
	h, err := batch.ParseHeader(b)
	if err != nil {
		return AppendResult{}, err
	}
	p.appendMu.Lock()
	if !p.IsLeader() {
		p.appendMu.Unlock()
		return AppendResult{}, fmt.Errorf("%s-%d is not led by this broker: %w", p.Topic, p.ID, kerr.NotLeaderForPartition)
	}
	if e := p.producers.m[pid]; e != nil && epoch < e.epoch {
		p.appendMu.Unlock()
		return AppendResult{}, fmt.Errorf("marker of producer %d epoch %d, which is at %d: %w", pid, epoch, e.epoch, kerr.InvalidProducerEpoch)
	}
	if tv2 {
		if res, stale := p.staleMarkerLocked(pid, epoch); stale {
			p.appendMu.Unlock()
			return res, nil
		}
	}
	if ce, ok := p.coordinatorEpoch(pid); ok && coordinatorEpoch < ce {
		p.appendMu.Unlock()
		return AppendResult{}, fmt.Errorf("marker of producer %d from coordinator epoch %d, after one from %d: %w", pid, coordinatorEpoch, ce, kerr.TransactionCoordinatorFenced)
	}
	return p.appendLocked(b, &h)
}

// staleMarkerLocked reports whether a TV2 marker of producer pid at epoch is stale
// here (KIP-1228): the producer's open transaction has that epoch or a later one,
// so it began after the transaction the marker ends, which had no record here or
// whose marker came first (a coordinator writes the markers of a pending
// completion again after a failover). Appended, it would close the new
// transaction. The result stands for the earlier marker: a caller that waits for
// it (WaitHighWatermark) waits until the open transaction's first batch, which
// follows any earlier marker in the log, is committed. Kafka refuses such a
// marker with INVALID_PRODUCER_EPOCH (ProducerAppendInfo.checkProducerEpoch),
// which Skiff's coordinator counts as done as well. The caller holds appendMu.
func (p *Partition) staleMarkerLocked(pid int64, epoch int16) (AppendResult, bool) {
	p.txns.mu.Lock()
	t, open := p.txns.open[pid]
	p.txns.mu.Unlock()
	if !open || t.Epoch < epoch {
		return AppendResult{}, false
	}
	return AppendResult{BaseOffset: t.FirstOffset, LastOffset: t.FirstOffset, LogAppendTime: -1,
		Duplicate: true, LeaderEpoch: p.leaderEpoch.Load()}, true
}

// coordinatorEpoch returns the coordinator epoch of producer pid's latest marker
// here, ok false when none is known.
func (p *Partition) coordinatorEpoch(pid int64) (epoch int32, ok bool) {
	p.txns.mu.Lock()
	defer p.txns.mu.Unlock()
	epoch, ok = p.txns.coordinatorEpochs[pid]
	return epoch, ok
}

// readBatch returns the whole batch of the log that h heads.
func (p *Partition) readBatch(h *batch.Header) ([]byte, error) {
	s, err := p.log.Read(h.BaseOffset, h.Size(), h.NextOffset())
	if err != nil {
		return nil, err
	}
	defer s.Release()
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		return nil, err
	}
	if int64(buf.Len()) < h.Size() {
		return nil, fmt.Errorf("batch at %d: read %d of %d bytes", h.BaseOffset, buf.Len(), h.Size())
	}
	return buf.Bytes()[:h.Size()], nil
}

// observeLocked keeps producer and transaction state in step with a batch
// appended to the log, and records an aborted transaction it ends in the Store;
// raw is the batch when the caller has it. The caller holds appendMu.
func (p *Partition) observeLocked(h *batch.Header, raw []byte) error {
	a, err := p.noteLocked(h, raw)
	if err != nil || a == nil {
		return err
	}
	if err := p.store.UpdateProducerState(ProducerStateUpdate{Aborted: []abortedRecord{*a}}); err != nil {
		p.abortUnrecorded = true
		return err
	}
	return nil
}

// noteLocked is observeLocked without the Store: it returns the aborted
// transaction the batch ends. The caller holds appendMu.
func (p *Partition) noteLocked(h *batch.Header, raw []byte) (*abortedRecord, error) {
	p.changedLocked(h.ProducerID)
	p.producers.record(h)
	return p.txns.observe(h, func() ([]byte, error) {
		if raw != nil {
			return raw, nil
		}
		return p.readBatch(h)
	}, time.Now())
}

// AppendFromCoordinator appends a transactional batch that a coordinator writes on
// behalf of a producer (the group coordinator's TxnOffsetCommit records): it carries
// the producer's id and epoch but no sequence (-1), so only the epoch is checked.
func (p *Partition) AppendFromCoordinator(records []byte) (AppendResult, error) {
	return p.appendFromCoordinator(records, nil, false)
}

// AppendFromCoordinatorVerified is AppendFromCoordinator for a batch whose
// transaction the transaction coordinator confirmed includes this partition
// (KIP-890 part 1 for TxnOffsetCommit), with the guard TxnVerification gave
// before asking: a marker of the producer appended since voids the confirmation
// (INVALID_TXN_STATE).
func (p *Partition) AppendFromCoordinatorVerified(records []byte, guard uint64) (AppendResult, error) {
	return p.appendFromCoordinator(records, &guard, false)
}

// appendFromCoordinator appends a coordinator's transactional batch: guard, when
// set, is AppendFromCoordinatorVerified's; tv2 is AppendFromCoordinatorTV2's.
func (p *Partition) appendFromCoordinator(records []byte, guard *uint64, tv2 bool) (AppendResult, error) {
	h, err := batch.Check(records)
	if err != nil {
		return AppendResult{}, fmt.Errorf("%v: %w", err, kerr.CorruptMessage)
	}
	if !h.Transactional() || !h.Idempotent() || h.Control() {
		return AppendResult{}, fmt.Errorf("not a transactional batch: %w", kerr.InvalidRecord)
	}
	p.appendMu.Lock()
	if !p.IsLeader() {
		p.appendMu.Unlock()
		return AppendResult{}, fmt.Errorf("%s-%d is not led by this broker: %w", p.Topic, p.ID, kerr.NotLeaderForPartition)
	}
	if e := p.producers.m[h.ProducerID]; e != nil && h.ProducerEpoch < e.epoch {
		p.appendMu.Unlock()
		return AppendResult{}, fmt.Errorf("producer %d epoch %d is older than %d: %w", h.ProducerID, h.ProducerEpoch, e.epoch, kerr.InvalidProducerEpoch)
	}
	if guard != nil && !p.txns.verifiedLocked(h.ProducerID, *guard) {
		p.appendMu.Unlock()
		return AppendResult{}, fmt.Errorf("producer %d's transaction ended while it was verified: %w", h.ProducerID, kerr.InvalidTxnState)
	}
	if tv2 {
		if err := p.heldLocked(&h); err != nil {
			p.appendMu.Unlock()
			return AppendResult{}, err
		}
	}
	return p.appendLocked(records, &h)
}

// ProducerInfo is one producer's state on a partition (DescribeProducers).
type ProducerInfo struct {
	ProducerID   int64
	Epoch        int16
	LastSequence int32 // -1: none
	// TxnStartOffset is the first offset of its open transaction, -1: none.
	TxnStartOffset int64
	// CoordinatorEpoch is the coordinator epoch of its latest marker here, -1:
	// none.
	CoordinatorEpoch int32
}

// Producers returns the producers with state on this partition, by id.
func (p *Partition) Producers() []ProducerInfo {
	p.appendMu.Lock()
	out := make([]ProducerInfo, 0, len(p.producers.m))
	for id, e := range p.producers.m {
		out = append(out, ProducerInfo{ProducerID: id, Epoch: e.epoch, LastSequence: e.lastSeq(), TxnStartOffset: -1, CoordinatorEpoch: -1})
	}
	p.txns.mu.Lock()
	for i := range out {
		if t, ok := p.txns.open[out[i].ProducerID]; ok {
			out[i].TxnStartOffset = t.FirstOffset
		}
		if ce, ok := p.txns.coordinatorEpochs[out[i].ProducerID]; ok {
			out[i].CoordinatorEpoch = ce
		}
	}
	p.txns.mu.Unlock()
	p.appendMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// expireProducers forgets the producers idle since before cutoff with no
// transaction open here (KIP-854): a later batch of one is refused with
// UNKNOWN_PRODUCER_ID unless it starts a sequence, as for any unknown producer.
func (p *Partition) expireProducers(cutoff time.Time) int {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.expireProducersLocked(cutoff.UnixMilli())
}

// expireProducersLocked is expireProducers with cutoff in Unix ms. A forgotten
// producer's marker count and coordinator epoch go with it, as its whole entry
// does in Kafka: what no transaction of it needs any more would otherwise stay
// in every snapshot. The caller holds appendMu.
func (p *Partition) expireProducersLocked(cutoffMs int64) int {
	x := p.txns
	x.mu.Lock()
	defer x.mu.Unlock()
	return p.producers.expire(cutoffMs, func(pid int64) bool {
		_, open := x.open[pid]
		return open
	}, func(pid int64) {
		delete(x.markers, pid)
		delete(x.coordinatorEpochs, pid)
		delete(x.stamps, pid)
		delete(x.notices, pid)
		p.changedLocked(pid)
	})
}

// pruneTxnProducersLocked drops the marker counts and coordinator epochs of
// producers without state (kept by snapshots written before expiry pruned
// them). The caller holds appendMu.
func (p *Partition) pruneTxnProducersLocked() {
	x := p.txns
	x.mu.Lock()
	defer x.mu.Unlock()
	for pid := range x.markers {
		if p.producers.m[pid] == nil {
			delete(x.markers, pid)
		}
	}
	for pid := range x.coordinatorEpochs {
		if p.producers.m[pid] == nil {
			delete(x.coordinatorEpochs, pid)
		}
	}
}

// stableTarget is what the log cleaner sees of a partition: nothing at or above
// its last stable offset is compacted, and its aborted transactions' records are
// dropped (compaction.TxnTarget).
type stableTarget struct{ *Partition }

// HighWatermark is the last stable offset: an open transaction's records and
// everything after them stay as they are until it ends.
func (t stableTarget) HighWatermark() int64 { return t.LastStableOffset() }

// ForgetAbortedTxns drops aborted transactions whose records the cleaner
// removed: their markers go after delete.retention.ms, and a read_committed
// reader told of one without its marker would skip its producer's later records.
func (t stableTarget) ForgetAbortedTxns(txns []AbortedTxn) {
	// Durably: an open keeps the stored entries below its snapshot without
	// reading the log, so one that came back would stay after the marker went.
	// The Store first, then memory under appendMu: a restore (which holds it)
	// that read the entries before the Store forgot them is over before memory
	// forgets, and one after never sees them.
	u := ProducerStateUpdate{Sync: true}
	for _, a := range txns {
		u.Drop = append(u.Drop, [2]int64{a.LastOffset, a.LastOffset + 1})
	}
	if err := t.store.UpdateProducerState(u); err != nil {
		t.logger.Warn("forgetting aborted transactions in the index", "err", err) // back at the next open
	}
	t.appendMu.Lock()
	t.txns.forget(txns)
	t.appendMu.Unlock()
}

var _ compaction.TxnTarget = stableTarget{}
