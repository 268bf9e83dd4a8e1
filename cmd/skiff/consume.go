package main

// skiff consume: print a topic's records, one per line, like
// kafka-console-consumer and kcat -C.

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"syscall"

	"github.com/urfave/cli/v2"

	"skiff/client"
	"skiff/internal/recordfmt"
)

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

--isolation read_committed (the default, as in librdkafka) prints committed
records only: none of an open or aborted transaction, and --exit-at-end stops at
the last stable offsets. --isolation read_uncommitted prints every record up to
the high watermark.

With --group G the records are consumed as member of consumer group G: the
group's committed offsets say where to resume and the offsets of printed
records are committed (--from-beginning then only applies to partitions without
a commit; --offset and --partition are refused). With --exit-at-end the group is
assumed to have no other active member. --group-protocol consumer joins with
KIP-848's protocol (Kafka's group.protocol=consumer): the broker assigns the
partitions and moves them between members without stopping the others; it fails
if the cluster does not offer it.

With --share G the records are consumed as member of share group G (KIP-932):
members share every partition, each record is acquired by one member, printed,
then acknowledged (ACCEPT); a record not acknowledged within the group's lock
duration (a member that died) goes to another member. --reject-if REGEX rejects
the records whose value matches REGEX instead of printing them (they go to the
group's dead-letter topic when errors.deadletterqueue.topic.name is set). Where
a new share group starts is the group config share.auto.offset.reset (latest by
default). --group, --from-beginning, --offset, --partition and --exit-at-end do
not apply.

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
			&cli.StringFlag{Name: "group-protocol", Value: "classic", Usage: "with --group: the group's `PROTOCOL`, classic or consumer (KIP-848: the broker assigns partitions)"},
			&cli.StringFlag{Name: "share", Usage: "consume as member of share `GROUP`, acknowledging each printed record"},
			&cli.StringFlag{Name: "reject-if", Usage: "with --share: reject records whose value matches `REGEX` instead of printing them"},
			&cli.StringFlag{Name: "key-separator", Aliases: []string{"K"}, Usage: "--format value: print the key, `SEP`, then the value"},
			&cli.StringFlag{Name: "isolation", Value: "read_committed", Usage: "`LEVEL`: read_committed or read_uncommitted (records of open and aborted transactions too)"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print a summary line to stderr"},
		),
		Action: runConsume,
	}
}

func consumeOptsFrom(c *cli.Context) (client.ConsumeOptions, error) {
	o := client.ConsumeOptions{
		Topic:     c.String("topic"),
		Offset:    c.Int64("offset"),
		Count:     c.Int64("count"),
		ExitAtEnd: c.Bool("exit-at-end"),
		Group:     c.String("group"),
		Partition: -1,
		Out:       c.App.Writer,
		Warn:      c.App.ErrWriter,
	}
	if o.Topic == "" {
		return o, errors.New("missing --topic (-t): name the topic to consume")
	}
	switch iso := c.String("isolation"); iso {
	case "read_committed", "":
	case "read_uncommitted":
		o.ReadUncommitted = true
	default:
		return o, fmt.Errorf("invalid --isolation %q: want read_committed or read_uncommitted", iso)
	}
	switch fromBeginning, atOffset := c.Bool("from-beginning"), c.IsSet("offset"); {
	case fromBeginning && atOffset:
		return o, errors.New("--from-beginning and --offset conflict: give one of them")
	case fromBeginning:
		o.Start = client.StartAtBeginning
	case atOffset:
		o.Start = client.StartAtOffset
	}
	if c.IsSet("partition") {
		p := c.Int("partition")
		if p < 0 || p > 1<<31-1 {
			return o, fmt.Errorf("invalid --partition %d: partitions are numbered from 0", p)
		}
		o.Partition = int32(p)
	}
	if c.IsSet("count") && o.Count < 1 {
		return o, fmt.Errorf("-n (--count) must be at least 1, not %d", o.Count)
	}
	var err error
	if o.Format, err = parseFormat(c.String("format")); err != nil {
		return o, err
	}
	if c.IsSet("key-separator") {
		if o.Format != recordfmt.Value {
			return o, errors.New("--key-separator only applies to --format value (json has a key field)")
		}
		o.KeySep = []byte(c.String("key-separator"))
	}
	if o.GroupProtocol, err = client.ParseGroupProtocol(c.String("group-protocol")); err != nil {
		return o, err
	}
	if c.IsSet("group-protocol") && !c.IsSet("group") {
		return o, errors.New("--group-protocol needs --group: it says how the group's members share the partitions")
	}
	if c.IsSet("group") {
		switch {
		case o.Group == "":
			return o, errors.New("--group must not be empty")
		case o.Start == client.StartAtOffset:
			return o, errors.New("--offset cannot be used with --group: a group resumes from its committed offsets " +
				"(--from-beginning sets where a partition without a commit starts)")
		case o.Partition >= 0:
			return o, errors.New("--partition cannot be used with --group: the group assigns partitions to its members")
		}
	}
	return o, shareOptsFrom(c, &o)
}

// shareOptsFrom reads --share and --reject-if.
func shareOptsFrom(c *cli.Context, o *client.ConsumeOptions) error {
	if !c.IsSet("share") {
		if c.IsSet("reject-if") {
			return errors.New("--reject-if needs --share: only a share group member acknowledges records")
		}
		return nil
	}
	o.Share = c.String("share")
	for _, f := range []string{"group", "from-beginning", "offset", "partition", "exit-at-end"} {
		if c.IsSet(f) {
			return fmt.Errorf("--%s cannot be used with --share: the share group decides what each member gets "+
				"(set the group config share.auto.offset.reset to earliest to start at the oldest record)", f)
		}
	}
	if o.Share == "" {
		return errors.New("--share must not be empty")
	}
	if c.IsSet("reject-if") {
		re, err := regexp.Compile(c.String("reject-if"))
		if err != nil {
			return fmt.Errorf("invalid --reject-if: %w", err)
		}
		o.RejectIf = re
	}
	return nil
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

	st, err := k.Consume(ctx, o)
	if err != nil {
		return err
	}
	if c.Bool("verbose") || isTerminal(c.App.ErrWriter) {
		fmt.Fprintf(c.App.ErrWriter, "consumed %d records from %s in %.3fs\n", st.Records, o.Topic, st.Elapsed.Seconds())
	}
	return nil
}
