package main

// skiff produce: one record per input line, produced asynchronously, every
// acknowledgement checked.

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"skiff/client"
)

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
			&cli.DurationFlag{Name: "delivery-timeout", Value: client.DefaultDeliveryTimeout, Usage: "fail a record not acknowledged within `DURATION` (Kafka's delivery.timeout.ms)"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print a summary line to stderr"},
		),
		Action: runProduce,
	}
}

// produceOptsFrom reads produce's flags, checked before any connection.
func produceOptsFrom(c *cli.Context) (client.ProduceOptions, error) {
	o := client.ProduceOptions{
		Topic:           c.String("topic"),
		DeliveryTimeout: c.Duration("delivery-timeout"),
		In:              c.App.Reader,
	}
	if o.Topic == "" {
		return o, errors.New("missing --topic (-t): name the topic to produce to")
	}
	if c.IsSet("key-separator") {
		if c.String("key-separator") == "" {
			return o, errors.New("--key-separator must not be empty")
		}
		o.KeySep = []byte(c.String("key-separator"))
	}
	var err error
	if o.Acks, o.Idempotent, err = client.ParseAcks(c.String("acks")); err != nil {
		return o, err
	}
	if o.Compression, err = client.ParseCompression(c.String("compression")); err != nil {
		return o, err
	}
	if o.DeliveryTimeout < time.Second { // franz-go's minimum
		return o, fmt.Errorf("--delivery-timeout must be at least 1s, not %v", o.DeliveryTimeout)
	}
	return o, nil
}

func runProduce(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": produce reads records from stdin or --file FILE"); err != nil {
		return err
	}
	o, err := produceOptsFrom(c)
	if err != nil {
		return err
	}
	k, err := clientFromFlags(c)
	if err != nil {
		return err
	}
	defer k.Close()
	if file := c.String("file"); file != "" && file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("open input: %w", err)
		}
		defer f.Close()
		o.In = f
	}

	st, err := k.Produce(c.Context, o)
	if err != nil {
		return err
	}
	if c.Bool("verbose") || isTerminal(c.App.ErrWriter) {
		fmt.Fprintf(c.App.ErrWriter, "produced %d records (%d bytes) to %s in %.3fs\n",
			st.Records, st.Bytes, o.Topic, st.Elapsed.Seconds())
	}
	return nil
}
