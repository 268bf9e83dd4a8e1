package txn

// A TV2 transaction's completion carried by the next transaction's Ongoing
// record (docs/design/txn-v2.md §3): the producer's first implicit add of its
// next transaction does not wait for the markers of the one it ended; its
// Ongoing record carries what those markers are, in a tag of Skiff's own, so
// that a coordinator elected before they are all committed writes them again.
//
//	CompletionTag value: result i8 (0 abort, 1 commit), producer_id i64,
//	  marker_epoch i16, coordinator_epoch i32,
//	  topics i32 count, per topic: topic string (i16 length), partitions i32
//	  count then i32 each; all big endian.
//
// Kafka's tools read such a record as a plain Ongoing one, skipping the
// unknown tag; a Skiff binary from before TV2 skips it too and never writes
// those markers, which is why finalizing TV2 is one-way.

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"
)

// CompletionTag is the tag of a carried completion on a value v1 record
// (Skiff's range, beside StampTag and NoticeTag; Kafka's tags start at 0).
const CompletionTag = 0x5f5f0003

// completion is the ended transaction whose markers an Ongoing state carries.
type completion struct {
	commit           bool
	pid              int64
	epoch            int16 // of the markers (the bumped one)
	coordinatorEpoch int32
	partitions       []TopicPartition // sorted
	// done: every marker is committed (in memory): the next record of the id
	// leaves the tag out. Atomic: records are built outside the shard's lock.
	done atomic.Bool
}

// markers returns c's markers.
func (c *completion) markers() []Marker {
	out := make([]Marker, len(c.partitions))
	for i, tp := range c.partitions {
		out[i] = Marker{Topic: tp.Topic, Partition: tp.Partition, ProducerID: c.pid, Epoch: c.epoch,
			Commit: c.commit, CoordinatorEpoch: c.coordinatorEpoch, TV2: true}
	}
	return out
}

// appendCompletion encodes c for CompletionTag.
func appendCompletion(dst []byte, c *completion) []byte {
	result := byte(0)
	if c.commit {
		result = 1
	}
	dst = append(dst, result)
	dst = binary.BigEndian.AppendUint64(dst, uint64(c.pid))
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.epoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.coordinatorEpoch))
	var topics [][]TopicPartition
	for i, tp := range c.partitions {
		if i == 0 || c.partitions[i-1].Topic != tp.Topic {
			topics = append(topics, nil)
		}
		topics[len(topics)-1] = append(topics[len(topics)-1], tp)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(topics)))
	for _, t := range topics {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(t[0].Topic)))
		dst = append(dst, t[0].Topic...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(t)))
		for _, tp := range t {
			dst = binary.BigEndian.AppendUint32(dst, uint32(tp.Partition))
		}
	}
	return dst
}

var errCompletionTag = errors.New("txn: malformed completion tag")

// parseCompletion decodes a CompletionTag value.
func parseCompletion(b []byte) (*completion, error) {
	r := reader{b: b}
	result := r.u8()
	c := &completion{commit: result == 1, pid: int64(r.u64()), epoch: int16(r.u16()), coordinatorEpoch: int32(r.u32())}
	valid := result <= 1 && c.pid >= 0 && c.epoch >= 0
	for n := r.u32(); n > 0 && r.ok() && valid; n-- {
		topic := string(r.bytes(int(r.u16())))
		k := r.u32()
		valid = topic != "" && k > 0
		for ; k > 0 && r.ok() && valid; k-- {
			tp := TopicPartition{topic, int32(r.u32())}
			// Sorted, once each, as written (sortedPartitions): what is not
			// was never a completion, and a marker to a negative partition
			// would be retried for ever.
			valid = tp.Partition >= 0 && (len(c.partitions) == 0 || lessPartition(c.partitions[len(c.partitions)-1], tp))
			c.partitions = append(c.partitions, tp)
		}
	}
	if !r.ok() || !valid || len(r.b) != 0 {
		return nil, errCompletionTag
	}
	return c, nil
}

// lessPartition orders partitions by topic, then partition.
func lessPartition(a, b TopicPartition) bool {
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	return a.Partition < b.Partition
}

// reader reads big-endian fields; past the end it yields zeros and ok false.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) ok() bool { return !r.bad }

func (r *reader) bytes(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() byte {
	if b := r.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.bytes(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.bytes(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.bytes(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// carryableLocked reports whether an implicit add of producer (pid, epoch)
// may start its transaction now, carrying the completion of the one it ended:
// m is that TV2 transaction, prepared (committed) with its markers being
// written here, and (pid, epoch) is what its EndTxn answered.
func carryableLocked(m *txnMeta, pid int64, epoch int16) bool {
	return m != nil && m.completing && m.chain == nil && continuesLocked(m, pid, epoch)
}

// continuesLocked reports whether (pid, epoch) is what the EndTxn of m, a
// prepared TV2 transaction, answered: its producer's next transaction.
func continuesLocked(m *txnMeta, pid int64, epoch int16) bool {
	if !m.tv2 || (m.state != PrepareCommit && m.state != PrepareAbort) {
		return false
	}
	p, e := m.continueAs()
	return p == pid && e == epoch
}

// carryLocked starts the producer's next transaction on parts while the
// markers of prepared transaction m are still being written: its Ongoing
// record carries m's completion, at the producer id and epoch the complete
// state would have. It is called with sh.mu held and releases it.
func (sh *shard) carryLocked(m *txnMeta, parts []TopicPartition) int16 {
	c := &completion{commit: m.state == PrepareCommit, pid: m.pid, epoch: m.epoch, coordinatorEpoch: sh.epoch,
		partitions: m.sortedPartitions()}
	next := m.clone()
	if m.nextPID >= 0 {
		next.prevPID, next.pid, next.epoch, next.nextPID, next.lastEpoch = m.pid, m.nextPID, 0, -1, -1
	}
	now := time.Now()
	next.state, next.updated, next.started, next.tv2, next.carried = Ongoing, now, now, true, c
	next.partitions = make(map[TopicPartition]struct{}, len(parts))
	for _, tp := range parts {
		next.partitions[tp] = struct{}{}
	}
	m.carrying = c
	return sh.chainWriteLocked(m, next)
}

// carriedLocked reports whether the producer's next transaction carries (or
// is writing a record that carries) the completion of prepared transaction
// (pid, epoch), whose markers are all committed now: the completion is done,
// and the next record of the id leaves it out.
func carriedLocked(m *txnMeta, pid int64, epoch int16) bool {
	for _, c := range []*completion{m.carrying, m.carried} {
		if c != nil && c.pid == pid && c.epoch == epoch {
			c.done.Store(true)
			if m.carried == c {
				m.carried = nil
			}
			m.completing = false
			return true
		}
	}
	return false
}

// resendCarried writes again, in the background, the markers of the
// completion an Ongoing state loaded from the log carries, as a prepared
// transaction's are: the coordinator that wrote it may have stopped first.
func (sh *shard) resendCarried(m *txnMeta) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c := m.carried
	if sh.closing || c == nil {
		return
	}
	sh.wg.Add(1)
	go func() {
		defer sh.wg.Done()
		markers := c.markers()
		for i := range markers {
			markers[i].CoordinatorEpoch = sh.epoch
		}
		if !sh.writeMarkers(m, markers, sh.retrier(m.id)) {
			return
		}
		sh.mu.Lock()
		c.done.Store(true)
		if m.carried == c {
			m.carried = nil
		}
		sh.mu.Unlock()
		sh.notifyChanged()
	}()
}
