package kafkaapi

// Produce, key 0, versions 3..11, and 12 with transaction version 2 (magic 2
// record batches only; v9+ flexible).
//
// Behaviour: each partition's records must be exactly one RecordBatch v2; it is
// checked (length, magic, lastOffsetDelta, CRC32C: CORRUPT_MESSAGE), limited by
// max.message.bytes (MESSAGE_TOO_LARGE), bounded in time under CreateTime by
// message.timestamp.before.max.ms and after.max.ms (INVALID_TIMESTAMP, read from
// the batch header), deduplicated for idempotent producers
// (a retry of one of the last 5 batches gets its original offset; gaps get
// OUT_OF_ORDER_SEQUENCE_NUMBER, older epochs INVALID_PRODUCER_EPOCH) and appended
// whole. A compacted topic (cleanup.policy=compact) refuses a batch holding a
// record without a key with INVALID_RECORD, appending nothing of it (its records
// are decompressed to check). The internal topic __consumer_offsets is written by the group coordinator
// only: producing to it gets INVALID_TOPIC_EXCEPTION, as in Kafka. acks=0 gets no
// response at all; acks=1 is answered once the leader appended; acks=-1 (all) is
// refused with NOT_ENOUGH_REPLICAS, nothing appended, while the ISR is smaller than
// min.insync.replicas, and otherwise answered once the high watermark passes the
// batch (every ISR member has it; NOT_ENOUGH_REPLICAS_AFTER_APPEND instead if the
// ISR has shrunk below min.insync.replicas by then, as in Kafka), or with
// REQUEST_TIMED_OUT after timeout_ms, or
// NOT_LEADER_OR_FOLLOWER as soon as the partition stops being led here (leadership
// moved, or this broker's session is in doubt). While this broker confirms its
// session (after a pause of its process, or a lost lease) a produce first waits for
// it, up to fencedWait, rather than refusing at once a partition that usually stays
// here; once its metadata has caught up and names other leaders for all the
// request's partitions, it is refused at once (waitUnfenced). Under
// flush.policy=always acks=1 and acks=-1 are also answered only once the
// leader's fdatasync covers the batch (group commit; KAFKA_STORAGE_ERROR if it fails). acks must be -1, 0 or 1
// (INVALID_REQUIRED_ACKS otherwise). A write the disk refuses (ENOSPC, EIO) gets
// KAFKA_STORAGE_ERROR and leaves nothing in the log.
//
// A waiting request does not hold its connection (pipeline.go): the Produce
// requests a client pipelines behind it are read and appended meanwhile, in
// request order, and answered in request order; any other request is read then
// but handled only once every earlier answer is written.
//
// Transactions: a transactional producer's batches carry the transactional flag and
// open its transaction on the partition (replication/txn.go) until the coordinator's
// marker. Before the first batch of a producer's transaction on a partition, the
// leader asks the transaction coordinator whether the partition is in that
// transaction (KIP-890 part 1: AddPartitionsToTxn v4 verify_only to another broker);
// if not, the batch gets INVALID_TXN_STATE rather than opening a transaction no
// coordinator will end. A transactional batch in a request without a
// transactional_id gets INVALID_TXN_STATE. Internal topics (__consumer_offsets,
// __transaction_state) are written by their coordinators only.
//
// Authorization: WRITE on each topic (TOPIC_AUTHORIZATION_FAILED for every partition
// of a topic without it, nothing appended), as Kafka checks it, and WRITE on the
// transactional id when one is given (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
// Idempotent batches need nothing more: their producer id comes from
// InitProducerId, which checks IDEMPOTENT_WRITE.
//
// Quotas (docs/quotas.md): the record bytes appended count against the
// client's producer_byte_rate; over it, the answer carries throttle_time_ms and
// the connection is muted for that long (throttle.go).
//
// Newer versions (Kafka's ProduceRequest.json): v8 names the records that made a
// batch refused (KIP-467): a compacted topic's records without a key
// (INVALID_RECORD) and, under CreateTime, the records whose timestamp is out of
// bounds (INVALID_TIMESTAMP; the batch header is checked, and a refused batch's
// records are read to name them), each by index in the batch with Kafka's
// message, and the batch's summary in error_message. v9 is flexible. v10 answers
// NOT_LEADER_OR_FOLLOWER with the partition's leader and epoch from the metadata
// cache, and that broker's address on the listener the client came in on
// (KIP-951: the client moves without a Metadata round trip); none when no live
// leader is known. v11 answers a transactional batch for a partition that is not
// in the producer's transaction (the KIP-890 verification above) with
// TRANSACTION_ABORTABLE instead of INVALID_TXN_STATE (KIP-1050: the producer can
// abort and go on).
//
// v12 (transaction version 2, KIP-890 part 2; served only with Config.TxnV2,
// not advertised yet) has v11's schema. Its producer never sends
// AddPartitionsToTxn: a transactional batch that would open a transaction on
// its partition is added to it by the leader (an implicit add: in memory when
// the transaction coordinator is here, else AddPartitionsToTxn v5 in the
// brokers' add mode), then waits for the marker of the producer's previous
// transaction there if it is not appended yet (at most
// replication.MarkerHoldTimeout, then CONCURRENT_TRANSACTIONS), then is
// appended; the add and the wait happen off the connection's loop
// (txn_add.go). The coordinator's refusals map to codes a TV2 producer
// recovers from (addCode): a coordinator that moved or loads is
// NOT_ENOUGH_REPLICAS, CONCURRENT_TRANSACTIONS stays, a partition the
// transaction cannot take is TRANSACTION_ABORTABLE; an ended epoch is
// INVALID_PRODUCER_EPOCH (the fence), nothing appended. v3-v11 keep the
// verification and notices above.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
	"skiff/internal/batch"
	"skiff/quota"
	"skiff/replication"
)

func init() {
	register(api[*kmsg.ProduceRequest]{
		min: 3, max: 11, txnV2Max: 12,
		handle:      (*Server).handleProduce,
		entries:     produceEntries,
		shape:       produceShape,
		weighsFrame: true,
		// Waits for acknowledgements overlap (pipeline.go); behind a client's
		// AddPartitionsToTxn a Produce waits for it, so that its partitions are
		// in the transaction before its batches are checked (KIP-890 part 1).
		pipelined: func(_ int16, adds bool) bool { return !adds },
	})
}

func (s *Server) handleProduce(c *conn, hdr *RequestHeader, req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	s.waitUnfenced(c, func(yield func(string, int32) bool) {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if !yield(t.Topic, p.Partition) {
					return
				}
			}
		}
	})
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	mayWrite := c.allowedTopics(acl.OpWrite)
	// A transactional producer needs WRITE on its transactional id too.
	txnAllowed := req.TransactionID == nil ||
		(s.cfg.Txn != nil && c.allowed(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID))
	var verified map[*replication.Partition]txnVerified
	if req.TransactionID != nil && txnAllowed && hdr.Version < 12 {
		verified = s.verifyProduce(c, *req.TransactionID, req, mayWrite)
	}
	var jobs []produceJob
	for i, t := range req.Topics {
		authorized := mayWrite(t.Topic)
		rt := &resp.Topics[i]
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for j, rp := range t.Partitions {
			pr := &rt.Partitions[j]
			*pr = kmsg.NewProduceResponseTopicPartition()
			pr.Partition = rp.Partition
			pr.BaseOffset, pr.LogAppendTime, pr.LogStartOffset = -1, -1, -1
			switch {
			case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
				pr.ErrorCode = kerr.InvalidRequiredAcks.Code
				continue
			case !txnAllowed:
				pr.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				continue
			case !authorized:
				pr.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			case cluster.IsInternalTopic(t.Topic) && !s.writesShareState(c, hdr, t.Topic):
				pr.ErrorCode = kerr.InvalidTopicException.Code
				continue
			case req.TransactionID == nil && batch.IsTransactional(rp.Records):
				pr.ErrorCode = kerr.InvalidTxnState.Code // a transaction needs its coordinator
				continue
			}
			p, code := s.localPartition(t.Topic, rp.Partition)
			if code != 0 {
				pr.ErrorCode = code
				continue
			}
			txnBatch := req.TransactionID != nil && batch.IsTransactional(rp.Records)
			jobs = append(jobs, produceJob{pr: pr, p: p, records: rp.Records, tv2: txnBatch && hdr.Version >= 12})
		}
	}
	timeout := requestTimeout(req.TimeoutMillis)
	hints := hdr.Version >= 10
	if addsOffLoop(c, jobs) {
		// An implicit add, a hold, or an earlier request's: the appends wait
		// on the answer's goroutine (txn_add.go), the records copied.
		appendAll := s.appendsOffLoop(c, req.TransactionID, req.Acks, hdr.Version, jobs)
		c.releaseFrame()
		if n := jobBytes(jobs); n > 0 {
			c.throttle = c.recordQuota(hdr, quota.ProducerByteRate, float64(n))
		}
		c.ackWait = func(ctx context.Context) {
			waits, _ := appendAll(ctx)
			s.awaitAcks(ctx, c, resp, waits, req.Acks, timeout, hints)
		}
		if req.Acks == 0 {
			return nil
		}
		return resp
	}
	// On the loop: a v12 batch here is in its transaction already (or the
	// rare change since addsOffLoop makes its add here).
	waits, appended := s.appendJobs(c.ctx, c, req.TransactionID, req.Acks, hdr.Version, jobs, verified)
	// Every batch is appended or refused: nothing below reads the request's records,
	// so its frame and memory go back before the wait for replicas (which needs the
	// followers' fetches to be read, and so budget to be free).
	c.releaseFrame()
	if appended > 0 {
		c.throttle = c.recordQuota(hdr, quota.ProducerByteRate, float64(appended))
	}
	if req.Acks == 0 {
		return nil
	}
	if len(waits) > 0 {
		// The connection's loop runs the wait, on its own goroutine unless
		// the client is throttled (pipeline.go), and then answers.
		c.ackWait = func(ctx context.Context) { s.awaitAcks(ctx, c, resp, waits, req.Acks, timeout, hints) }
		return resp
	}
	if hints {
		s.leaderHints(c, resp)
	}
	return resp
}

// ackPending is an appended batch whose answer waits for its acknowledgement
// (acks=all, or flush.policy=always).
type ackPending struct {
	pr    *kmsg.ProduceResponseTopicPartition
	p     *replication.Partition
	epoch int32 // the leadership the batch was appended in
	last  int64
}

// answerAppend fills j's answer with the outcome of its append, res or err,
// and returns the wait for its acknowledgement when it needs one.
func (s *Server) answerAppend(c *conn, j produceJob, version, acks int16, res replication.AppendResult, err error) (ackPending, bool) {
	pr, p := j.pr, j.p
	if err != nil {
		pr.ErrorCode = produceErrorCode(err, version)
		if version >= 8 {
			recordErrors(pr, p, err)
		}
		c.logger.Debug("produce refused", "topic", p.Topic, "partition", p.ID, "err", err)
		return ackPending{}, false
	}
	if !res.Duplicate {
		s.metrics.produceBytes.Add(float64(len(j.records)))
	}
	pr.BaseOffset = res.BaseOffset
	pr.LogAppendTime = res.LogAppendTime
	pr.LogStartOffset = p.LogStartOffset()
	if acks == -1 || acks == 1 && p.SyncBeforeAck() {
		return ackPending{pr, p, res.LeaderEpoch, res.LastOffset}, true
	}
	return ackPending{}, false
}

// awaitAcks waits, up to timeout, for the acknowledgements of waits and fills
// their answers, then resp's leader hints (v10+).
func (s *Server) awaitAcks(parent context.Context, c *conn, resp *kmsg.ProduceResponse, waits []ackPending, acks int16, timeout time.Duration, hints bool) {
	if len(waits) > 0 {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		waitFrom := time.Now()
		for _, w := range waits {
			if err := w.p.WaitAcked(ctx, w.epoch, w.last, acks); err != nil {
				w.pr.ErrorCode = kerr.RequestTimedOut.Code
				if code := errorCode(err); code != kerr.UnknownServerError.Code {
					w.pr.ErrorCode = code // NOT_LEADER_OR_FOLLOWER: leadership moved meanwhile
				}
			}
		}
		s.metrics.ackWait.Observe(time.Since(waitFrom).Seconds())
	}
	if hints {
		s.leaderHints(c, resp)
	}
}

// jobBytes is the record bytes of jobs.
func jobBytes(jobs []produceJob) (n int) {
	for _, j := range jobs {
		n += len(j.records)
	}
	return n
}

// errNotInTxn marks a transactional batch refused because the coordinator says
// its partition is not in the producer's transaction (appendTransactional).
var errNotInTxn = errors.New("partition not in the transaction")

// produceErrorCode is err's code for a client at version: from v11 a partition
// not in the transaction is TRANSACTION_ABORTABLE (KIP-1050), as Kafka answers.
func produceErrorCode(err error, version int16) int16 {
	code := errorCode(err)
	if version >= 11 && code == kerr.InvalidTxnState.Code && errors.Is(err, errNotInTxn) {
		return kerr.TransactionAbortable.Code
	}
	return code
}

// recordErrors names in pr the records that made its batch refused (v8+), with
// the batch's summary, as Kafka's validator does; other errors name none.
func recordErrors(pr *kmsg.ProduceResponseTopicPartition, p *replication.Partition, err error) {
	var re *replication.RecordErrors
	if !errors.As(err, &re) {
		return
	}
	pr.ErrorRecords = make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(re.Records))
	for i, r := range re.Records {
		msg := r.Message
		pr.ErrorRecords[i] = kmsg.ProduceResponseTopicPartitionErrorRecord{RelativeOffset: r.Index, ErrorMessage: &msg}
	}
	msg := re.Message
	pr.ErrorMessage = &msg
	pr.LogStartOffset = p.LogStartOffset()
}

// leaderHints fills KIP-951's hints of a v10+ answer: each partition answered
// NOT_LEADER_OR_FOLLOWER gets its leader and leader epoch from the metadata
// cache, and the answer that leader's address on c's listener, so the client
// moves there without asking for metadata. A leader this broker knows to be
// gone (no live registration, or itself while its replica does not lead) is not
// named: the client asks for metadata then.
func (s *Server) leaderHints(c *conn, resp *kmsg.ProduceResponse) {
	var snap *cluster.Snapshot
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			pr := &rt.Partitions[j]
			if pr.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			if snap == nil {
				snap = s.cache.Snapshot()
			}
			st, ok := snap.Partition(rt.Topic, pr.Partition)
			if !ok || st.Leader == cluster.NoLeader || !s.nameable(rt.Topic, pr.Partition, st.Leader) {
				continue
			}
			b, live := snap.Broker(st.Leader)
			if !live {
				continue
			}
			pr.CurrentLeader.LeaderID, pr.CurrentLeader.LeaderEpoch = st.Leader, st.LeaderEpoch
			host, port, ok := b.Address(c.listener.Name)
			if !ok || hasEndpoint(resp.Brokers, b.ID) {
				continue
			}
			var rack *string
			if b.Rack != "" {
				r := b.Rack
				rack = &r
			}
			resp.Brokers = append(resp.Brokers, kmsg.ProduceResponseBroker{NodeID: b.ID, Host: host, Port: port, Rack: rack})
		}
	}
}

func hasEndpoint(eps []kmsg.ProduceResponseBroker, id int32) bool {
	for _, e := range eps {
		if e.NodeID == id {
			return true
		}
	}
	return false
}
