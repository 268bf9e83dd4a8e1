package kafkaapi

// Produce, key 0, versions 3..7 (magic 2 record batches only).
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
// here. Under flush.policy=always acks=1 and acks=-1 are also answered only once the
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
// Not implemented: per-record errors (v8+).

import (
	"context"
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
		min: 3, max: 7,
		handle:      (*Server).handleProduce,
		entries:     produceEntries,
		shape:       produceShape,
		weighsFrame: true,
	})
}

func (s *Server) handleProduce(c *conn, hdr *RequestHeader, req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	s.waitUnfenced(c)
	type pending struct {
		pr    *kmsg.ProduceResponseTopicPartition
		p     *replication.Partition
		epoch int32 // the leadership the batch was appended in
		last  int64
	}
	var waits []pending // acks=all, or flush.policy=always: answered once acknowledged
	var appended int    // record bytes appended, counted against producer_byte_rate
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	mayWrite := c.allowedTopics(acl.OpWrite)
	// A transactional producer needs WRITE on its transactional id too.
	txnAllowed := req.TransactionID == nil ||
		(s.cfg.Txn != nil && c.allowed(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID))
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
			var res replication.AppendResult
			var err error
			if req.TransactionID != nil && batch.IsTransactional(rp.Records) {
				res, err = s.appendTransactional(c, p, *req.TransactionID, rp.Records, req.Acks)
			} else {
				res, err = p.Append(rp.Records, req.Acks)
			}
			if err != nil {
				pr.ErrorCode = errorCode(err)
				c.logger.Debug("produce refused", "topic", t.Topic, "partition", rp.Partition, "err", err)
				continue
			}
			if !res.Duplicate {
				s.metrics.produceBytes.Add(float64(len(rp.Records)))
				appended += len(rp.Records)
			}
			pr.BaseOffset = res.BaseOffset
			pr.LogAppendTime = res.LogAppendTime
			pr.LogStartOffset = p.LogStartOffset()
			if req.Acks == -1 || req.Acks == 1 && p.SyncBeforeAck() {
				waits = append(waits, pending{pr, p, res.LeaderEpoch, res.LastOffset})
			}
		}
	}
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
		timeout := requestTimeout(req.TimeoutMillis)
		waitFrom := time.Now()
		c.ackWait = func(parent context.Context) {
			ctx, cancel := context.WithTimeout(parent, timeout)
			defer cancel()
			defer func() { s.metrics.ackWait.Observe(time.Since(waitFrom).Seconds()) }()
			for _, w := range waits {
				if err := w.p.WaitAcked(ctx, w.epoch, w.last, req.Acks); err != nil {
					w.pr.ErrorCode = kerr.RequestTimedOut.Code
					if code := errorCode(err); code != kerr.UnknownServerError.Code {
						w.pr.ErrorCode = code // NOT_LEADER_OR_FOLLOWER: leadership moved meanwhile
					}
				}
			}
		}
	}
	return resp
}
