package kafkaapi_test

// The Produce path of transaction version 2 goes off the connection's loop
// (txn_add.go, pipeline.go); these requests of other kinds, pipelined behind
// one that does, must keep one connection's order.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnV2PipelinedBehindAdd: on one connection, a Produce v12 whose
// transactional batch waits for its implicit add, then non-transactional
// Produce requests to the same partition (acks=1, acks=0, and an old
// version), then ListOffsets: the non-transactional batches land after the
// transactional one, in request order, the answers come in request order,
// and ListOffsets (which drains) sees every batch appended.
func TestTxnV2PipelinedBehindAdd(t *testing.T) {
	n := startTxnV2Node(t)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	p := newTV2Producer(t, c, n.ID())

	txnReq := produceRequest(12, -1, topic, 0, makeBatchAttrs(batchOpts{producerID: p.pid, epoch: p.epoch}, 0x10, "txn"))
	txnReq.TransactionID = &p.id
	reqs := []*kmsg.ProduceRequest{
		txnReq,
		produceRequest(12, 1, topic, 0, makeBatch(noProducer, "plain-1")),
		produceRequest(12, 0, topic, 0, makeBatch(noProducer, "plain-2")),
		produceRequest(7, -1, topic, 0, makeBatch(noProducer, "plain-3")),
	}
	var corrs []int32
	for _, req := range reqs {
		corrs = append(corrs, c.send(req))
	}
	lo := listOffsetsRequest(5, topic, 0, -1)
	loCorr := c.send(lo)
	for i, req := range reqs {
		if req.Acks == 0 {
			continue // no answer
		}
		rp := c.recv(req, corrs[i]).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		wantCode(t, fmt.Sprintf("request %d", i), rp.ErrorCode, 0)
		if rp.BaseOffset != int64(i) {
			t.Errorf("request %d appended at %d, want %d (request order)", i, rp.BaseOffset, i)
		}
	}
	end := c.recv(lo, loCorr).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	wantCode(t, "list offsets behind the produce requests", end.ErrorCode, 0)
	if end.Offset != int64(len(reqs)) {
		t.Fatalf("high watermark %d behind %d produce requests, want %d", end.Offset, len(reqs), len(reqs))
	}
	wantCode(t, "commit", p.end(t, c, true), 0)
	settled(t, c, topic, 0)
	if got, want := readCommitted(t, c, topic, 0), []string{"txn", "plain-1", "plain-2", "plain-3"}; !slices.Equal(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}
}
