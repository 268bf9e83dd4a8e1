package sharegroup

// A share-partition at the leader of its topic partition: the window, its loading
// from the store, and its saving (one write in flight, later changes coalesced).

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
	"skiff/logstore"
	"skiff/replication"
)

// Log is the leader replica of a topic partition a share-partition reads: a
// *replication.Partition. Share groups read committed records only (KIP-932):
// below the last stable offset, without the records of aborted transactions.
type Log interface {
	ReadStable(offset, maxBytes int64) (*logstore.Slice, error)
	LastStableOffset() int64
	HighWatermark() int64
	AbortedTxns(from, to int64) []replication.AbortedTxn
	LogStartOffset() int64
	LeaderEpoch() int32
	IsLeader() bool
	AddWaiter(ch chan<- struct{})
	RemoveWaiter(ch chan<- struct{})
}

// sharePartition is one share-partition led here. Lock order: sharePartition.mu
// alone (the Manager's lock is never taken under it).
type sharePartition struct {
	key   Key
	topic string
	m     *Manager
	log   Log
	epoch int32 // leader epoch of log when loaded

	loaded  chan struct{} // closed once loading ends
	loadErr error         // set before loaded closes

	mu struct {
		sync.Mutex
		w        *window
		seq      int64         // writes of this epoch
		version  uint64        // changes made
		saved    uint64        // changes durable
		saving   bool          // a write is in flight
		saveErr  error         // the last write's error
		savedC   chan struct{} // closed when saved moves; replaced
		changedC chan struct{} // closed when records become available; replaced
		dead     bool          // deposed: replaced, deleted, or its leadership moved (deposeLocked)
		deleted  bool          // the state is deleted (DeleteShareGroupOffsets)
		// saveTimer: a write of acquisitions is scheduled (saveLater).
		saveTimer bool
	}
}

func newSharePartition(m *Manager, key Key, topic string, log Log) *sharePartition {
	sp := &sharePartition{key: key, topic: topic, m: m, log: log, epoch: log.LeaderEpoch(), loaded: make(chan struct{})}
	sp.mu.savedC = make(chan struct{})
	sp.mu.changedC = make(chan struct{})
	go sp.load()
	return sp
}

// load reads the durable state, or starts the window where share.auto.offset.reset
// says, and writes that start so that a failover keeps it.
func (sp *sharePartition) load() {
	defer close(sp.loaded)
	ctx, cancel := context.WithTimeout(context.Background(), sp.m.cfg.StoreTimeout)
	defer cancel()
	st, ok, err := sp.m.cfg.Store.Load(ctx, sp.key)
	if err != nil {
		sp.loadErr = fmt.Errorf("load share state of %s %s-%d: %w", sp.key.Group, sp.topic, sp.key.Partition, err)
		sp.m.logger.Warn("share partition load failed", "group", sp.key.Group, "topic", sp.topic, "partition", sp.key.Partition, "err", err)
		return
	}
	stored := st
	fresh := !ok || st.Deleted
	if fresh {
		st = State{StartOffset: sp.log.LastStableOffset()}
		if sp.m.groupSettings(sp.key.Group).AutoOffsetReset == "earliest" {
			st.StartOffset = sp.log.LogStartOffset()
		}
	}
	if lso := sp.log.LogStartOffset(); st.StartOffset < lso {
		st.StartOffset = lso // retention deleted the rest
	}
	sp.mu.Lock()
	sp.mu.w = newWindow(st)
	if ok && stored.LeaderEpoch == sp.epoch {
		// Loaded again in the epoch that wrote it (after DeleteState, or a failed
		// load): the writes go on from its number, else readers would keep the
		// stored state as newer than every write of this window.
		sp.mu.seq = stored.Seq
	}
	sp.mu.version++
	sp.mu.Unlock()
	sp.saveSoon()
}

// isLoaded reports whether loading ended well.
func (sp *sharePartition) isLoaded() bool {
	select {
	case <-sp.loaded:
		return sp.loadErr == nil
	default:
		return false
	}
}

// loadFailed reports whether loading ended with an error.
func (sp *sharePartition) loadFailed() bool {
	select {
	case <-sp.loaded:
		return sp.loadErr != nil
	default:
		return false
	}
}

// waitLoaded waits for loading, and returns the error code to answer while it is
// not done or failed.
func (sp *sharePartition) waitLoaded(ctx context.Context) int16 {
	select {
	case <-sp.loaded:
	case <-ctx.Done():
		return kerr.CoordinatorLoadInProgress.Code
	}
	if sp.loadErr != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

// stateLocked is the durable state of the window.
func (sp *sharePartition) stateLocked() State {
	sp.mu.seq++
	if sp.mu.deleted {
		return State{LeaderEpoch: sp.epoch, Seq: sp.mu.seq, StartOffset: sp.mu.w.start, Deleted: true}
	}
	return State{LeaderEpoch: sp.epoch, Seq: sp.mu.seq, StartOffset: sp.mu.w.start, Runs: sp.mu.w.runs()}
}

// changedLocked notes a change of the window to be saved, and wakes fetches
// waiting for available records.
func (sp *sharePartition) changedLocked() uint64 {
	close(sp.mu.changedC)
	sp.mu.changedC = make(chan struct{})
	return sp.acquiredLocked()
}

// acquiredLocked notes a change to be saved that makes no record available (an
// acquisition): waiting fetches would find nothing new, so they sleep on.
func (sp *sharePartition) acquiredLocked() uint64 {
	sp.mu.version++
	return sp.mu.version
}

// acquisitionWriteDelay bounds how long an acquisition (its delivery count) waits
// to be written when no acknowledgement's write carries it sooner: a fetch
// carrying acknowledgements writes its acquisitions with them, in one write.
const acquisitionWriteDelay = 50 * time.Millisecond

// saveLater writes the window within acquisitionWriteDelay.
func (sp *sharePartition) saveLater() {
	sp.mu.Lock()
	if sp.mu.saveTimer {
		sp.mu.Unlock()
		return
	}
	sp.mu.saveTimer = true
	sp.mu.Unlock()
	time.AfterFunc(acquisitionWriteDelay, func() {
		sp.mu.Lock()
		sp.mu.saveTimer = false
		sp.mu.Unlock()
		sp.saveSoon()
	})
}

// saveSoon starts a write of the window unless one is in flight (which then
// writes again when it ends).
func (sp *sharePartition) saveSoon() {
	sp.mu.Lock()
	if sp.mu.saving || sp.mu.saved >= sp.mu.version || sp.mu.dead {
		sp.mu.Unlock()
		return
	}
	sp.mu.saving = true
	sp.mu.Unlock()
	go sp.saveLoop()
}

func (sp *sharePartition) saveLoop() {
	for {
		sp.mu.Lock()
		if sp.mu.saved >= sp.mu.version || sp.mu.dead {
			sp.mu.saving = false
			sp.mu.Unlock()
			return
		}
		v, st := sp.mu.version, sp.stateLocked()
		sp.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), sp.m.cfg.StoreTimeout)
		err := sp.m.cfg.Store.Save(ctx, sp.key, st)
		cancel()
		sp.mu.Lock()
		if err == nil && (!sp.log.IsLeader() || sp.log.LeaderEpoch() != sp.epoch) {
			// The partition's leadership moved while the write was out: the new
			// leader may have loaded the state before it landed, and its own writes
			// supersede it, so what it carried is not answered as durable.
			sp.deposeLocked()
			sp.mu.Unlock()
			return
		}
		sp.mu.saveErr = err
		if err == nil {
			sp.mu.saved = v
		} else {
			sp.m.logger.Warn("share state write failed", "group", sp.key.Group, "topic", sp.topic, "partition", sp.key.Partition, "err", err)
		}
		close(sp.mu.savedC)
		sp.mu.savedC = make(chan struct{})
		if err != nil {
			sp.mu.saving = false
			sp.mu.Unlock()
			return
		}
		sp.mu.Unlock()
	}
}

// deposeLocked ends the share-partition: a newer leadership replaced it, or its
// last write landed after its leadership moved. Its writes stop, and waiters for
// changes not yet durable are answered NOT_LEADER_OR_FOLLOWER.
func (sp *sharePartition) deposeLocked() {
	if sp.mu.dead {
		return
	}
	sp.mu.dead, sp.mu.saving = true, false
	close(sp.mu.savedC)
	sp.mu.savedC = make(chan struct{})
}

// waitSaved waits until change v is durable; a failed write is an error code,
// and a share-partition deposed first NOT_LEADER_OR_FOLLOWER.
func (sp *sharePartition) waitSaved(ctx context.Context, v uint64) int16 {
	for {
		sp.mu.Lock()
		if sp.mu.saved >= v {
			sp.mu.Unlock()
			return 0
		}
		if sp.mu.dead {
			sp.mu.Unlock()
			return kerr.NotLeaderForPartition.Code
		}
		if !sp.mu.saving { // the last write failed: try again
			sp.mu.Unlock()
			sp.saveSoon()
			sp.mu.Lock()
		}
		c := sp.mu.savedC
		sp.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return kerr.RequestTimedOut.Code
		}
	}
}

// expireLocked ends the locks that ran out.
func (sp *sharePartition) expireLocked(now time.Time) {
	var archived []Archived
	if sp.mu.w.expire(now, sp.m.groupSettings(sp.key.Group).DeliveryCountLimit, &archived) {
		sp.changedLocked()
		sp.m.deadLetterLater(sp, archived)
	}
}

// acknowledge applies a member's acknowledgement batches and waits until they are
// durable. The answer is 0 or the first error met.
func (sp *sharePartition) acknowledge(ctx context.Context, member string, acks []AckBatch) int16 {
	v, code := sp.applyAcks(ctx, member, acks)
	if v == 0 {
		return code
	}
	sp.saveSoon()
	if c := sp.waitSaved(ctx, v); c != 0 && code == 0 {
		code = c
	}
	return code
}

// applyAcks applies a member's acknowledgement batches to the window, and returns
// the change that makes them durable once saved (0 when nothing was applied) and
// the first error met. The caller starts the write (saveSoon) and waits for it
// (waitSaved) before it answers.
func (sp *sharePartition) applyAcks(ctx context.Context, member string, acks []AckBatch) (uint64, int16) {
	if code := sp.waitLoaded(ctx); code != 0 {
		return 0, code
	}
	s := sp.m.groupSettings(sp.key.Group)
	now := sp.m.now()
	sp.mu.Lock()
	sp.expireLocked(now)
	var archived []Archived
	var code int16
	for _, a := range acks {
		if c := sp.mu.w.acknowledge(member, a.First, a.Last, a.Types, now.Add(s.RecordLockDuration), s.DeliveryCountLimit, &archived); c != 0 && code == 0 {
			code = c
		}
	}
	v := sp.changedLocked()
	sp.mu.Unlock()
	sp.m.deadLetter(ctx, sp, archived) // copied before the archival is durable
	return v, code
}

// releaseMember returns a member's acquired records (its session closed).
func (sp *sharePartition) releaseMember(member string) {
	select {
	case <-sp.loaded:
	default:
		return
	}
	if sp.loadErr != nil {
		return
	}
	sp.mu.Lock()
	var archived []Archived
	changed := sp.mu.w.releaseMember(member, sp.m.groupSettings(sp.key.Group).DeliveryCountLimit, &archived)
	if changed {
		sp.changedLocked()
	}
	sp.mu.Unlock()
	sp.m.deadLetterLater(sp, archived)
	if changed {
		sp.saveSoon()
	}
}

// Acquired is what one acquisition returns: the batches holding the acquired
// records and the acquired ranges with their delivery counts.
type Acquired struct {
	Records []byte
	Ranges  []AcquiredRange
}

// AcquiredRange is a run of acquired offsets with one delivery count.
type AcquiredRange struct {
	First, Last int64
	Count       int16
}

// acquire acquires up to maxRecords records for member: released and expired
// ones first, then new ones from the log (within maxBytes), while the window
// holds fewer than the record-lock limit.
func (sp *sharePartition) acquire(member string, maxRecords int, maxBytes int64) (Acquired, int16) {
	select {
	case <-sp.loaded:
	default:
		return Acquired{}, 0 // still loading: nothing yet
	}
	if sp.loadErr != nil {
		return Acquired{}, kerr.CoordinatorNotAvailable.Code
	}
	s := sp.m.groupSettings(sp.key.Group)
	now := sp.m.now()
	deadline := now.Add(s.RecordLockDuration)
	var archived []Archived // records over the delivery count limit, archived
	defer func() {
		if len(archived) > 0 { // after sp.mu is unlocked
			sp.m.deadLetterLater(sp, archived)
			sp.saveLater()
		}
	}()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.expireLocked(now)
	w := sp.mu.w
	start, end := w.start, w.end
	defer func() {
		switch {
		case w.start != start: // records archived: room in the window
			sp.changedLocked()
		case w.end != end || len(archived) > 0:
			sp.acquiredLocked() // written with the fetch's acknowledgements, or by saveLater
		}
	}()
	offs := w.acquireAvailable(member, maxRecords, deadline, s.DeliveryCountLimit, &archived)
	var out Acquired
	if len(offs) > 0 {
		if err := sp.readRanges(&out, offs, maxBytes); err != nil {
			return Acquired{}, errCode(err)
		}
	}
	for len(offs) < maxRecords && int(w.end-w.start) < s.MaxRecordLocks && w.end < sp.log.HighWatermark() {
		raw, err := readLog(sp.log, w.end, min(maxBytes, acquireReadBytes))
		aborted := abortedBatch(sp.log, w.end, raw)
		if err != nil {
			return Acquired{}, errCode(err)
		}
		took := false
		err = batch.Split(raw, func(h batch.Header, b []byte) error {
			if h.LastOffset() < w.end {
				return nil
			}
			room := min(maxRecords-len(offs), s.MaxRecordLocks-int(w.end-w.start))
			if room <= 0 || int64(len(out.Records)+len(b)) > maxBytes && len(out.Records) > 0 {
				return errStop
			}
			// Within max_records and the lock limit, part of a batch may be
			// acquired: the whole batch is sent and the client keeps the
			// acquired offsets.
			last := h.LastOffset()
			if first := max(h.BaseOffset, w.end); !h.Control() && last-first+1 > int64(room) {
				last = first + int64(room) - 1
			}
			got := w.acquireNew(h.BaseOffset, last, member, deadline, h.Control() || aborted(h))
			took = true
			if len(got) > 0 {
				offs = append(offs, got...)
				out.Records = append(out.Records, b...)
			}
			return nil
		})
		if err != nil && err != errStop {
			return Acquired{}, kerr.CorruptMessage.Code
		}
		if !took || err == errStop {
			break
		}
	}
	if len(offs) == 0 {
		return Acquired{}, 0
	}
	out.Ranges = rangesOf(w, offs)
	if w.end == end {
		sp.acquiredLocked() // acquired again: the delivery counts changed
	}
	return out, 0
}

// readRanges appends the batches holding offs (ascending) to out, each batch
// once.
func (sp *sharePartition) readRanges(out *Acquired, offs []int64, maxBytes int64) error {
	next := int64(-1) // offsets below are covered by batches already read
	for _, o := range offs {
		if o < next {
			continue
		}
		raw, err := readLog(sp.log, o, 1) // the batch holding o
		if err != nil {
			return err
		}
		err = batch.Split(raw, func(h batch.Header, b []byte) error {
			if h.LastOffset() < o || h.BaseOffset > o {
				return errStop
			}
			out.Records = append(out.Records, b...)
			next = h.LastOffset() + 1
			return errStop
		})
		if err != nil && err != errStop {
			return err
		}
		if next <= o { // no batch holds o (deleted): skip it
			next = o + 1
		}
	}
	return nil
}

// handOver is called as a ShareFetch's answer is about to leave, with the ranges
// it acquired for member here. The answer waited for its acknowledgements' write,
// which may outlast a lock (while the state topic's leader fails over, say): a
// record whose lock ended may be another member's by now, so it is left out, and
// the locks still held restart, so that each runs its whole duration from the
// answer, as the client counts it. A share-partition no longer led here hands
// over nothing (its acquisitions are not the next leader's).
func (sp *sharePartition) handOver(member string, rs []AcquiredRange) []AcquiredRange {
	now := sp.m.now()
	deadline := now.Add(sp.m.groupSettings(sp.key.Group).RecordLockDuration)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.mu.dead || !sp.log.IsLeader() || sp.log.LeaderEpoch() != sp.epoch {
		return nil // the next leader hands these records out again
	}
	return sp.mu.w.relock(member, rs, now, deadline)
}

// rangesOf groups acquired offsets into runs of one delivery count.
func rangesOf(w *window, offs []int64) []AcquiredRange {
	var out []AcquiredRange
	for _, o := range offs {
		c := w.at(o).count
		if n := len(out); n > 0 && out[n-1].Last == o-1 && out[n-1].Count == c {
			out[n-1].Last = o
			continue
		}
		out = append(out, AcquiredRange{First: o, Last: o, Count: c})
	}
	return out
}

var errStop = fmt.Errorf("sharegroup: stop")

// abortedBatch returns whether a batch of raw (read from offset) belongs to an
// aborted transaction: such records are archived unseen, as read_committed
// consumers never see them.
func abortedBatch(l Log, offset int64, raw []byte) func(batch.Header) bool {
	end := offset
	batch.Split(raw, func(h batch.Header, _ []byte) error {
		end = max(end, h.NextOffset())
		return nil
	})
	var txns []replication.AbortedTxn
	if end > offset {
		txns = l.AbortedTxns(offset, end)
	}
	return func(h batch.Header) bool {
		if !h.Transactional() || h.Control() {
			return false
		}
		for _, t := range txns {
			if t.ProducerID == h.ProducerID && t.FirstOffset <= h.BaseOffset && h.BaseOffset < t.LastOffset {
				return true
			}
		}
		return false
	}
}

// acquireReadBytes bounds one read of new records: an acquisition takes at most
// max_records (500 from franz-go), and a fetch's max_bytes (50 MiB from franz-go)
// read whole would copy the log up to its end for a few hundred records. The
// acquisition reads again while it has room.
const acquireReadBytes = 1 << 20

// readLog reads whole batches from offset, up to maxBytes (the first always).
func readLog(l Log, offset, maxBytes int64) ([]byte, error) {
	sl, err := l.ReadStable(offset, maxBytes)
	if err != nil {
		return nil, err
	}
	defer sl.Release()
	var buf bytes.Buffer
	buf.Grow(int(sl.Bytes))
	if _, err := sl.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// errCode maps an error to the Kafka code it carries, else KAFKA_STORAGE_ERROR.
func errCode(err error) int16 {
	if ke, ok := asKerr(err); ok {
		return ke.Code
	}
	return kerr.KafkaStorageError.Code
}

// blockedBy reports whether the window is at its record-lock limit while member
// holds some of its records.
func (sp *sharePartition) blockedBy(member string) bool {
	select {
	case <-sp.loaded:
	default:
		return false
	}
	if sp.loadErr != nil {
		return false
	}
	limit := sp.m.groupSettings(sp.key.Group).MaxRecordLocks
	sp.mu.Lock()
	defer sp.mu.Unlock()
	w := sp.mu.w
	return int(w.end-w.start) >= limit && w.holds(member)
}
