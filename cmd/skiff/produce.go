package main

// skiff produce: one record per input line, produced asynchronously, every
// acknowledgement checked.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"skiff/client"
)

const defaultDeliveryTimeout = 2 * time.Minute

func produceCommand() *cli.Command {
	return &cli.Command{
		Name:      "produce",
		Usage:     "write records to a topic, one per line of stdin (or --file)",
		ArgsUsage: " ",
		Description: `Each line of input becomes one record; its value is the line's bytes without
the trailing newline (a "\r" before it is kept). An empty line is a record with an
empty value. A last line without a newline is a record too. Lines may be of any
length up to the topic's max.message.bytes.

With --key-separator SEP, the part of a line before the first SEP is the key and
the rest is the value; a line without SEP gets a null key and the whole line as
its value.

Records are produced asynchronously and flushed at end of input. The command
fails (exit status 1) naming how many records were not acknowledged if any was
not; it never reports success for an unacknowledged record. With --acks 0 the
broker sends no acknowledgement, so "acknowledged" means "written to the socket".

A summary line (records, bytes, seconds) goes to stderr with --verbose, or when
stderr is a terminal. The topic must exist: produce never creates it. --timeout
bounds finding the topic; --delivery-timeout bounds each record's wait for its
acknowledgement. End input typed at a terminal with Ctrl-D; an interrupt
(Ctrl-C) abandons the records not yet acknowledged.`,
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "`TOPIC` to write to (required)"},
			&cli.StringFlag{Name: "key-separator", Aliases: []string{"K"}, Usage: "split each line at the first `SEP` into key and value"},
			&cli.StringFlag{Name: "acks", Value: "all", Usage: "acknowledgements to wait for, `all|1|0`: every in-sync replica, the leader, or none"},
			&cli.StringFlag{Name: "compression", Aliases: []string{"z"}, Value: "none", Usage: "batch compression `CODEC`: none, gzip, snappy, lz4 or zstd"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read lines from `FILE` instead of stdin (\"-\": stdin)"},
			&cli.DurationFlag{Name: "delivery-timeout", Value: defaultDeliveryTimeout, Usage: "fail a record not acknowledged within `DURATION` (Kafka's delivery.timeout.ms)"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print a summary line to stderr"},
		),
		Action: runProduce,
	}
}

// produceOpts is what produce's flags say, checked before any connection.
type produceOpts struct {
	topic           string
	keySep          []byte // nil: no keys
	acks            kgo.Acks
	idempotent      bool
	compression     kgo.CompressionCodec
	file            string
	deliveryTimeout time.Duration
	verbose         bool
}

func produceOptsFrom(c *cli.Context) (produceOpts, error) {
	o := produceOpts{
		topic:           c.String("topic"),
		file:            c.String("file"),
		deliveryTimeout: c.Duration("delivery-timeout"),
		verbose:         c.Bool("verbose"),
	}
	if o.topic == "" {
		return o, errors.New("missing --topic (-t): name the topic to produce to")
	}
	if c.IsSet("key-separator") {
		if c.String("key-separator") == "" {
			return o, errors.New("--key-separator must not be empty")
		}
		o.keySep = []byte(c.String("key-separator"))
	}
	var err error
	if o.acks, o.idempotent, err = parseAcks(c.String("acks")); err != nil {
		return o, err
	}
	if o.compression, err = parseCompression(c.String("compression")); err != nil {
		return o, err
	}
	if o.deliveryTimeout < time.Second { // franz-go's minimum
		return o, fmt.Errorf("--delivery-timeout must be at least 1s, not %v", o.deliveryTimeout)
	}
	return o, nil
}

// parseAcks maps --acks to franz-go's setting. Idempotent writes (franz-go's
// default, no duplicates on retry) require acks=all.
func parseAcks(s string) (acks kgo.Acks, idempotent bool, err error) {
	switch strings.ToLower(s) {
	case "all", "-1":
		return kgo.AllISRAcks(), true, nil
	case "1", "leader":
		return kgo.LeaderAck(), false, nil
	case "0", "none":
		return kgo.NoAck(), false, nil
	}
	return kgo.Acks{}, false, fmt.Errorf("invalid --acks %q: want all, 1 or 0", s)
}

func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(s) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("invalid --compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

func runProduce(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": produce reads records from stdin or --file FILE"); err != nil {
		return err
	}
	o, err := produceOptsFrom(c)
	if err != nil {
		return err
	}
	// The batch limit follows the topic's max.message.bytes once known.
	var maxBatch atomic.Int32
	maxBatch.Store(defaultMaxMessageBytes)
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(o.topic),
		kgo.RequiredAcks(o.acks),
		kgo.ProducerBatchCompression(o.compression),
		kgo.RecordDeliveryTimeout(o.deliveryTimeout),
		kgo.ProducerBatchMaxBytesFn(func(string) int32 { return maxBatch.Load() }),
		kgo.MaxBufferedBytes(256 << 20),
	}
	if !o.idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	k, err := clientFromFlags(c, opts...)
	if err != nil {
		return err
	}
	defer k.Close()
	in := c.App.Reader
	if o.file != "" && o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return fmt.Errorf("open input: %w", err)
		}
		defer f.Close()
		in = f
	}

	if _, err := k.TopicPartitions(c.Context, o.topic); err != nil {
		return err
	}
	if n, ok := maxMessageBytes(c.Context, k, o.topic); ok {
		maxBatch.Store(n)
	}

	start := time.Now()
	st, err := produceLines(c.Context, k.Kafka(), in, o.keySep)
	elapsed := time.Since(start)
	if err != nil {
		if st.failed > 0 {
			return fmt.Errorf("%w; also %d of %d records were not acknowledged (first error: %w)",
				err, st.failed, st.records, k.Explain(st.firstErr))
		}
		return err
	}
	if st.failed > 0 {
		return fmt.Errorf("%d of %d records were not acknowledged by topic %q (first error: %w)%s",
			st.failed, st.records, o.topic, k.Explain(st.firstErr), failureHint(k, st.firstErr))
	}
	if o.verbose || isTerminal(c.App.ErrWriter) {
		fmt.Fprintf(c.App.ErrWriter, "produced %d records (%d bytes) to %s in %.3fs\n",
			st.records, st.bytes, o.topic, elapsed.Seconds())
	}
	return nil
}

// defaultMaxMessageBytes is Kafka's default max.message.bytes.
const defaultMaxMessageBytes = 1000012

// maxMessageBytes reads the topic's max.message.bytes; ok is false when the
// broker does not say.
func maxMessageBytes(ctx context.Context, k *client.Client, topic string) (int32, bool) {
	ctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	rcs, err := k.Admin().DescribeTopicConfigs(ctx, topic)
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
func failureHint(k *client.Client, err error) string {
	switch {
	case errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge):
		return "; a line is larger than the topic's max.message.bytes allows"
	case errors.Is(err, kgo.ErrRecordTimeout):
		if addr, _, derr := k.LastDialError(); derr != nil {
			return fmt.Sprintf("; the last connection attempt, to %s, failed: %s", addr, client.ConnReason(derr))
		}
		return "; raise --delivery-timeout to wait longer"
	}
	return ""
}

// produceStats counts what produceLines did. records is every record handed
// to the client; each ends either acknowledged or failed.
type produceStats struct {
	records, acked, failed int64
	bytes                  int64 // key + value bytes of acknowledged records
	firstErr               error
}

// produceLines produces one record per line of in and waits until every
// record is acknowledged or failed. The returned error is about reading the
// input; record failures are counted in the stats.
func produceLines(ctx context.Context, cl *kgo.Client, in io.Reader, keySep []byte) (produceStats, error) {
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
	st := produceStats{records: records, acked: acked.Load(), failed: failed.Load(), bytes: ackedBytes.Load()}
	mu.Lock()
	st.firstErr = firstErr
	mu.Unlock()
	if readErr == nil && st.acked+st.failed != st.records {
		// Cannot happen if Flush keeps its promise; never claim success if it did not.
		readErr = fmt.Errorf("%d of %d records have no acknowledgement after flush", st.records-st.acked-st.failed, st.records)
	}
	return st, readErr
}

// splitKey splits line at the first sep into key and value. Without sep (or
// when line has no sep) the key is nil, which Kafka stores as a null key.
// A non-nil empty value stays non-nil, so it is stored as empty, not null.
func splitKey(line, sep []byte) (key, value []byte) {
	if len(sep) == 0 {
		return nil, line
	}
	k, v, ok := bytes.Cut(line, sep)
	if !ok {
		return nil, line
	}
	if v == nil {
		v = []byte{}
	}
	return k, v
}

// lineReader reads '\n'-terminated lines of any length.
type lineReader struct {
	r    *bufio.Reader
	long []byte // a line longer than r's buffer, assembled
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// next returns the next line without its '\n'; the slice is valid until the
// next call. A final line without '\n' is returned too; then io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	lr.long = lr.long[:0]
	for {
		b, err := lr.r.ReadSlice('\n')
		switch {
		case err == nil:
			b = b[:len(b)-1]
			if len(lr.long) == 0 {
				return b, nil
			}
			lr.long = append(lr.long, b...)
			return lr.long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.long = append(lr.long, b...)
		case errors.Is(err, io.EOF):
			if len(lr.long) == 0 && len(b) == 0 {
				return nil, io.EOF
			}
			lr.long = append(lr.long, b...)
			return lr.long, nil
		default:
			return nil, err
		}
	}
}

// slab hands out copies of lines carved from large shared buffers, so that
// producing a million short lines does not cost a million allocations. The
// copies stay valid for as long as they are referenced.
type slab struct{ buf []byte }

const (
	slabSize    = 1 << 20
	slabMaxLine = 64 << 10 // longer lines get their own allocation
)

func (s *slab) copy(b []byte) []byte {
	switch {
	case len(b) == 0:
		return []byte{} // empty, not nil: nil would be a null value
	case len(b) > slabMaxLine:
		return bytes.Clone(b)
	case len(b) > cap(s.buf)-len(s.buf):
		s.buf = make([]byte, 0, slabSize)
	}
	start := len(s.buf)
	s.buf = append(s.buf, b...)
	return s.buf[start:len(s.buf):len(s.buf)]
}
