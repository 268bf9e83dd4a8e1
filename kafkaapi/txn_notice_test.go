package kafkaapi_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/txn"
)

// noticeFixture sends WriteTxnMarkers v1 as a transaction coordinator does:
// markers (answered with the producer's marker stamp) and notices.
type noticeFixture struct {
	txnFixture
	c *kconn
}

// marker writes an abort marker at coordinator epoch 0 and returns its code and
// the stamp its answer carries.
func (f noticeFixture) marker(t *testing.T) (int16, txn.Stamp) {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = f.pid, f.epoch, false, 0
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: f.topic, Partitions: []int32{0}}}
	req.Markers = append(req.Markers, m)
	rp := f.c.do(req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0]
	s, ok := txn.TaggedStamp(&rp.UnknownTags)
	if rp.ErrorCode == 0 && !ok {
		t.Fatalf("marker answer without a stamp")
	}
	return rp.ErrorCode, s
}

// notice sends a notice for partition 0 at stamp s and returns its code.
func (f noticeFixture) notice(t *testing.T, s txn.Stamp) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch = f.pid, f.epoch, -1
	m.UnknownTags.Set(txn.NoticeTag, txn.AppendNotice(nil, txn.Notice{TopicPartition: txn.TopicPartition{Topic: f.topic}, At: s}))
	req.Markers = append(req.Markers, m)
	resp := f.c.do(req).(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != 1 || len(resp.Markers[0].Topics) != 1 || resp.Markers[0].Topics[0].Topic != f.topic {
		t.Fatalf("notice answer %+v", resp.Markers)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// produce sends one transactional record at seq, without adding the partition
// first, and returns the code.
func (f noticeFixture) produce(seq int32) int16 {
	req := produceRequest(7, -1, f.topic, 0, makeBatchAttrs(batchOpts{producerID: f.pid, epoch: f.epoch, seq: seq}, 0x10, "v"))
	req.TransactionID = &f.id
	return f.c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// TestTxnNoticeBoundToMarker: a leader takes a coordinator's notice in place of
// asking it, only while the producer's marker stamp and the leader epoch are
// the notice's. A notice that arrives after the marker that ends its
// transaction is ignored, and a produce after that marker is refused
// (INVALID_TXN_STATE) instead of opening a hanging transaction.
func TestTxnNoticeBoundToMarker(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	f := noticeFixture{newTxnFixture(t, c), c}

	wantCode(t, "produce before any notice", f.produce(0), kerr.InvalidTxnState.Code)
	code, s1 := f.marker(t)
	wantCode(t, "first marker", code, 0)
	wantCode(t, "notice at another leader epoch", f.notice(t, txn.Stamp{Stamp: s1.Stamp, LeaderEpoch: s1.LeaderEpoch + 1}), kerr.InvalidTxnState.Code)
	wantCode(t, "notice at another stamp", f.notice(t, txn.Stamp{Stamp: s1.Stamp + 1, LeaderEpoch: s1.LeaderEpoch}), kerr.InvalidTxnState.Code)
	wantCode(t, "notice at the current stamp", f.notice(t, s1), 0)
	// The coordinator has no transaction open (it would refuse): the notice
	// alone lets the batch open one.
	wantCode(t, "produce under the notice", f.produce(0), 0)
	if lso, end := listOffset(t, c, f.topic, 1), logEnd(t, c, f.topic, 0); lso >= end {
		t.Fatalf("last stable offset %d, log end %d: want the noticed transaction open", lso, end)
	}

	code, s2 := f.marker(t) // ends it
	wantCode(t, "second marker", code, 0)
	if s2 == s1 {
		t.Fatalf("the marker kept stamp %+v", s1)
	}
	wantCode(t, "notice delayed past the marker", f.notice(t, s1), kerr.InvalidTxnState.Code)
	wantCode(t, "produce after the marker", f.produce(1), kerr.InvalidTxnState.Code)
	if lso, end := listOffset(t, c, f.topic, 1), logEnd(t, c, f.topic, 0); lso != end {
		t.Fatalf("last stable offset %d, log end %d: a transaction was left open", lso, end)
	}
}

// TestTxnNoticeFromCoordinator runs a producer's transactions through the
// coordinator, which notices the partition from the second one on: a
// produce after the abort of a noticed transaction is still refused once its
// marker is written.
func TestTxnNoticeFromCoordinator(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	f := noticeFixture{newTxnFixture(t, c), c}
	settled := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for listOffset(t, c, f.topic, 1) != logEnd(t, c, f.topic, 0) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: a transaction is still open after 10 s", what)
			}
			time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
		}
	}
	seq := int32(0)
	for _, commit := range []bool{true, false, false} {
		wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
		wantCode(t, "produce", f.produce(seq), 0)
		seq++
		wantCode(t, "end", f.end(t, c, 0, commit), 0)
		settled("after the markers")
		wantCode(t, "produce after the end", f.produce(seq), kerr.InvalidTxnState.Code)
	}
	wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	wantCode(t, "produce", f.produce(seq), 0)
	wantCode(t, "commit", f.end(t, c, 0, true), 0)
	settled("after the last commit")
}
