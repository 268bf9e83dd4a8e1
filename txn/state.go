package txn

// The state of one transactional id, and its records in __transaction_state
// (Kafka's TransactionLogKey v0 / TransactionLogValue v0, docs/format/transactions.md):
//
//	key    version i16 (0), transactional_id string
//	value  version i16 (0), producer_id i64, producer_epoch i16, timeout_ms i32,
//	       state i8, topics [topic string, partitions [i32]],
//	       last_update_ms i64, start_ms i64;  null: the id expired
//
// A transaction of a TV2 client (KIP-890 part 2, EndTxn v5) is written as
// value v1 (flexible, v0's fields then tags): 0 previous_producer_id, 1
// next_producer_id, 2 client_transaction_version; tag 3 next_producer_epoch
// (KIP-939) is never written but kept if read. Every other record stays v0,
// byte for byte.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
)

// Record versions written; Kafka's, they must not change.
const (
	keyVersion     = 0
	valueVersion   = 0
	valueVersionV2 = 1 // a TV2 client's transaction
)

// clientVersionV2 is client_transaction_version of a TV2 client.
const clientVersionV2 = 2

// Error codes answered.
var (
	codeNotCoordinator        = kerr.NotCoordinator.Code
	codeLoadInProgress        = kerr.CoordinatorLoadInProgress.Code
	codeRequestTimedOut       = kerr.RequestTimedOut.Code
	codeConcurrent            = kerr.ConcurrentTransactions.Code
	codeFenced                = kerr.ProducerFenced.Code
	codeInvalidEpoch          = kerr.InvalidProducerEpoch.Code
	codeInvalidMapping        = kerr.InvalidProducerIDMapping.Code
	codeInvalidState          = kerr.InvalidTxnState.Code
	codeInvalidTimeout        = kerr.InvalidTransactionTimeout.Code
	codeUnknownTopic          = kerr.UnknownTopicOrPartition.Code
	codeOperationNotAttempted = kerr.OperationNotAttempted.Code
	codeTxnIDNotFound         = kerr.TransactionalIDNotFound.Code
)

// State is a transaction's state, Kafka's numbering.
type State = kmsg.TransactionState

const (
	Empty          = kmsg.TransactionStateEmpty
	Ongoing        = kmsg.TransactionStateOngoing
	PrepareCommit  = kmsg.TransactionStatePrepareCommit
	PrepareAbort   = kmsg.TransactionStatePrepareAbort
	CompleteCommit = kmsg.TransactionStateCompleteCommit
	CompleteAbort  = kmsg.TransactionStateCompleteAbort
	Dead           = kmsg.TransactionStateDead
)

// StateName is the name Kafka's tools show for a state.
func StateName(s State) string {
	switch s {
	case Empty:
		return "Empty"
	case Ongoing:
		return "Ongoing"
	case PrepareCommit:
		return "PrepareCommit"
	case PrepareAbort:
		return "PrepareAbort"
	case CompleteCommit:
		return "CompleteCommit"
	case CompleteAbort:
		return "CompleteAbort"
	case Dead:
		return "Dead"
	}
	return fmt.Sprintf("State(%d)", s)
}

// TopicPartition names a partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// txnMeta is the state of one transactional id. It is guarded by its shard's mu.
type txnMeta struct {
	id         string
	pid        int64
	epoch      int16
	timeout    time.Duration
	state      State
	partitions map[TopicPartition]struct{}
	started    time.Time // of the ongoing transaction
	updated    time.Time
	// lastEpoch is the epoch the producer had before the coordinator bumped it to
	// abort a timed-out transaction (-1: none): its InitProducerId with that epoch
	// is accepted (KIP-360). In memory only.
	lastEpoch int16
	// tv2: the transaction is a TV2 client's (KIP-890 part 2): EndTxn bumps
	// the epoch, and its records are value v1.
	tv2 bool
	// prevPID is the producer id before an epoch overflow rotated it (-1:
	// none), so that an EndTxn retry with the old id is recognized; nextPID is
	// the id a prepared TV2 transaction rotates to once complete (-1: none).
	// nextEpoch is KIP-939's next_producer_epoch, kept as read (-1: none).
	prevPID, nextPID int64
	nextEpoch        int16
	// carried is the previous TV2 transaction's completion this Ongoing state
	// carries until its markers are committed (carry.go; nil: none). Written
	// as CompletionTag while not done.
	carried *completion
	// completing: complete() writes the markers of this prepared transaction;
	// carrying: an implicit add is writing the next transaction's Ongoing
	// record, carrying this one's completion (carry.go). In memory only.
	completing bool
	carrying   *completion
	// chain: implicit adds whose records are appended and not all
	// committed (chain.go; nil: none). In memory only.
	chain *addChain
	// pending is set while a change of this transaction is being written.
	pending bool
	// awaiting counts the requests of the producer waiting for its ended
	// transaction's markers (shard.awaitCompletion). In memory only.
	awaiting int
	// completeUnwritten: the state is CompleteCommit or CompleteAbort, and its
	// record was left to the next change of this id, which a request was waiting
	// to make: that change appends both records in one batch, so one sync covers
	// them (complete.go). Should that request change nothing, the record waits
	// for the id's next change; a coordinator elected meanwhile finds the
	// transaction prepared and writes its markers again. In memory only.
	completeUnwritten bool
	// adds gathers the AddPartitionsToTxn requests of the producer that wait
	// for the transaction to become changeable (ops.go, AddPartitions); nil:
	// none. In memory only.
	adds *addBatch
	// stamps holds, by partition, the stamp of the producer's latest marker
	// written there by this coordinator (notice.go). In memory only, kept
	// across states of the same producer id.
	stamps map[TopicPartition]Stamp
}

// set makes next m's state; the requests waiting on m stay counted, and
// gathered, and a completion running or carried stays known.
func (m *txnMeta) set(next *txnMeta) {
	awaiting, adds, stamps := m.awaiting, m.adds, m.stamps
	completing, carrying, chain := m.completing, m.carrying, m.chain
	if next.pid != m.pid {
		stamps = nil // another producer: its markers have stamps of their own
	}
	*m = *next
	m.awaiting, m.adds, m.stamps = awaiting, adds, stamps
	m.completing, m.carrying, m.chain = completing, carrying, chain
}

// sortedPartitions returns the transaction's partitions in order.
func (m *txnMeta) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool { return lessPartition(out[i], out[j]) })
	return out
}

// clone copies m, for a change to write before it takes effect.
func (m *txnMeta) clone() *txnMeta {
	n := *m
	n.adds, n.stamps = nil, nil
	n.completing, n.carrying, n.chain = false, nil, nil
	n.partitions = make(map[TopicPartition]struct{}, len(m.partitions))
	for tp := range m.partitions {
		n.partitions[tp] = struct{}{}
	}
	return &n
}

// record is m's record in the log.
func (m *txnMeta) record() batch.Record {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: m.id}
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch = m.pid, m.epoch
	v.TimeoutMillis = int32(m.timeout / time.Millisecond)
	v.State = m.state
	var cur *kmsg.TxnMetadataValueTopic
	for _, tp := range m.sortedPartitions() {
		if cur == nil || cur.Topic != tp.Topic {
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			cur = &v.Topics[len(v.Topics)-1]
		}
		cur.Partitions = append(cur.Partitions, tp.Partition)
	}
	v.LastUpdateTimestamp = m.updated.UnixMilli()
	v.StartTimestamp = -1
	if !m.started.IsZero() {
		v.StartTimestamp = m.started.UnixMilli()
	}
	if m.tv2 {
		v.Version, v.ClientTransactionVersion = valueVersionV2, clientVersionV2
		v.PreviousProducerID, v.NextProducerID, v.NextProducerEpoch = m.prevPID, m.nextPID, m.nextEpoch
		if c := m.carried; c != nil && !c.done.Load() {
			v.UnknownTags.Set(CompletionTag, appendCompletion(nil, c))
		}
	}
	return batch.Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// tombstone is the record forgetting transactional id id.
func tombstone(id string) batch.Record {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	return batch.Record{Key: k.AppendTo(nil)}
}

// errRecordKey: a record of __transaction_state whose key is not a transaction's.
var errRecordKey = errors.New("txn: not a transaction log record")

// errRecordValue: a value of a version or state Kafka never writes.
var errRecordValue = errors.New("txn: unknown transaction log value")

// parseRecord reads one record of the log: the transactional id and its state
// (nil: the id expired).
func parseRecord(r batch.Record) (string, *txnMeta, error) {
	if len(r.Key) < 2 {
		return "", nil, errRecordKey
	}
	if v := int16(binary.BigEndian.Uint16(r.Key)); v != 0 {
		return "", nil, fmt.Errorf("%w: key version %d", errRecordKey, v)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		return "", nil, err
	}
	if r.Value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		return k.TransactionalID, nil, fmt.Errorf("value of %q: %w", k.TransactionalID, err)
	}
	// Kafka's versions and states only (as its TransactionLog reader): kmsg
	// reads any version as v1 and any state byte.
	if v.Version < valueVersion || v.Version > valueVersionV2 || v.State < Empty || v.State > Dead {
		return k.TransactionalID, nil, fmt.Errorf("%w: version %d, state %d of %q", errRecordValue, v.Version, v.State, k.TransactionalID)
	}
	m := &txnMeta{
		id: k.TransactionalID, pid: v.ProducerID, epoch: v.ProducerEpoch,
		timeout: time.Duration(v.TimeoutMillis) * time.Millisecond, state: v.State,
		partitions: make(map[TopicPartition]struct{}),
		updated:    time.UnixMilli(v.LastUpdateTimestamp), lastEpoch: -1,
		tv2:     v.Version >= 1 && v.ClientTransactionVersion >= clientVersionV2,
		prevPID: v.PreviousProducerID, nextPID: v.NextProducerID, nextEpoch: v.NextProducerEpoch,
	}
	if v.StartTimestamp >= 0 {
		m.started = time.UnixMilli(v.StartTimestamp)
	}
	var tagErr error
	v.UnknownTags.Each(func(k uint32, b []byte) {
		if k == CompletionTag && m.tv2 {
			m.carried, tagErr = parseCompletion(b)
		}
	})
	if m.carried != nil && m.state != Ongoing {
		tagErr = fmt.Errorf("%w on a %s record", errCompletionTag, StateName(m.state))
	}
	if tagErr != nil {
		return k.TransactionalID, nil, fmt.Errorf("value of %q: %w", k.TransactionalID, tagErr)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[TopicPartition{t.Topic, p}] = struct{}{}
		}
	}
	return m.id, m, nil
}
