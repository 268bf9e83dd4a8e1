package client

// Produce: one record per input line, produced asynchronously, every
// acknowledgement checked, for `skiff produce`.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ProduceOptions say what Produce writes, and how.
type ProduceOptions struct {
	Topic  string
	KeySep []byte // nil: no keys; else a line is KEY SEP VALUE
	Acks   kgo.Acks
	// Idempotent keeps franz-go's idempotent writes (no duplicates on
	// retry); they require acks=all.
	Idempotent      bool
	Compression     kgo.CompressionCodec
	DeliveryTimeout time.Duration // Kafka's delivery.timeout.ms, at least 1s
	In              io.Reader     // lines, '\n'-terminated
}

// ProduceStats count what Produce did. Records is every record handed to the
// client; each ends either acknowledged or failed.
type ProduceStats struct {
	Records, Acked, Failed int64
	Bytes                  int64 // key + value bytes of acknowledged records
	FirstErr               error
	Elapsed                time.Duration // from the first line read to the last acknowledgement
}

// Produce produces one record per line of o.In to o.Topic and waits until
// every record is acknowledged or failed. It fails naming how many records
// were not acknowledged if any was not. The topic must exist: Produce never
// creates it.
func (k *Client) Produce(ctx context.Context, o ProduceOptions) (ProduceStats, error) {
	// The batch limit follows the topic's max.message.bytes once known.
	var maxBatch atomic.Int32
	maxBatch.Store(defaultMaxMessageBytes)
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(o.Topic),
		kgo.RequiredAcks(o.Acks),
		kgo.ProducerBatchCompression(o.Compression),
		kgo.RecordDeliveryTimeout(o.DeliveryTimeout),
		kgo.ProducerBatchMaxBytesFn(func(string) int32 { return maxBatch.Load() }),
		kgo.MaxBufferedBytes(256 << 20),
	}
	if !o.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	p, err := k.With(opts...)
	if err != nil {
		return ProduceStats{}, err
	}
	defer p.Close()

	if _, err := p.TopicPartitions(ctx, o.Topic); err != nil {
		return ProduceStats{}, err
	}
	if n, ok := p.maxMessageBytes(ctx, o.Topic); ok {
		maxBatch.Store(n)
	}

	start := time.Now()
	st, err := produceLines(ctx, p.kafka, o.In, o.KeySep)
	st.Elapsed = time.Since(start)
	if err != nil {
		if st.Failed > 0 {
			return st, fmt.Errorf("%w; also %d of %d records were not acknowledged (first error: %w)",
				err, st.Failed, st.Records, p.Explain(st.FirstErr))
		}
		return st, err
	}
	if st.Failed > 0 {
		return st, fmt.Errorf("%d of %d records were not acknowledged by topic %q (first error: %w)%s",
			st.Failed, st.Records, o.Topic, p.Explain(st.FirstErr), p.failureHint(st.FirstErr))
	}
	return st, nil
}

// defaultMaxMessageBytes is Kafka's default max.message.bytes.
const defaultMaxMessageBytes = 1000012

// maxMessageBytes reads the topic's max.message.bytes; ok is false when the
// broker does not say.
func (k *Client) maxMessageBytes(ctx context.Context, topic string) (int32, bool) {
	ctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	rcs, err := k.admin.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return 0, false
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		return 0, false
	}
	for _, cf := range rc.Configs {
		if cf.Key != "max.message.bytes" || cf.Value == nil {
			continue
		}
		var n int64
		if _, err := fmt.Sscan(*cf.Value, &n); err != nil || n < 512 || n > 1<<30 {
			return 0, false
		}
		return int32(n), true
	}
	return 0, false
}

// failureHint adds what is known about the cause of a failed record.
func (k *Client) failureHint(err error) string {
	switch {
	case errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge):
		return "; a line is larger than the topic's max.message.bytes allows"
	case errors.Is(err, kgo.ErrRecordTimeout):
		if addr, _, derr := k.LastDialError(); derr != nil {
			return fmt.Sprintf("; the last connection attempt, to %s, failed: %s", addr, ConnReason(derr))
		}
		return "; raise --delivery-timeout to wait longer"
	}
	return ""
}

// produceLines produces one record per line of in and waits until every
// record is acknowledged or failed. The returned error is about reading the
// input; record failures are counted in the stats.
func produceLines(ctx context.Context, cl *kgo.Client, in io.Reader, keySep []byte) (ProduceStats, error) {
	var (
		acked, failed, ackedBytes atomic.Int64
		mu                        sync.Mutex
		firstErr                  error // guarded by mu
	)
	// Promises run on the client's goroutines.
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			return
		}
		acked.Add(1)
		ackedBytes.Add(int64(len(r.Key) + len(r.Value)))
	}

	lr := newLineReader(in)
	var slab slab
	var records int64
	var readErr error
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("read input after %d lines: %w", records, err)
			break
		}
		key, value := splitKey(slab.copy(line), keySep)
		records++
		cl.Produce(ctx, &kgo.Record{Key: key, Value: value}, promise)
	}
	// Flush returns once every record's promise has run; a record that is
	// never acknowledged fails at its delivery timeout.
	if err := cl.Flush(ctx); err != nil && readErr == nil {
		readErr = fmt.Errorf("flush: %w", err)
	}
	st := ProduceStats{Records: records, Acked: acked.Load(), Failed: failed.Load(), Bytes: ackedBytes.Load()}
	mu.Lock()
	st.FirstErr = firstErr
	mu.Unlock()
	if readErr == nil && st.Acked+st.Failed != st.Records {
		// Cannot happen if Flush keeps its promise; never claim success if it did not.
		readErr = fmt.Errorf("%d of %d records have no acknowledgement after flush", st.Records-st.Acked-st.Failed, st.Records)
	}
	return st, readErr
}
