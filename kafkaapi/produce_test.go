package kafkaapi_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceBatchKinds checks batches the broker must store untouched (compressed)
// or refuse (transactional, control, empty), and one request spanning several topics
// and partitions whose partitions succeed and fail independently.
func TestProduceBatchKinds(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 2, nil)

	t.Run("Gzip", func(t *testing.T) {
		b := makeBatchAttrs(noProducer, 1, "compressed", "records", "stay", "compressed")
		end := logEnd(t, c, topic, 0)
		if base := mustProduce(t, c, topic, 0, b); base != end {
			t.Fatalf("base offset %d, want %d", base, end)
		}
		if got := logEnd(t, c, topic, 0); got != end+4 {
			t.Fatalf("log end %d after 4 compressed records, want %d", got, end+4)
		}
		p := fetchedPartition(t, fetchNow(t, c, 1<<20, fetchPart{topic: topic, offset: end}), topic, 0)
		batches, recs := decodeBatches(t, p.RecordBatches)
		if len(batches) != 1 || batches[0].Attributes&7 != 1 || !slices.Equal(values(recs), []string{"compressed", "records", "stay", "compressed"}) {
			t.Fatalf("read back %d batches %q", len(batches), values(recs))
		}
		// Stored as sent: only baseOffset and partitionLeaderEpoch differ.
		got := p.RecordBatches
		if len(got) != len(b) || !slices.Equal(got[16:], b[16:]) || int64(binary.BigEndian.Uint64(got)) != end {
			t.Fatal("the stored batch differs from the produced one beyond baseOffset and partitionLeaderEpoch")
		}
	})

	refused := func(t *testing.T, b []byte, code int16) {
		t.Helper()
		before := logEnd(t, c, topic, 0)
		wantCode(t, "produce", produce(t, c, topic, 0, b).ErrorCode, code)
		if after := logEnd(t, c, topic, 0); after != before {
			t.Fatalf("log end moved from %d to %d", before, after)
		}
	}
	t.Run("Transactional", func(t *testing.T) {
		pid, _ := initProducerID(t, c)
		refused(t, makeBatchAttrs(batchOpts{producerID: pid, epoch: 0, seq: 0}, 0x10, "txn"), kerr.InvalidTxnState.Code)
		// A transactional_id is accepted (transactions are tested in txn_*_test.go).
		req := produceRequest(7, -1, topic, 0, makeBatch(noProducer, "txn-id"))
		req.TransactionID = kmsg.StringPtr("txn")
		wantCode(t, "transactional id", c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, 0)
	})
	t.Run("Control", func(t *testing.T) {
		refused(t, makeBatchAttrs(noProducer, 0x20, "marker"), kerr.InvalidRecord.Code)
	})
	t.Run("Empty", func(t *testing.T) {
		b := makeBatch(noProducer, "x")
		b = b[:61]                            // no records
		binary.BigEndian.PutUint32(b[8:], 49) // batchLength
		binary.BigEndian.PutUint32(b[23:], 0) // lastOffsetDelta
		binary.BigEndian.PutUint32(b[57:], 0) // recordCount
		fixCRC(b)
		refused(t, b, kerr.InvalidRecord.Code)
	})

	t.Run("ManyPartitions", func(t *testing.T) {
		other := topicName(t, "other")
		createTopic(t, c, other, 1, nil)
		end0, end1, endO := logEnd(t, c, topic, 0), logEnd(t, c, topic, 1), logEnd(t, c, other, 0)
		bad := makeBatch(noProducer, "bad")
		bad[len(bad)-1] ^= 1
		req := produceRequest(7, -1, topic, 0, makeBatch(noProducer, "t0-a", "t0-b"))
		req.Topics[0].Partitions = append(req.Topics[0].Partitions,
			kmsg.ProduceRequestTopicPartition{Partition: 1, Records: bad},
			kmsg.ProduceRequestTopicPartition{Partition: 5, Records: makeBatch(noProducer, "nowhere")})
		req.Topics = append(req.Topics, kmsg.ProduceRequestTopic{Topic: other,
			Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: makeBatch(noProducer, "o0")}}})
		resp := c.do(req).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 2 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 3 ||
			resp.Topics[1].Topic != other || len(resp.Topics[1].Partitions) != 1 {
			t.Fatalf("answer %+v does not mirror the request", resp.Topics)
		}
		for i, want := range []struct {
			partition int32
			code      int16
			base      int64
		}{{0, 0, end0}, {1, kerr.CorruptMessage.Code, -1}, {5, kerr.UnknownTopicOrPartition.Code, -1}} {
			p := resp.Topics[0].Partitions[i]
			if p.Partition != want.partition || p.ErrorCode != want.code || p.BaseOffset != want.base {
				t.Errorf("partition %d: %s, base %d; want partition %d, %s, base %d",
					p.Partition, errName(p.ErrorCode), p.BaseOffset, want.partition, errName(want.code), want.base)
			}
		}
		if p := resp.Topics[1].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != endO {
			t.Errorf("%s/0: %s, base %d; want success at %d", other, errName(p.ErrorCode), p.BaseOffset, endO)
		}
		if a, b, o := logEnd(t, c, topic, 0), logEnd(t, c, topic, 1), logEnd(t, c, other, 0); a != end0+2 || b != end1 || o != endO+1 {
			t.Errorf("log ends %d, %d, %d; want %d, %d, %d", a, b, o, end0+2, end1, endO+1)
		}
	})
}

// TestPipelining writes requests of every served kind back to back without waiting
// (clients keep several in flight) and checks the answers come back in request order,
// each intact, with no answer for the acks=0 produce.
func TestPipelining(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	// The pipelined fetch reads the acks=0 record at once: under flush.policy=always
	// (the default with one replica) it would become visible only once synced.
	createTopic(t, c, topic, 1, map[string]string{"flush.policy": "replicated"})
	mustProduce(t, c, topic, 0, makeBatch(noProducer, "first"))

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(8)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(4)
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "no/slash", NumPartitions: 1, ReplicationFactor: 1}}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.SetVersion(3)
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topic}}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.SetVersion(0)
	reqs := []kmsg.Request{
		produceRequest(7, -1, topic, 0, makeBatch(noProducer, "second")),
		fetchRequest(11, 0, 0, 1<<20, fetchPart{topic: topic}),
		md,
		produceRequest(3, 0, topic, 0, makeBatch(noProducer, "third")), // acks=0: no answer
		av,
		fetchRequest(4, 0, 0, 1<<20, fetchPart{topic: topic, offset: 1}),
		listOffsetsRequest(0, topic, 0, -1),
		ct,
		dc,
		ip,
		fetchRequest(8, 0, 0, 1<<20, fetchPart{topic: topic, offset: 2}),
	}
	var all []byte
	corrs := make([]int32, len(reqs))
	for i, r := range reqs {
		corrs[i] = c.nextCorr()
		all = append(all, encodeRequest(r, corrs[i])...)
	}
	c.write(all)
	var fetched [][]string
	for i, r := range reqs {
		if p, ok := r.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			continue
		}
		resp := c.recv(r, corrs[i])
		switch r := resp.(type) {
		case *kmsg.FetchResponse:
			_, recs := decodeBatches(t, fetchedPartition(t, r, topic, 0).RecordBatches)
			fetched = append(fetched, values(recs))
		case *kmsg.ListOffsetsResponse:
			if got := r.Topics[0].Partitions[0].OldStyleOffsets; !slices.Equal(got, []int64{3}) {
				t.Errorf("ListOffsets v0 after three produces: %v, want [3]", got)
			}
		case *kmsg.CreateTopicsResponse:
			wantCode(t, "create no/slash", r.Topics[0].ErrorCode, kerr.InvalidTopicException.Code)
		}
	}
	want := [][]string{{"first", "second"}, {"second", "third"}, {"third"}}
	if !slices.EqualFunc(fetched, want, slices.Equal) {
		t.Fatalf("pipelined fetches read %q, want %q", fetched, want)
	}
}
