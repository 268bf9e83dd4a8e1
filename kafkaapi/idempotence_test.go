package kafkaapi_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdempotentProduce drives the idempotent producer checks with raw batches
// (producer id from InitProducerId, sequences set by hand): in-order batches append,
// an exact retry of one of the last 5 batches gets its original offset and appends
// nothing, gaps, old epochs and unknown producers are refused, and after a restart
// the state, rebuilt from the log, still recognises a retry.
func TestIdempotentProduce(t *testing.T) {
	dir := t.TempDir()
	n, err := startNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { n.Close() }()
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)

	pid, epoch := initProducerID(t, c)
	if epoch != 0 {
		t.Fatalf("new producer at epoch %d", epoch)
	}
	type sent struct {
		batch []byte
		base  int64
	}
	var log []sent // every appended batch, in order
	seq := int32(0)
	appendBatch := func(t *testing.T, c *kconn, pid int64, epoch int16, vals ...string) sent {
		t.Helper()
		b := makeBatch(batchOpts{producerID: pid, epoch: epoch, seq: seq}, vals...)
		end := logEnd(t, c, topic, 0)
		base := mustProduce(t, c, topic, 0, b)
		if base != end {
			t.Fatalf("batch at sequence %d got base offset %d, want the log end %d", seq, base, end)
		}
		seq += int32(len(vals))
		s := sent{b, base}
		log = append(log, s)
		return s
	}
	// unchanged runs fn and checks that the log end did not move.
	unchanged := func(t *testing.T, c *kconn, fn func()) {
		t.Helper()
		before := logEnd(t, c, topic, 0)
		fn()
		if after := logEnd(t, c, topic, 0); after != before {
			t.Fatalf("log end moved from %d to %d", before, after)
		}
	}
	refused := func(t *testing.T, c *kconn, b []byte, code int16) {
		t.Helper()
		unchanged(t, c, func() {
			p := produce(t, c, topic, 0, b)
			wantCode(t, "produce", p.ErrorCode, code)
		})
	}

	t.Run("InOrder", func(t *testing.T) {
		for i := range 7 {
			vals := make([]string, 1+i%3)
			for j := range vals {
				vals[j] = fmt.Sprintf("b%d-r%d", i, j)
			}
			appendBatch(t, c, pid, 0, vals...)
		}
	})

	t.Run("RetryOfLastFive", func(t *testing.T) {
		for _, s := range log[len(log)-5:] {
			unchanged(t, c, func() {
				if base := mustProduce(t, c, topic, 0, s.batch); base != s.base {
					t.Fatalf("retry got base offset %d, want the original %d", base, s.base)
				}
			})
		}
		// Retried again in another order: still duplicates.
		unchanged(t, c, func() {
			s := log[len(log)-3]
			if base := mustProduce(t, c, topic, 0, s.batch); base != s.base {
				t.Fatalf("second retry got base offset %d, want %d", base, s.base)
			}
		})
		// Older than the last 5: no longer known, so out of order.
		refused(t, c, log[len(log)-6].batch, kerr.OutOfOrderSequenceNumber.Code)
	})

	t.Run("Gap", func(t *testing.T) {
		refused(t, c, makeBatch(batchOpts{producerID: pid, epoch: 0, seq: seq + 1}, "gap"), kerr.OutOfOrderSequenceNumber.Code)
		// A batch overlapping the last one without matching it exactly.
		refused(t, c, makeBatch(batchOpts{producerID: pid, epoch: 0, seq: seq - 1}, "overlap", "x"), kerr.OutOfOrderSequenceNumber.Code)
		// The producer carries on at the right sequence.
		appendBatch(t, c, pid, 0, "after-gap")
	})

	t.Run("Epochs", func(t *testing.T) {
		// A new epoch must start at sequence 0.
		refused(t, c, makeBatch(batchOpts{producerID: pid, epoch: 1, seq: 5}, "e1"), kerr.OutOfOrderSequenceNumber.Code)
		seq = 0
		appendBatch(t, c, pid, 1, "e1-first")
		// The old epoch is fenced, in sequence or as a retry.
		refused(t, c, makeBatch(batchOpts{producerID: pid, epoch: 0, seq: 100}, "e0"), kerr.InvalidProducerEpoch.Code)
		refused(t, c, log[len(log)-2].batch, kerr.InvalidProducerEpoch.Code)
		appendBatch(t, c, pid, 1, "e1-second")
	})

	t.Run("UnknownProducer", func(t *testing.T) {
		other, _ := initProducerID(t, c)
		if other == pid {
			t.Fatalf("InitProducerId handed out %d twice", pid)
		}
		refused(t, c, makeBatch(batchOpts{producerID: other, epoch: 0, seq: 3}, "late"), kerr.UnknownProducerID.Code)
		saved := seq
		seq = 0
		appendBatch(t, c, other, 0, "other-first")
		seq = saved
	})

	t.Run("AfterRestart", func(t *testing.T) {
		last := log[len(log)-1] // the unknown-producer batch
		mine := log[len(log)-2] // pid's last batch, epoch 1
		end := logEnd(t, c, topic, 0)
		// A fetch parked at the log end is answered when the node shuts down, not
		// dropped and not held until max_wait.
		parked := dial(t, n.KafkaAddr())
		req := fetchRequest(11, int32(longWait.Milliseconds()), 1, 1<<20, fetchPart{topic: topic, offset: end})
		start := time.Now()
		corr := parked.send(req)
		if frame, err := parked.readFrame(300 * time.Millisecond); err == nil {
			t.Fatalf("a fetch at the log end was answered at once: %x", frame)
		}
		closeStart := time.Now()
		if err := n.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		// The idle connection c and the parked fetch must not hold shutdown until
		// ShutdownTimeout (10 s in startNode).
		if took := time.Since(closeStart); took >= 10*time.Second {
			t.Errorf("Close took %v: it waited for ShutdownTimeout", took)
		}
		p := fetchedPartition(t, parked.recv(req, corr).(*kmsg.FetchResponse), topic, 0)
		if took := time.Since(start); took >= longWait {
			t.Errorf("the parked fetch was answered after %v, at max_wait, not at shutdown", took)
		}
		if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != end {
			t.Errorf("parked fetch answered with %s, %d record bytes, high watermark %d; want no error, nothing, %d",
				errName(p.ErrorCode), len(p.RecordBatches), p.HighWatermark, end)
		}
		parked.expectClosed("connection after shutdown")
		if n, err = startNode(dir); err != nil {
			t.Fatalf("restart: %v", err)
		}
		c := dial(t, n.KafkaAddr())
		// Ready is not leading yet: the restarted broker leads again once the
		// controller has seen its new broker epoch (NOT_LEADER_OR_FOLLOWER until then).
		waitFor(t, 20*time.Second, "the restarted node to lead "+topic+"/0", func() bool {
			return listOffsetsAt(t, c, 5, topic, 0, -1).ErrorCode != kerr.NotLeaderForPartition.Code
		})
		if got := logEnd(t, c, topic, 0); got != end {
			t.Fatalf("log end %d after restart, want %d", got, end)
		}
		for _, s := range []sent{mine, last} {
			unchanged(t, c, func() {
				if base := mustProduce(t, c, topic, 0, s.batch); base != s.base {
					t.Fatalf("retry after restart got base offset %d, want the original %d", base, s.base)
				}
			})
		}
		refused(t, c, log[len(log)-4].batch, kerr.InvalidProducerEpoch.Code) // epoch 0, fenced before the restart
		refused(t, c, makeBatch(batchOpts{producerID: pid, epoch: 1, seq: seq + 1}, "gap"), kerr.OutOfOrderSequenceNumber.Code)
		appendBatch(t, c, pid, 1, "after-restart")

		// Everything reads back once, in order.
		var want []string
		for _, s := range log {
			_, recs := decodeBatches(t, s.batch)
			want = append(want, values(recs)...)
		}
		_, recs := decodeBatches(t, fetchedPartition(t, fetchNow(t, c, 1<<20, fetchPart{topic: topic}), topic, 0).RecordBatches)
		if !slices.Equal(values(recs), want) {
			t.Fatalf("log holds %q, want %q", values(recs), want)
		}
		if id, _ := initProducerID(t, c); id == pid || id < 0 {
			t.Errorf("after restart InitProducerId handed out %d (first producer %d)", id, pid)
		}
	})
}
