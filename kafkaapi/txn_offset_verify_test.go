package kafkaapi_test

// KIP-890 part 1 for offsets: TxnOffsetCommit is verified with the transaction
// coordinator before it opens a transaction on the group's __consumer_offsets
// partition.

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/groups"
)

// offsetsTxnFixture is a transactional producer and a group whose offsets it
// commits in transactions.
type offsetsTxnFixture struct {
	txnFixture
	group     string
	partition int32 // the group's __consumer_offsets partition
}

func newOffsetsTxnFixture(t *testing.T, c *kconn) offsetsTxnFixture {
	t.Helper()
	f := offsetsTxnFixture{txnFixture: newTxnFixture(t, c), group: topicName(t, "group")}
	coordinatorFor(t, c, f.group)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("__consumer_offsets")}}
	mt := c.do(md).(*kmsg.MetadataResponse).Topics[0]
	wantCode(t, "metadata of __consumer_offsets", mt.ErrorCode, 0)
	f.partition = groups.PartitionFor(f.group, int32(len(mt.Partitions)))
	return f
}

// commit sends TxnOffsetCommit at version v of offset for partition 0 of the
// fixture's topic and returns the partition's code.
func (f offsetsTxnFixture) commit(t *testing.T, c *kconn, v int16, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.SetVersion(v)
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = f.id, f.group, f.pid, f.epoch, -1
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, offset
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: f.topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
	resp := c.do(req).(*kmsg.TxnOffsetCommitResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func (f offsetsTxnFixture) addOffsets(t *testing.T, c *kconn) {
	t.Helper()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.SetVersion(0)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = f.id, f.pid, f.epoch, f.group
	wantCode(t, "add offsets", c.do(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, 0)
}

// stableOffset is OffsetFetch v7 with require_stable for partition 0 of the
// fixture's topic: its code and offset.
func (f offsetsTxnFixture) stableOffset(c *kconn) (int16, int64) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group, req.RequireStable = f.group, true
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: f.topic, Partitions: []int32{0}}}
	p := c.do(req).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
	return p.ErrorCode, p.Offset
}

// wantNothingPending checks that the group's offset is stable at want and that
// the producer holds no transaction open on the group's __consumer_offsets
// partition: the partition's last stable offset is its high watermark.
func (f offsetsTxnFixture) wantNothingPending(t *testing.T, c *kconn, want int64) {
	t.Helper()
	if code, o := f.stableOffset(c); code != 0 || o != want {
		t.Fatalf("require_stable: %s offset %d, want no error and %d", errName(code), o, want)
	}
	lo := func(isolation int8) int64 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(2)
		req.ReplicaID, req.IsolationLevel = -1, isolation
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "__consumer_offsets", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: f.partition, Timestamp: -1}}}}
		p := c.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		wantCode(t, "list offsets of __consumer_offsets", p.ErrorCode, 0)
		return p.Offset
	}
	if lso, hw := lo(1), lo(0); lso != hw {
		t.Fatalf("__consumer_offsets-%d: last stable offset %d below the high watermark %d: a transaction is held open", f.partition, lso, hw)
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "__consumer_offsets", Partitions: []int32{f.partition}}}
	for _, p := range c.do(dp).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ActiveProducers {
		if p.ProducerID == f.pid && p.CurrentTxnStartOffset >= 0 {
			t.Fatalf("producer %d has a transaction open on __consumer_offsets-%d from %d", f.pid, f.partition, p.CurrentTxnStartOffset)
		}
	}
}

// notInTxnCode is the code of a TxnOffsetCommit whose offsets partition is not
// in the transaction: INVALID_TXN_STATE before v4, TRANSACTION_ABORTABLE from v4
// (KIP-1050).
func notInTxnCode(v int16) int16 {
	if v >= 4 {
		return kerr.TransactionAbortable.Code
	}
	return kerr.InvalidTxnState.Code
}

// TestTxnOffsetCommitVerified: a TxnOffsetCommit whose producer did not add the
// group's offsets to its transaction (AddOffsetsToTxn) is refused, at v3 with
// INVALID_TXN_STATE and at v4 with TRANSACTION_ABORTABLE, and appends nothing: no
// pending offset, no transaction held open on __consumer_offsets (KIP-890 part
// 1). With AddOffsetsToTxn the commit works.
func TestTxnOffsetCommitVerified(t *testing.T) {
	c := dial(t, sharedNode(t).KafkaAddr())
	f := newOffsetsTxnFixture(t, c)
	for _, v := range []int16{3, 4} {
		wantCode(t, fmt.Sprintf("v%d, no transaction", v), f.commit(t, c, v, 42), notInTxnCode(v))
	}
	f.wantNothingPending(t, c, -1)
	// A transaction open on a data partition, without the group's offsets.
	wantCode(t, "add partition", f.addPartition(t, c, 3, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	for _, v := range []int16{3, 4} {
		wantCode(t, fmt.Sprintf("v%d, offsets not added", v), f.commit(t, c, v, 42), notInTxnCode(v))
	}
	f.wantNothingPending(t, c, -1)
	f.addOffsets(t, c)
	wantCode(t, "v4, offsets added", f.commit(t, c, 4, 42), 0)
	if code, _ := f.stableOffset(c); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable while the commit is pending: %s, want UNSTABLE_OFFSET_COMMIT", errName(code))
	}
	wantCode(t, "v3, second commit in the transaction", f.commit(t, c, 3, 43), 0)
	wantCode(t, "commit", f.end(t, c, 0, true), 0)
	waitFor(t, 10*time.Second, "the committed offset 43 to be stable", func() bool {
		code, o := f.stableOffset(c)
		return code == 0 && o == 43
	})
	f.wantNothingPending(t, c, 43)
}

// TestTxnOffsetCommitLate: a TxnOffsetCommit arriving after its transaction
// ended (a late or retried request, after the marker) is refused as one without
// AddOffsetsToTxn, and leaves the committed offset stable.
func TestTxnOffsetCommitLate(t *testing.T) {
	c := dial(t, sharedNode(t).KafkaAddr())
	f := newOffsetsTxnFixture(t, c)
	f.addOffsets(t, c)
	wantCode(t, "commit in the transaction", f.commit(t, c, 4, 42), 0)
	wantCode(t, "end", f.end(t, c, 0, true), 0)
	waitFor(t, 10*time.Second, "the committed offset 42 to be stable", func() bool {
		code, o := f.stableOffset(c)
		return code == 0 && o == 42
	})
	for _, v := range []int16{3, 4} {
		wantCode(t, fmt.Sprintf("v%d, late", v), f.commit(t, c, v, 99), notInTxnCode(v))
	}
	f.wantNothingPending(t, c, 42)
}
