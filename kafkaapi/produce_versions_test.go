package kafkaapi_test

// Produce v8..v11 beyond the happy path of conformProduce: record errors (v8,
// KIP-467), TRANSACTION_ABORTABLE (v11, KIP-1050), and franz-go picking v11.
// The KIP-951 leader hints (v10) need a second broker: e2e/produce_hints_test.go.

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// makeKeyedBatch is makeBatchTimed with keys: record i has key keys[i] (nil:
// none) and timestamp delta deltas[i].
func makeKeyedBatch(keys [][]byte, deltas []int64) []byte {
	ts := time.Now().UnixMilli()
	var recs []byte
	for i, k := range keys {
		r := kmsg.Record{TimestampDelta64: deltas[i], OffsetDelta: int32(i), Key: k, Value: []byte(fmt.Sprint("v", i))}
		body := r.AppendTo(nil)[1:]
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(keys) - 1),
		FirstTimestamp: ts, MaxTimestamp: ts + slices.Max(deltas), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(keys)), Records: recs}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	fixCRC(b)
	return b
}

// TestProduceRecordErrors refuses batches for some of their records at every
// served version: from v8 the answer names those records (batch index and
// Kafka's message) and carries the batch's summary; refusals that are not about
// records (an unknown topic) name none.
func TestProduceRecordErrors(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	compacted := topicName(t, "compacted")
	createTopic(t, c, compacted, 1, map[string]string{"cleanup.policy": "compact"})
	plain := topicName(t, "plain")
	createTopic(t, c, plain, 1, nil)
	k := []byte("k")
	hour := int64(time.Hour / time.Millisecond)
	cases := []struct {
		name, topic string
		batch       []byte
		code        int16
		indexes     []int32
		record      string // in each record's message
		summary     string // in error_message
	}{
		{"records without a key in a compacted topic", compacted, makeKeyedBatch([][]byte{k, nil, k, nil}, []int64{0, 0, 0, 0}),
			kerr.InvalidRecord.Code, []int32{1, 3}, "Compacted topic cannot accept message without key", "2 record errors"},
		{"a record two hours ahead", plain, makeKeyedBatch([][]byte{k, k, k}, []int64{0, 2 * hour, 1}),
			kerr.InvalidTimestamp.Code, []int32{1}, "is out of range", "invalid timestamp"},
		{"an unknown topic", "no-such-topic-" + compacted, makeKeyedBatch([][]byte{k}, []int64{0}),
			kerr.UnknownTopicOrPartition.Code, nil, "", ""},
	}
	for _, v := range []int16{3, 7, 8, 9, 10, 11} {
		for _, cs := range cases {
			t.Run(fmt.Sprintf("v%d %s", v, cs.name), func(t *testing.T) {
				p := c.do(produceRequest(v, -1, cs.topic, 0, cs.batch)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
				wantCode(t, "produce", p.ErrorCode, cs.code)
				if p.BaseOffset != -1 {
					t.Errorf("base offset %d of a refused batch, want -1", p.BaseOffset)
				}
				var got []int32
				for _, r := range p.ErrorRecords {
					got = append(got, r.RelativeOffset)
					if r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, cs.record) {
						t.Errorf("record %d: message %v, want one with %q", r.RelativeOffset, r.ErrorMessage, cs.record)
					}
				}
				if v < 8 {
					return // the fields are not in the answer
				}
				if !slices.Equal(got, cs.indexes) {
					t.Fatalf("record errors at %v, want %v", got, cs.indexes)
				}
				switch {
				case cs.summary == "" && p.ErrorMessage != nil:
					t.Errorf("error message %q, want none", *p.ErrorMessage)
				case cs.summary != "" && (p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, cs.summary)):
					t.Errorf("error message %v, want one with %q", p.ErrorMessage, cs.summary)
				}
			})
		}
	}
	if end := logEnd(t, c, compacted, 0) + logEnd(t, c, plain, 0); end != 0 {
		t.Fatalf("%d records appended from refused batches", end)
	}
}

// TestProduceTransactionAbortable: a transactional batch for a partition that is
// not in the producer's transaction is INVALID_TXN_STATE up to v10 and
// TRANSACTION_ABORTABLE from v11 (KIP-1050), nothing appended either way; once
// the partition is added, v11 appends.
func TestProduceTransactionAbortable(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	f := newTxnFixture(t, c)
	produce := func(v int16, seq int32) int16 {
		req := produceRequest(v, -1, f.topic, 0, makeBatchAttrs(batchOpts{producerID: f.pid, epoch: f.epoch, seq: seq}, 0x10, "x"))
		req.TransactionID = &f.id
		return c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	for _, v := range []int16{3, 9, 10} {
		wantCode(t, fmt.Sprintf("v%d, partition not added", v), produce(v, 0), kerr.InvalidTxnState.Code)
	}
	wantCode(t, "v11, partition not added", produce(11, 0), kerr.TransactionAbortable.Code)
	if end := logEnd(t, c, f.topic, 0); end != 0 {
		t.Fatalf("log end %d after refused batches", end)
	}
	wantCode(t, "add partition", f.addPartition(t, c, 3, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	wantCode(t, "v11, partition added", produce(11, 0), 0)
	wantCode(t, "abort", f.end(t, c, 4, false), 0)
}

// versionLog is a kgo logger keeping the versions of the requests written.
type versionLog struct {
	mu    sync.Mutex
	wrote map[string]int
}

func (l *versionLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }
func (l *versionLog) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if rest, ok := strings.CutPrefix(msg, "wrote "); ok {
		l.mu.Lock()
		l.wrote[rest]++
		l.mu.Unlock()
	}
}

// TestFranzGoNegotiatesNewVersions: franz-go produces at v11, the newest version
// both speak, idempotent or in a transaction, which runs at InitProducerId v5
// and EndTxn v4 (checked from what kgo logs it wrote).
func TestFranzGoNegotiatesNewVersions(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	l := &versionLog{wrote: map[string]int{}}
	cl := txnProducer(t, n.KafkaAddr(), topicName(t, "id"), topic, kgo.WithLogger(l))
	if err := produceTxn(ctx, cl, true, "a", "b"); err != nil {
		t.Fatal(err)
	}
	idem := &versionLog{wrote: map[string]int{}}
	plain, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic(topic), kgo.WithLogger(idem))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("d")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, lg := range []*versionLog{l, idem} {
		lg.mu.Lock()
		for w := range lg.wrote {
			if strings.HasPrefix(w, "Produce ") && w != "Produce v11" {
				t.Errorf("franz-go wrote %s, want v11 only", w)
			}
		}
		lg.mu.Unlock()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, want := range []string{"Produce v11", "InitProducerID v5", "EndTxn v4"} {
		if l.wrote[want] == 0 {
			t.Errorf("franz-go did not write %s; it wrote %v", want, l.wrote)
		}
	}
	if idem.wrote["Produce v11"] == 0 {
		t.Errorf("the idempotent producer did not write Produce v11; it wrote %v", idem.wrote)
	}
}
