package client

// Consume: print a topic's records, one per line, for `skiff consume`.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/recordfmt"
)

// groupJoinAllowance is added to the ExitAtEnd stall window for a group
// consumer: joining can wait out a previous member's session (45s by default).
const groupJoinAllowance = 45 * time.Second

// Start is where consuming starts in a partition without a committed offset.
type Start int

const (
	StartAtEnd       Start = iota // new records only (the default)
	StartAtBeginning              // the oldest record
	StartAtOffset                 // ConsumeOptions.Offset
)

// ConsumeOptions say what Consume reads and where it prints it.
type ConsumeOptions struct {
	Topic     string
	Start     Start
	Offset    int64 // with StartAtOffset; negative counts back from the end
	Partition int32 // -1: every partition
	Count     int64 // 0: no limit
	// ExitAtEnd stops at the end offsets listed when starting.
	ExitAtEnd bool
	// Group, when set, consumes as member of that group, committing the
	// offsets of printed records.
	Group string
	// GroupProtocol is the group's protocol: GroupClassic (the default) or
	// GroupConsumer, KIP-848's, in which the broker assigns the partitions.
	GroupProtocol GroupProtocol
	// ReadUncommitted reads at isolation read_uncommitted: records of open and
	// aborted transactions too, up to the high watermark. The default is
	// read_committed, as librdkafka's: committed records only, up to the last
	// stable offset.
	ReadUncommitted bool
	// Share, when set, consumes as member of that share group (KIP-932),
	// accepting each record once printed; RejectIf rejects the records whose
	// value matches instead of printing them. Share excludes Start, Offset,
	// Partition, ExitAtEnd and Group.
	Share    string
	RejectIf *regexp.Regexp
	Format   recordfmt.Format
	KeySep   []byte    // nil: print no key
	Out      io.Writer // records, buffered and flushed after every batch
	Warn     io.Writer // warnings that do not stop consuming
}

// GroupProtocol is Kafka's group.protocol: how a consumer takes part in its group.
type GroupProtocol int

const (
	GroupClassic  GroupProtocol = iota // JoinGroup/SyncGroup; the client assigns
	GroupConsumer                      // KIP-848's ConsumerGroupHeartbeat; the broker assigns
)

// ParseGroupProtocol reads Kafka's names of the protocols, classic and consumer.
func ParseGroupProtocol(s string) (GroupProtocol, error) {
	switch strings.ToLower(s) {
	case "classic", "":
		return GroupClassic, nil
	case "consumer":
		return GroupConsumer, nil
	}
	return 0, fmt.Errorf("invalid group protocol %q: want classic or consumer (KIP-848)", s)
}

// ConsumeStats count what Consume printed.
type ConsumeStats struct {
	Records int64
	Elapsed time.Duration // the poll loop, after the offsets are listed
}

// Consume prints o.Topic's records to o.Out until ctx is cancelled (a clean
// stop), o.Count records, or with o.ExitAtEnd the end. The topic must exist:
// Consume never creates it.
func (k *Client) Consume(ctx context.Context, o ConsumeOptions) (ConsumeStats, error) {
	partitions, err := k.TopicPartitions(ctx, o.Topic)
	if err != nil {
		return ConsumeStats{}, err
	}
	if o.Partition >= 0 {
		if !slices.Contains(partitions, o.Partition) {
			return ConsumeStats{}, fmt.Errorf("topic %q has no partition %d (it has %d partitions)", o.Topic, o.Partition, len(partitions))
		}
		partitions = []int32{o.Partition}
	}

	if o.Share != "" {
		start := time.Now()
		n, err := k.shareConsume(ctx, o)
		return ConsumeStats{Records: n, Elapsed: time.Since(start)}, err
	}
	// Where each partition starts and, for ExitAtEnd, where it ends. A group
	// without ExitAtEnd leaves both to the group and the client.
	var starts, ends map[int32]int64
	if o.Group != "" && o.GroupProtocol == GroupConsumer {
		if err := k.requireKIP848(ctx); err != nil {
			return ConsumeStats{}, err
		}
	}
	if o.Group == "" || o.ExitAtEnd {
		if starts, ends, err = k.plan(ctx, o, partitions); err != nil {
			return ConsumeStats{}, err
		}
	}
	var tracker *endTracker
	if o.ExitAtEnd {
		tracker = newEndTracker(starts, ends)
	}
	start := time.Now()
	var st ConsumeStats
	if tracker == nil || !tracker.done() {
		st.Records, err = k.consume(ctx, o, starts, tracker)
	}
	st.Elapsed = time.Since(start)
	return st, err
}

// plan lists each partition's log start and end offsets (and, for a group,
// its committed offsets) and returns where consuming starts and ends.
func (k *Client) plan(ctx context.Context, o ConsumeOptions, partitions []int32) (starts, ends map[int32]int64, err error) {
	ctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	logStarts, err := k.admin.ListStartOffsets(ctx, o.Topic)
	if err != nil {
		return nil, nil, fmt.Errorf("list offsets of topic %q: %w", o.Topic, k.Explain(err))
	}
	listEnds := k.admin.ListCommittedOffsets // read_committed: the last stable offsets
	if o.ReadUncommitted {
		listEnds = k.admin.ListEndOffsets
	}
	logEnds, err := listEnds(ctx, o.Topic)
	if err != nil {
		return nil, nil, fmt.Errorf("list offsets of topic %q: %w", o.Topic, k.Explain(err))
	}
	committed := map[int32]int64{}
	if o.Group != "" {
		resps, err := k.admin.FetchOffsets(ctx, o.Group)
		if err != nil {
			return nil, nil, fmt.Errorf("fetch committed offsets of group %q: %w", o.Group, k.Explain(err))
		}
		for _, p := range partitions {
			if r, ok := resps.Lookup(o.Topic, p); ok && r.Err == nil && r.At >= 0 {
				committed[p] = r.At
			}
		}
	}
	starts, ends = make(map[int32]int64, len(partitions)), make(map[int32]int64, len(partitions))
	for _, p := range partitions {
		ls, ok1 := logStarts.Lookup(o.Topic, p)
		le, ok2 := logEnds.Lookup(o.Topic, p)
		switch {
		case !ok1 || !ok2:
			return nil, nil, fmt.Errorf("list offsets of topic %q partition %d: the broker did not answer for it", o.Topic, p)
		case ls.Err != nil:
			return nil, nil, fmt.Errorf("list offsets of topic %q partition %d: %w", o.Topic, p, ls.Err)
		case le.Err != nil:
			return nil, nil, fmt.Errorf("list offsets of topic %q partition %d: %w", o.Topic, p, le.Err)
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

// startOffset returns the offset consuming starts at in a partition whose log
// spans [logStart, end), given the group's committed offset (negative: none).
func startOffset(o ConsumeOptions, logStart, end, committed int64) int64 {
	clamp := func(n int64) int64 { return max(logStart, min(n, end)) }
	switch {
	case committed >= 0:
		return clamp(committed)
	case o.Start == StartAtBeginning:
		return logStart
	case o.Start == StartAtOffset && o.Offset >= 0:
		return clamp(o.Offset)
	case o.Start == StartAtOffset:
		return clamp(end + o.Offset)
	default:
		return end
	}
}

// consume runs the poll loop and returns how many records it printed. starts
// is used without a group; tracker is nil without ExitAtEnd.
func (k *Client) consume(ctx context.Context, o ConsumeOptions, starts map[int32]int64, tracker *endTracker) (int64, error) {
	// Control records (transaction markers) are kept so that ExitAtEnd sees
	// every offset up to the end; they are never printed.
	opts := []kgo.Opt{kgo.KeepControlRecords(), kgo.FetchIsolationLevel(kgo.ReadCommitted())}
	if o.ReadUncommitted {
		opts[1] = kgo.FetchIsolationLevel(kgo.ReadUncommitted())
	}
	if o.Group != "" {
		reset := kgo.NewOffset().AtEnd()
		if o.Start == StartAtBeginning {
			reset = kgo.NewOffset().AtStart()
		}
		opts = append(opts,
			kgo.ConsumerGroup(o.Group),
			kgo.ConsumeTopics(o.Topic),
			kgo.ConsumeStartOffset(reset),
			kgo.AutoCommitMarks(),
		)
		if o.GroupProtocol == GroupConsumer {
			opts = append(opts, kgo.ServerSideBalancer()) // with the default cooperative-sticky balancer: "uniform"
		}
	} else {
		offsets := make(map[int32]kgo.Offset, len(starts))
		for p, s := range starts {
			if tracker == nil || !tracker.reachedEnd(p) {
				offsets[p] = kgo.NewOffset().At(s)
			}
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: offsets}))
	}
	cons, err := k.With(opts...)
	if err != nil {
		return 0, err
	}
	defer cons.Close()

	stall := k.cfg.Timeout
	if o.Group != "" {
		stall += groupJoinAllowance
	}
	out := bufio.NewWriterSize(o.Out, 64<<10)
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
		if o.Count > 0 {
			fs = cons.kafka.PollRecords(pollCtx, int(min(o.Count-printed, 1<<20)))
		} else {
			fs = cons.kafka.PollFetches(pollCtx)
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
				line = recordfmt.Append(line[:0], o.Format, r, o.KeySep)
				if _, err := out.Write(line); err != nil {
					return printed, fmt.Errorf("write output: %w", err)
				}
				printed++
			}
			marks = append(marks, r)
			if tracker != nil && tracker.observe(r.Partition, r.Offset) && o.Group == "" {
				cons.kafka.PauseFetchPartitions(map[string][]int32{o.Topic: {r.Partition}})
			}
			finished = (o.Count > 0 && printed >= o.Count) || (tracker != nil && tracker.done())
		}
		if err := out.Flush(); err != nil {
			return printed, fmt.Errorf("write output: %w", err)
		}
		if o.Group != "" && len(marks) > 0 {
			cons.kafka.MarkCommitRecords(marks...)
		}
		if finished {
			return printed, cons.commitMarked(ctx, o.Group)
		}

		for _, fe := range fs.Errors() {
			var loss *kgo.ErrDataLoss
			var sess *kgo.ErrGroupSession
			switch {
			case errors.Is(fe.Err, kgo.ErrClientClosed), errors.Is(fe.Err, context.Canceled) && ctx.Err() != nil:
				// Interrupted: stop cleanly, keeping what was printed.
				return printed, cons.commitMarked(ctx, o.Group)
			case stallHit && errors.Is(fe.Err, context.DeadlineExceeded):
				return printed, k.stalled(o.Topic, stall, tracker)
			case errors.As(fe.Err, &loss), errors.As(fe.Err, &sess):
				fmt.Fprintf(o.Warn, "skiff: warning: %v\n", fe.Err)
			case fe.Topic != "" && fe.Partition >= 0:
				return printed, fmt.Errorf("consume topic %q partition %d: %w", fe.Topic, fe.Partition, topicErrorIfUnknown(k.Explain(fe.Err)))
			default:
				return printed, fmt.Errorf("consume topic %q: %w", o.Topic, k.Explain(fe.Err))
			}
		}
	}
}

// commitMarked commits a group's offsets of printed records before the client
// closes; it is a no-op without a group. It runs even after an interrupt.
func (k *Client) commitMarked(ctx context.Context, group string) error {
	if group == "" {
		return nil
	}
	ctx, cancel := k.RequestCtx(context.WithoutCancel(ctx))
	defer cancel()
	if err := k.kafka.CommitMarkedOffsets(ctx); err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", group, k.Explain(err))
	}
	return nil
}

// stalled explains why ExitAtEnd gave up waiting.
func (k *Client) stalled(topic string, waited time.Duration, t *endTracker) error {
	if _, _, derr := k.LastDialError(); derr != nil {
		return fmt.Errorf("consume topic %q: %w", topic, k.Explain(context.DeadlineExceeded))
	}
	return fmt.Errorf("consume topic %q: no records for %v although partitions %s have not reached the end offsets listed at start; "+
		"is the broker healthy? (raise --timeout to wait longer)", topic, waited, t.pendingString())
}

// topicErrorIfUnknown words a missing topic (deleted while consuming).
func topicErrorIfUnknown(err error) error {
	if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		return fmt.Errorf("the topic was deleted: %w", err)
	}
	return err
}

// requireKIP848 fails unless a broker offers ConsumerGroupHeartbeat v1, which
// KIP-848 clients need (franz-go would quietly fall back to the classic protocol).
func (k *Client) requireKIP848(ctx context.Context) error {
	ctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	versions, err := k.admin.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("ask the brokers which APIs they serve: %w", k.Explain(err))
	}
	for _, b := range versions.Sorted() {
		if b.Err != nil {
			continue
		}
		if v, ok := b.KeyMaxVersion(int16(kmsg.ConsumerGroupHeartbeat)); ok && v >= 1 {
			return nil
		}
	}
	return errors.New("the cluster does not offer the consumer group protocol (KIP-848: ConsumerGroupHeartbeat v1); use --group-protocol classic")
}
