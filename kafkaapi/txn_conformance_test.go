package kafkaapi_test

// Conformance tests of the transaction keys (24..28) at every advertised version,
// against the shared node; InitProducerId's (22) are in conformance_test.go. The
// coordinator's semantics are tested with franz-go in txn_client_test.go and in
// e2e; these tests check the wire and the codes.

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	for key, f := range map[int16]conformance{
		24: conformAddPartitionsToTxn, 25: conformAddOffsetsToTxn, 26: conformEndTxn,
		27: conformWriteTxnMarkers, 28: conformTxnOffsetCommit,
		61: conformDescribeProducers, 65: conformDescribeTransactions, 66: conformListTransactions,
	} {
		conformanceTests[key] = f
	}
}

// findTxnCoordinator sends req (FindCoordinator for a transactional id) until the
// coordinator is named, creating __transaction_state on first use.
func findTxnCoordinator(t *testing.T, c *kconn, req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := c.do(req).(*kmsg.FindCoordinatorResponse)
		if resp.ErrorCode == 0 {
			return resp
		}
		if resp.ErrorCode != kerr.CoordinatorNotAvailable.Code || time.Now().After(deadline) {
			t.Fatalf("FindCoordinator %s: %s", req.CoordinatorKey, errName(resp.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// initTxnAt sends InitProducerId at version v for transactional id until the
// coordinator has loaded, and returns the producer id and epoch.
func initTxnAt(t *testing.T, c *kconn, v int16, id string) (int64, int16) {
	t.Helper()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(1)
	fc.CoordinatorKey, fc.CoordinatorType = id, 1
	findTxnCoordinator(t, c, fc)
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(v)
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = 60000
		resp := c.do(req).(*kmsg.InitProducerIDResponse)
		switch resp.ErrorCode {
		case 0:
			return resp.ProducerID, resp.ProducerEpoch
		case kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.ConcurrentTransactions.Code:
		default:
			t.Fatalf("InitProducerId %s: %s", id, errName(resp.ErrorCode))
		}
		if time.Now().After(deadline) {
			t.Fatalf("InitProducerId %s: still %s after 30 s", id, errName(resp.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// txnFixture is a transactional producer with an id, on a new one-partition topic.
type txnFixture struct {
	id, topic string
	pid       int64
	epoch     int16
}

func newTxnFixture(t *testing.T, c *kconn) txnFixture {
	t.Helper()
	f := txnFixture{id: topicName(t, "id"), topic: topicName(t, "")}
	createTopic(t, c, f.topic, 1, nil)
	f.pid, f.epoch = initTxnAt(t, c, 0, f.id)
	return f
}

func (f txnFixture) addPartition(t *testing.T, c *kconn, v int16, epoch int16, topic string) kmsg.AddPartitionsToTxnResponse {
	t.Helper()
	return f.addPartitionVerify(t, c, v, epoch, topic, false)
}

// addPartitionVerify sends AddPartitionsToTxn at version v for partition 0 of
// topic (v4+: as one transaction of the batched form, verifyOnly as given) and
// returns the answer in the v0..v3 form.
func (f txnFixture) addPartitionVerify(t *testing.T, c *kconn, v int16, epoch int16, topic string, verifyOnly bool) kmsg.AddPartitionsToTxnResponse {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(v)
	if v < 4 {
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = f.id, f.pid, epoch
		req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
		return *c.do(req).(*kmsg.AddPartitionsToTxnResponse)
	}
	x := kmsg.NewAddPartitionsToTxnRequestTransaction()
	x.TransactionalID, x.ProducerID, x.ProducerEpoch, x.VerifyOnly = f.id, f.pid, epoch, verifyOnly
	x.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: []int32{0}}}
	req.Transactions = append(req.Transactions, x)
	resp := c.do(req).(*kmsg.AddPartitionsToTxnResponse)
	wantCode(t, "add partitions (v4)", resp.ErrorCode, 0)
	if len(resp.Transactions) != 1 || resp.Transactions[0].TransactionalID != f.id {
		t.Fatalf("answer %+v", resp.Transactions)
	}
	out := kmsg.AddPartitionsToTxnResponse{Version: v}
	for _, rt := range resp.Transactions[0].Topics {
		t := kmsg.AddPartitionsToTxnResponseTopic{Topic: rt.Topic}
		for _, rp := range rt.Partitions {
			t.Partitions = append(t.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: rp.Partition, ErrorCode: rp.ErrorCode})
		}
		out.Topics = append(out.Topics, t)
	}
	return out
}

func (f txnFixture) end(t *testing.T, c *kconn, v int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(v)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = f.id, f.pid, f.epoch, commit
	return c.do(req).(*kmsg.EndTxnResponse).ErrorCode
}

// produceTxn produces a transactional batch of the fixture's producer.
func (f txnFixture) produce(t *testing.T, c *kconn, seq int32, values ...string) {
	t.Helper()
	req := produceRequest(7, -1, f.topic, 0, makeBatchAttrs(batchOpts{producerID: f.pid, epoch: f.epoch, seq: seq}, 0x10, values...))
	req.TransactionID = &f.id
	wantCode(t, "transactional produce", c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, 0)
}

func conformAddPartitionsToTxn(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			f := newTxnFixture(t, c)
			resp := f.addPartition(t, c, v, f.epoch, f.topic)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("answer %+v", resp.Topics)
			}
			wantCode(t, "add partition", resp.Topics[0].Partitions[0].ErrorCode, 0)
			wantCode(t, "stale epoch", f.addPartition(t, c, v, f.epoch-1, f.topic).Topics[0].Partitions[0].ErrorCode, kerr.InvalidProducerEpoch.Code)
			wantCode(t, "unknown topic", f.addPartition(t, c, v, f.epoch, "no-such-topic").Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			if v >= 4 {
				// verify_only (KIP-890 part 1): an added partition is confirmed, another not.
				other := topicName(t, "other")
				createTopic(t, c, other, 1, nil)
				wantCode(t, "verify added", f.addPartitionVerify(t, c, v, f.epoch, f.topic, true).Topics[0].Partitions[0].ErrorCode, 0)
				wantCode(t, "verify not added", f.addPartitionVerify(t, c, v, f.epoch, other, true).Topics[0].Partitions[0].ErrorCode, kerr.InvalidTxnState.Code)
			}
			wantCode(t, "abort", f.end(t, c, 0, false), 0)
		})
	}
}

func conformAddOffsetsToTxn(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			f := newTxnFixture(t, c)
			group := topicName(t, "group")
			coordinatorFor(t, c, group)
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.SetVersion(v)
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = f.id, f.pid, f.epoch, group
			wantCode(t, "add offsets", c.do(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, 0)
			req.ProducerID = f.pid + 1000
			wantCode(t, "another producer id", c.do(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.InvalidProducerIDMapping.Code)
			wantCode(t, "abort", f.end(t, c, 0, false), 0)
		})
	}
}

// conformEndTxn commits a transaction that wrote a record: the last stable offset
// moves past its marker; the same decision again succeeds, the other one does not.
func conformEndTxn(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			f := newTxnFixture(t, c)
			wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
			f.produce(t, c, 0, "a", "b")
			if lso := listOffset(t, c, f.topic, 1); lso != 0 {
				t.Fatalf("LSO with the transaction open: %d, want 0", lso)
			}
			wantCode(t, "commit", f.end(t, c, v, true), 0)
			// EndTxn answers once the decision is recorded; the marker follows.
			waitFor(t, 10*time.Second, "the LSO after the commit to reach 3 (two records and the marker)",
				func() bool { return listOffset(t, c, f.topic, 1) == 3 })
			wantCode(t, "commit again", f.end(t, c, v, true), 0)
			wantCode(t, "abort after commit", f.end(t, c, v, false), kerr.InvalidTxnState.Code)
		})
	}
}

// listOffset asks ListOffsets v2 for the latest offset at isolation level.
func listOffset(t *testing.T, c *kconn, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(2)
	req.ReplicaID, req.IsolationLevel = -1, isolation
	req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1}}}}
	p := c.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	wantCode(t, "list offsets", p.ErrorCode, 0)
	return p.Offset
}

// conformWriteTxnMarkers writes an abort marker for a producer's open transaction
// as a coordinator would: read_committed Fetch then lists it as aborted; a marker
// of an older producer epoch or coordinator epoch is refused.
func conformWriteTxnMarkers(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			f := newTxnFixture(t, c)
			// Not added to the transaction: refused (KIP-890 part 1).
			req := produceRequest(7, -1, f.topic, 0, makeBatchAttrs(batchOpts{producerID: f.pid, epoch: f.epoch, seq: 0}, 0x10, "unverified"))
			req.TransactionID = &f.id
			wantCode(t, "produce to a partition not added", c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, kerr.InvalidTxnState.Code)
			wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
			f.produce(t, c, 0, "doomed")
			coordinatorEpoch := int32(1)
			marker := func(epoch int16, topic string) int16 {
				req := kmsg.NewPtrWriteTxnMarkersRequest()
				req.SetVersion(v)
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = f.pid, epoch, false, coordinatorEpoch
				m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}
				req.Markers = append(req.Markers, m)
				resp := c.do(req).(*kmsg.WriteTxnMarkersResponse)
				if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != f.pid || len(resp.Markers[0].Topics) != 1 {
					t.Fatalf("answer %+v", resp.Markers)
				}
				return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
			}
			wantCode(t, "abort marker", marker(f.epoch+1, f.topic), 0)
			wantCode(t, "stale marker", marker(f.epoch, f.topic), kerr.InvalidProducerEpoch.Code)
			coordinatorEpoch = 0
			wantCode(t, "marker of an older coordinator", marker(f.epoch+1, f.topic), kerr.TransactionCoordinatorFenced.Code)
			coordinatorEpoch = 1
			wantCode(t, "unknown topic", marker(f.epoch+1, "no-such-topic"), kerr.UnknownTopicOrPartition.Code)

			fr := kmsg.NewPtrFetchRequest()
			fr.SetVersion(11)
			fr.ReplicaID, fr.MaxBytes, fr.IsolationLevel = -1, 1<<20, 1
			fr.Topics = []kmsg.FetchRequestTopic{{Topic: f.topic, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}}
			p := c.do(fr).(*kmsg.FetchResponse).Topics[0].Partitions[0]
			wantCode(t, "fetch", p.ErrorCode, 0)
			if p.LastStableOffset != 2 || len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != f.pid || p.AbortedTransactions[0].FirstOffset != 0 {
				t.Fatalf("read_committed fetch: LSO %d, aborted %+v; want 2 and producer %d from 0", p.LastStableOffset, p.AbortedTransactions, f.pid)
			}
		})
	}
}

// conformTxnOffsetCommit commits an offset inside a transaction: OffsetFetch shows
// it only once the transaction commits.
func conformTxnOffsetCommit(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			f := newTxnFixture(t, c)
			group := topicName(t, "group")
			coordinatorFor(t, c, group)
			ao := kmsg.NewPtrAddOffsetsToTxnRequest()
			ao.SetVersion(0)
			ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = f.id, f.pid, f.epoch, group
			wantCode(t, "add offsets", c.do(ao).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, 0)
			commit := func(generation int32, member string) int16 {
				req := kmsg.NewPtrTxnOffsetCommitRequest()
				req.SetVersion(v)
				req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = f.id, group, f.pid, f.epoch
				req.Generation, req.MemberID = generation, member
				p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				p.Partition, p.Offset = 0, 42
				req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: f.topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
				resp := c.do(req).(*kmsg.TxnOffsetCommitResponse)
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("answer %+v", resp.Topics)
				}
				return resp.Topics[0].Partitions[0].ErrorCode
			}
			if v >= 3 {
				wantCode(t, "unknown member", commit(3, "nobody"), kerr.UnknownMemberID.Code)
			}
			wantCode(t, "txn offset commit", commit(-1, ""), 0)
			fetch := func() int64 {
				req := kmsg.NewPtrOffsetFetchRequest()
				req.SetVersion(5)
				req.Group = group
				req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: f.topic, Partitions: []int32{0}}}
				return c.do(req).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0].Offset
			}
			if o := fetch(); o != -1 {
				t.Fatalf("offset visible before the commit: %d", o)
			}
			stable := kmsg.NewPtrOffsetFetchRequest()
			stable.SetVersion(7)
			stable.Group, stable.RequireStable = group, true
			stable.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: f.topic, Partitions: []int32{0}}}
			wantCode(t, "require_stable while pending", c.do(stable).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnstableOffsetCommit.Code)
			wantCode(t, "commit", f.end(t, c, 0, true), 0)
			// EndTxn answers once the decision is recorded; the marker follows.
			waitFor(t, 10*time.Second, "the offset after the commit to be 42", func() bool { return fetch() == 42 })
			p := c.do(stable).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.Offset != 42 {
				t.Fatalf("require_stable after the commit: %s offset %d, want 42", errName(p.ErrorCode), p.Offset)
			}
		})
	}
}

// conformDescribeTransactions describes an open transaction and an unknown id.
func conformDescribeTransactions(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			f := newTxnFixture(t, c)
			wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.SetVersion(v)
			req.TransactionalIDs = []string{f.id, "no-such-id"}
			resp := c.do(req).(*kmsg.DescribeTransactionsResponse)
			if len(resp.TransactionStates) != 2 {
				t.Fatalf("answer %+v", resp.TransactionStates)
			}
			st := resp.TransactionStates[0]
			wantCode(t, "describe", st.ErrorCode, 0)
			if st.State != "Ongoing" || st.ProducerID != f.pid || st.ProducerEpoch != f.epoch || st.StartTimestamp <= 0 ||
				len(st.Topics) != 1 || st.Topics[0].Topic != f.topic || len(st.Topics[0].Partitions) != 1 {
				t.Fatalf("described %+v", st)
			}
			wantCode(t, "unknown id", resp.TransactionStates[1].ErrorCode, kerr.TransactionalIDNotFound.Code)
			wantCode(t, "abort", f.end(t, c, 0, false), 0)
		})
	}
}

// conformListTransactions lists an ongoing transaction by state and producer id.
func conformListTransactions(t *testing.T, c *kconn, versions []int16) {
	f := newTxnFixture(t, c)
	wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	defer f.end(t, c, 0, false)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrListTransactionsRequest()
			req.SetVersion(v)
			req.StateFilters, req.ProducerIDFilters = []string{"Ongoing", "Bogus"}, []int64{f.pid}
			resp := c.do(req).(*kmsg.ListTransactionsResponse)
			wantCode(t, "list", resp.ErrorCode, 0)
			if len(resp.TransactionStates) != 1 || resp.TransactionStates[0].TransactionalID != f.id || resp.TransactionStates[0].TransactionState != "Ongoing" {
				t.Fatalf("listed %+v", resp.TransactionStates)
			}
			if len(resp.UnknownStateFilters) != 1 || resp.UnknownStateFilters[0] != "Bogus" {
				t.Fatalf("unknown state filters %q", resp.UnknownStateFilters)
			}
			req.StateFilters = []string{"Empty"}
			if got := c.do(req).(*kmsg.ListTransactionsResponse).TransactionStates; len(got) != 0 {
				t.Fatalf("Empty filter listed %+v", got)
			}
		})
	}
}

// conformDescribeProducers shows a producer with an open transaction.
func conformDescribeProducers(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			f := newTxnFixture(t, c)
			wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
			f.produce(t, c, 0, "a", "b")
			req := kmsg.NewPtrDescribeProducersRequest()
			req.SetVersion(v)
			req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: f.topic, Partitions: []int32{0, 5}}}
			resp := c.do(req).(*kmsg.DescribeProducersResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
				t.Fatalf("answer %+v", resp.Topics)
			}
			p := resp.Topics[0].Partitions[0]
			wantCode(t, "describe", p.ErrorCode, 0)
			if len(p.ActiveProducers) != 1 || p.ActiveProducers[0].ProducerID != f.pid || p.ActiveProducers[0].LastSequence != 1 || p.ActiveProducers[0].CurrentTxnStartOffset != 0 {
				t.Fatalf("producers %+v", p.ActiveProducers)
			}
			wantCode(t, "missing partition", resp.Topics[0].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			wantCode(t, "abort", f.end(t, c, 0, false), 0)
		})
	}
}
