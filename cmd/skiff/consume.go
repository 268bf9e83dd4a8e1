package main

// skiff consume: print a topic's records, one per line, like
// kafka-console-consumer and kcat -C.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"skiff/client"
	"skiff/internal/recordfmt"
)

// groupJoinAllowance is added to the --exit-at-end stall window for a group
// consumer: joining can wait out a previous member's session (45s by default).
const groupJoinAllowance = 45 * time.Second

func consumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "consume",
		Usage:     "print records of a topic, one per line",
		ArgsUsage: " ",
		Description: `Prints records to stdout, one per line, until interrupted, -n COUNT records, or
(with --exit-at-end) the end. By default only records produced after the start
are printed, like kafka-console-consumer; --from-beginning starts at the oldest
record, --offset N at offset N of every partition (a negative N: |N| records
before the end of each partition; out-of-range offsets are moved to the nearest
of the log start and end).

--exit-at-end lists every partition's end offset when starting (ListOffsets) and
stops once each partition has been read up to it; records produced later are
not printed. It fails if no record arrives for --timeout (plus 45s with --group,
for joining) while a partition is short of its end. -n COUNT stops after COUNT
records. An interrupt (Ctrl-C) stops cleanly, with exit status 0.

--format value prints the value bytes (with --key-separator SEP: key SEP value).
--format json prints one object per record:
  {"topic":"t","partition":0,"offset":7,"timestamp":"2024-05-01T12:00:00.123Z",
   "timestamp_ms":1714564800123,"key":null,"value":"hello",
   "headers":[{"key":"h","value":"v"}]}
timestamp is RFC 3339 in UTC with milliseconds, timestamp_ms the same instant in
Unix milliseconds. key, value and header keys and values are strings when they
are valid UTF-8; otherwise base64 with a companion field, e.g.
"value_encoding":"base64". A null key or value is null.

With --group G the records are consumed as member of consumer group G: the
group's committed offsets say where to resume and the offsets of printed
records are committed (--from-beginning then only applies to partitions without
a commit; --offset and --partition are refused). With --exit-at-end the group is
assumed to have no other active member.

Output is buffered and flushed after every batch received from the broker. The
topic must exist: consume never creates it. A summary line goes to stderr with
--verbose, or when stderr is a terminal.`,
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "`TOPIC` to read (required)"},
			&cli.BoolFlag{Name: "from-beginning", Usage: "start at the oldest record"},
			&cli.Int64Flag{Name: "offset", Aliases: []string{"o"}, DefaultText: "the end", Usage: "start at offset `N` in every partition (negative: N before the end)"},
			&cli.IntFlag{Name: "partition", Aliases: []string{"p"}, Value: -1, DefaultText: "all", Usage: "read only partition `P`"},
			&cli.Int64Flag{Name: "count", Aliases: []string{"n"}, DefaultText: "no limit", Usage: "stop after `COUNT` records"},
			&cli.BoolFlag{Name: "exit-at-end", Aliases: []string{"e"}, Usage: "stop at the end offsets listed at start"},
			&cli.StringFlag{Name: "format", Aliases: []string{"F"}, Value: "value", Usage: "output `FORMAT`: value or json"},
			&cli.StringFlag{Name: "group", Aliases: []string{"g"}, Usage: "consume as member of consumer `GROUP`, committing offsets"},
			&cli.StringFlag{Name: "key-separator", Aliases: []string{"K"}, Usage: "--format value: print the key, `SEP`, then the value"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print a summary line to stderr"},
		),
		Action: runConsume,
	}
}

type startKind int

const (
	startAtEnd       startKind = iota // new records only (the default)
	startAtBeginning                  // --from-beginning
	startAtOffset                     // --offset N
)

// consumeOpts is what consume's flags say, checked before any connection.
type consumeOpts struct {
	topic     string
	start     startKind
	offset    int64 // with startAtOffset; negative counts back from the end
	partition int32 // -1: every partition
	count     int64 // 0: no limit
	exitAtEnd bool
	format    recordfmt.Format
	group     string
	keySep    []byte // nil: print no key
	verbose   bool
}

func consumeOptsFrom(c *cli.Context) (consumeOpts, error) {
	o := consumeOpts{
		topic:     c.String("topic"),
		offset:    c.Int64("offset"),
		count:     c.Int64("count"),
		exitAtEnd: c.Bool("exit-at-end"),
		group:     c.String("group"),
		verbose:   c.Bool("verbose"),
		partition: -1,
	}
	if o.topic == "" {
		return o, errors.New("missing --topic (-t): name the topic to consume")
	}
	switch fromBeginning, atOffset := c.Bool("from-beginning"), c.IsSet("offset"); {
	case fromBeginning && atOffset:
		return o, errors.New("--from-beginning and --offset conflict: give one of them")
	case fromBeginning:
		o.start = startAtBeginning
	case atOffset:
		o.start = startAtOffset
	}
	if c.IsSet("partition") {
		p := c.Int("partition")
		if p < 0 || p > 1<<31-1 {
			return o, fmt.Errorf("invalid --partition %d: partitions are numbered from 0", p)
		}
		o.partition = int32(p)
	}
	if c.IsSet("count") && o.count < 1 {
		return o, fmt.Errorf("-n (--count) must be at least 1, not %d", o.count)
	}
	var err error
	if o.format, err = parseFormat(c.String("format")); err != nil {
		return o, err
	}
	if c.IsSet("key-separator") {
		if o.format != recordfmt.Value {
			return o, errors.New("--key-separator only applies to --format value (json has a key field)")
		}
		o.keySep = []byte(c.String("key-separator"))
	}
	if c.IsSet("group") {
		switch {
		case o.group == "":
			return o, errors.New("--group must not be empty")
		case o.start == startAtOffset:
			return o, errors.New("--offset cannot be used with --group: a group resumes from its committed offsets " +
				"(--from-beginning sets where a partition without a commit starts)")
		case o.partition >= 0:
			return o, errors.New("--partition cannot be used with --group: the group assigns partitions to its members")
		}
	}
	return o, nil
}

// parseFormat reads --format.
func parseFormat(s string) (recordfmt.Format, error) {
	switch s {
	case "value", "":
		return recordfmt.Value, nil
	case "json":
		return recordfmt.JSON, nil
	}
	return 0, fmt.Errorf("invalid --format %q: want value or json", s)
}

// startOffset returns the offset consuming starts at in a partition whose log
// spans [logStart, end), given the group's committed offset (negative: none).
func startOffset(o consumeOpts, logStart, end, committed int64) int64 {
	clamp := func(n int64) int64 { return max(logStart, min(n, end)) }
	switch {
	case committed >= 0:
		return clamp(committed)
	case o.start == startAtBeginning:
		return logStart
	case o.start == startAtOffset && o.offset >= 0:
		return clamp(o.offset)
	case o.start == startAtOffset:
		return clamp(end + o.offset)
	default:
		return end
	}
}

func runConsume(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": consume takes no arguments (name the topic with -t)"); err != nil {
		return err
	}
	o, err := consumeOptsFrom(c)
	if err != nil {
		return err
	}
	k, err := clientFromFlags(c)
	if err != nil {
		return err
	}
	defer k.Close()
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()

	partitions, err := k.TopicPartitions(ctx, o.topic)
	if err != nil {
		return err
	}
	if o.partition >= 0 {
		if !slices.Contains(partitions, o.partition) {
			return fmt.Errorf("topic %q has no partition %d (it has %d partitions)", o.topic, o.partition, len(partitions))
		}
		partitions = []int32{o.partition}
	}

	// Where each partition starts and, for --exit-at-end, where it ends. A
	// group without --exit-at-end leaves both to the group and the client.
	var starts, ends map[int32]int64
	if o.group == "" || o.exitAtEnd {
		if starts, ends, err = plan(ctx, k, o, partitions); err != nil {
			return err
		}
	}
	var tracker *endTracker
	if o.exitAtEnd {
		tracker = newEndTracker(starts, ends)
	}

	start := time.Now()
	var printed int64
	if tracker == nil || !tracker.done() {
		printed, err = consume(ctx, k, c, o, starts, tracker)
		if err != nil {
			return err
		}
	}
	if o.verbose || isTerminal(c.App.ErrWriter) {
		fmt.Fprintf(c.App.ErrWriter, "consumed %d records from %s in %.3fs\n", printed, o.topic, time.Since(start).Seconds())
	}
	return nil
}

// plan lists each partition's log start and end offsets (and, for a group,
// its committed offsets) and returns where consuming starts and ends.
func plan(ctx context.Context, k *client.Client, o consumeOpts, partitions []int32) (starts, ends map[int32]int64, err error) {
	ctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	logStarts, err := k.Admin().ListStartOffsets(ctx, o.topic)
	if err != nil {
		return nil, nil, fmt.Errorf("list offsets of topic %q: %w", o.topic, k.Explain(err))
	}
	logEnds, err := k.Admin().ListEndOffsets(ctx, o.topic)
	if err != nil {
		return nil, nil, fmt.Errorf("list offsets of topic %q: %w", o.topic, k.Explain(err))
	}
	committed := map[int32]int64{}
	if o.group != "" {
		resps, err := k.Admin().FetchOffsets(ctx, o.group)
		if err != nil {
			return nil, nil, fmt.Errorf("fetch committed offsets of group %q: %w", o.group, k.Explain(err))
		}
		for _, p := range partitions {
			if r, ok := resps.Lookup(o.topic, p); ok && r.Err == nil && r.At >= 0 {
				committed[p] = r.At
			}
		}
	}
	starts, ends = make(map[int32]int64, len(partitions)), make(map[int32]int64, len(partitions))
	for _, p := range partitions {
		ls, ok1 := logStarts.Lookup(o.topic, p)
		le, ok2 := logEnds.Lookup(o.topic, p)
		switch {
		case !ok1 || !ok2:
			return nil, nil, fmt.Errorf("list offsets of topic %q partition %d: the broker did not answer for it", o.topic, p)
		case ls.Err != nil:
			return nil, nil, fmt.Errorf("list offsets of topic %q partition %d: %w", o.topic, p, ls.Err)
		case le.Err != nil:
			return nil, nil, fmt.Errorf("list offsets of topic %q partition %d: %w", o.topic, p, le.Err)
		}
		c, ok := committed[p]
		if !ok {
			c = -1
		}
		starts[p] = startOffset(o, ls.Offset, le.Offset, c)
		ends[p] = le.Offset
	}
	return starts, ends, nil
}

// consume runs the poll loop and returns how many records it printed. starts
// is used without a group; tracker is nil without --exit-at-end.
func consume(ctx context.Context, k *client.Client, c *cli.Context, o consumeOpts, starts map[int32]int64, tracker *endTracker) (int64, error) {
	// Control records (transaction markers) are kept so that --exit-at-end
	// sees every offset up to the end; they are never printed.
	opts := []kgo.Opt{kgo.KeepControlRecords()}
	if o.group != "" {
		reset := kgo.NewOffset().AtEnd()
		if o.start == startAtBeginning {
			reset = kgo.NewOffset().AtStart()
		}
		opts = append(opts,
			kgo.ConsumerGroup(o.group),
			kgo.ConsumeTopics(o.topic),
			kgo.ConsumeStartOffset(reset),
			kgo.AutoCommitMarks(),
		)
	} else {
		offsets := make(map[int32]kgo.Offset, len(starts))
		for p, s := range starts {
			if tracker == nil || !tracker.reachedEnd(p) {
				offsets[p] = kgo.NewOffset().At(s)
			}
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: offsets}))
	}
	cons, err := k.With(opts...)
	if err != nil {
		return 0, err
	}
	defer cons.Close()

	stall := k.Config().Timeout
	if o.group != "" {
		stall += groupJoinAllowance
	}
	out := bufio.NewWriterSize(c.App.Writer, 64<<10)
	var (
		printed int64
		line    []byte
		marks   []*kgo.Record
	)
	for {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if tracker != nil {
			pollCtx, cancel = context.WithTimeout(ctx, stall)
		}
		var fs kgo.Fetches
		if o.count > 0 {
			fs = cons.Kafka().PollRecords(pollCtx, int(min(o.count-printed, 1<<20)))
		} else {
			fs = cons.Kafka().PollFetches(pollCtx)
		}
		stallHit := pollCtx.Err() != nil && ctx.Err() == nil
		cancel()

		finished := false
		marks = marks[:0]
		for it := fs.RecordIter(); !it.Done() && !finished; {
			r := it.Next()
			if tracker != nil && tracker.beyond(r.Partition, r.Offset) {
				continue // produced after the start
			}
			if !r.Attrs.IsControl() {
				line = recordfmt.Append(line[:0], o.format, r, o.keySep)
				if _, err := out.Write(line); err != nil {
					return printed, fmt.Errorf("write output: %w", err)
				}
				printed++
			}
			marks = append(marks, r)
			if tracker != nil && tracker.observe(r.Partition, r.Offset) && o.group == "" {
				cons.Kafka().PauseFetchPartitions(map[string][]int32{o.topic: {r.Partition}})
			}
			finished = (o.count > 0 && printed >= o.count) || (tracker != nil && tracker.done())
		}
		if err := out.Flush(); err != nil {
			return printed, fmt.Errorf("write output: %w", err)
		}
		if o.group != "" && len(marks) > 0 {
			cons.Kafka().MarkCommitRecords(marks...)
		}
		if finished {
			return printed, commit(ctx, cons, o)
		}

		for _, fe := range fs.Errors() {
			var loss *kgo.ErrDataLoss
			var sess *kgo.ErrGroupSession
			switch {
			case errors.Is(fe.Err, kgo.ErrClientClosed), errors.Is(fe.Err, context.Canceled) && ctx.Err() != nil:
				// Interrupted: stop cleanly, keeping what was printed.
				return printed, commit(ctx, cons, o)
			case stallHit && errors.Is(fe.Err, context.DeadlineExceeded):
				return printed, stalled(k, o, stall, tracker)
			case errors.As(fe.Err, &loss), errors.As(fe.Err, &sess):
				fmt.Fprintf(c.App.ErrWriter, "skiff: warning: %v\n", fe.Err)
			case fe.Topic != "" && fe.Partition >= 0:
				return printed, fmt.Errorf("consume topic %q partition %d: %w", fe.Topic, fe.Partition, topicErrorIfUnknown(k.Explain(fe.Err)))
			default:
				return printed, fmt.Errorf("consume topic %q: %w", o.topic, k.Explain(fe.Err))
			}
		}
	}
}

// commit commits a group's offsets of printed records before the client
// closes; it is a no-op without a group. It runs even after an interrupt.
func commit(ctx context.Context, k *client.Client, o consumeOpts) error {
	if o.group == "" {
		return nil
	}
	ctx, cancel := k.RequestCtx(context.WithoutCancel(ctx))
	defer cancel()
	if err := k.Kafka().CommitMarkedOffsets(ctx); err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", o.group, k.Explain(err))
	}
	return nil
}

// stalled explains why --exit-at-end gave up waiting.
func stalled(k *client.Client, o consumeOpts, waited time.Duration, t *endTracker) error {
	if _, _, derr := k.LastDialError(); derr != nil {
		return fmt.Errorf("consume topic %q: %w", o.topic, k.Explain(context.DeadlineExceeded))
	}
	return fmt.Errorf("consume topic %q: no records for %v although partitions %s have not reached the end offsets listed at start; "+
		"is the broker healthy? (raise --timeout to wait longer)", o.topic, waited, t.pendingString())
}

// topicErrorIfUnknown words a missing topic (deleted while consuming).
func topicErrorIfUnknown(err error) error {
	if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		return fmt.Errorf("the topic was deleted: %w", err)
	}
	return err
}

// endTracker follows --exit-at-end: which partitions have been read up to the
// end offset listed at start.
type endTracker struct {
	end     map[int32]int64 // first offset not to print
	pending map[int32]bool  // partitions not yet read to their end
}

func newEndTracker(starts, ends map[int32]int64) *endTracker {
	t := &endTracker{end: ends, pending: make(map[int32]bool)}
	for p, e := range ends {
		if starts[p] < e {
			t.pending[p] = true
		}
	}
	return t
}

// beyond reports whether offset off of partition p is at or past its end.
func (t *endTracker) beyond(p int32, off int64) bool {
	e, ok := t.end[p]
	return !ok || off >= e
}

// observe records that offset off of p was read and reports whether that
// completed p.
func (t *endTracker) observe(p int32, off int64) bool {
	if t.pending[p] && off+1 >= t.end[p] {
		delete(t.pending, p)
		return true
	}
	return false
}

func (t *endTracker) reachedEnd(p int32) bool { return !t.pending[p] }

func (t *endTracker) done() bool { return len(t.pending) == 0 }

// pendingString lists unfinished partitions, e.g. "0, 2 (end offsets 10, 7)".
func (t *endTracker) pendingString() string {
	ps := make([]int32, 0, len(t.pending))
	for p := range t.pending {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	ids := make([]string, len(ps))
	ends := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = fmt.Sprint(p)
		ends[i] = fmt.Sprint(t.end[p])
	}
	return fmt.Sprintf("%s (end offsets %s)", strings.Join(ids, ", "), strings.Join(ends, ", "))
}
