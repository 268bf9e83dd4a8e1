package main

// skiff bench produce|consume|e2e|baseline|null-server: the flags, turned into a
// bench.Config and handed to package bench, which runs the load and the baselines
// (docs/performance.md).

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"skiff/bench"
)

const (
	defaultBenchDuration = 10 * time.Second
	defaultRecordSize    = 1024
	defaultBenchParts    = 6
	maxRecordSize        = 64 << 20
	defaultBaseBytes     = 1 << 30
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure produce and consume throughput and latency, and this machine's limits",
		Description: `produce, consume and e2e drive a Kafka cluster with franz-go and print records/s,
MB/s (1 MB = 10^6 bytes of record values) and latency percentiles; baseline
measures what this machine can do without a broker (disk write, loopback TCP,
sendfile). With --baseline, produce, consume and e2e measure the baseline in
the same run and print their result beside it as ratios (produce and consume
also against a Kafka server that only appends and sends back, with the same
client and settings): on a shared machine the ratio is the figure to compare,
not the absolute.
docs/performance.md has the targets and how to reproduce them.`,
		Subcommands: []*cli.Command{
			benchLoadCommand(bench.Produce),
			benchLoadCommand(bench.Consume),
			benchLoadCommand(bench.E2E),
			benchBaselineCommand(),
			benchNullServerCommand(),
		},
	}
}

func benchLoadCommand(mode bench.Mode) *cli.Command {
	flags := append(clientFlags(),
		&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "`TOPIC` to use (required)"},
		&cli.Int64Flag{Name: "records", Aliases: []string{"n"}, DefaultText: "no limit", Usage: "stop after `N` records"},
		&cli.DurationFlag{Name: "duration", Aliases: []string{"d"}, DefaultText: "10s unless --records", Usage: "stop after `D`"},
		&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
		&cli.BoolFlag{Name: "baseline", Usage: "also measure this machine's limits (skiff bench baseline) and print ratios"},
		&cli.StringFlag{Name: "dir", Value: ".", Usage: "with --baseline: write the disk baseline into `DIR` (put it on the brokers' data filesystem)"},
	)
	var usage, desc string
	switch mode {
	case bench.Produce:
		usage = "produce records as fast as possible, or at --rate, and measure throughput and latency"
		desc = `Creates the topic if it does not exist (--partitions, --replication-factor,
--config) and waits until every partition has a leader and all its replicas in
sync. Then --producers clients each produce --record-size byte records (letters,
no key) with franz-go's defaults unless flags say otherwise, until --records or
--duration (default 10s). Latency runs from the moment a record is handed to
the client to its acknowledgement: without --rate that includes waiting for
buffer space, so it is a throughput test. --rate R sends R records/s in total on
a fixed schedule and measures each record's latency from the time it was due,
not from when it was sent, so a stall is charged to every record it delayed
(no coordinated omission).`
	case bench.Consume:
		usage = "read a topic from its start and measure throughput"
		desc = `Reads every partition from its log start with one franz-go consumer (no group)
until the end offsets listed at the start, --records or --duration, whichever
comes first. Produce first (skiff bench produce) to have something to read.`
	case bench.E2E:
		usage = "produce and consume at once and measure latency from produce to consume"
		desc = `Like produce (same flags), with one consumer reading the new records as they
arrive. End-to-end latency runs from a record's send time (its due time with
--rate), stamped in its first 8 bytes, to its arrival at the consumer. The
producers and the consumer share this machine's CPUs with the brokers.`
	}
	if mode != bench.Consume {
		flags = append(flags,
			&cli.IntFlag{Name: "record-size", Aliases: []string{"s"}, Value: defaultRecordSize, Usage: "record value size in `BYTES` (at least 8)"},
			&cli.IntFlag{Name: "partitions", Aliases: []string{"p"}, Value: defaultBenchParts, Usage: "create the topic with `P` partitions"},
			&cli.IntFlag{Name: "replication-factor", Aliases: []string{"r"}, Value: -1, Usage: "create the topic with `N` replicas per partition (-1: the broker's default)"},
			&cli.GenericFlag{Name: "config", Value: &configList{}, Usage: "create the topic with config `KEY=VALUE` (repeat for several)"},
			&cli.IntFlag{Name: "producers", Aliases: []string{"k"}, Value: 1, Usage: "`K` producer clients, each with its own connections"},
			&cli.StringFlag{Name: "acks", Value: "all", Usage: "`all|1`: every in-sync replica (idempotent, franz-go's default) or the leader"},
			&cli.StringFlag{Name: "compression", Aliases: []string{"z"}, Value: "none", Usage: "batch compression `CODEC`: none, gzip, snappy, lz4 or zstd"},
			&cli.IntFlag{Name: "linger", DefaultText: "franz-go's, 10", Usage: "producer linger in `MS`"},
			&cli.Float64Flag{Name: "rate", DefaultText: "as fast as possible", Usage: "send `R` records/s in total on a fixed schedule"},
		)
	}
	return &cli.Command{
		Name:        string(mode),
		Usage:       usage,
		Description: desc,
		ArgsUsage:   " ",
		Flags:       flags,
		Action:      func(c *cli.Context) error { return runBenchLoad(c, mode) },
	}
}

// benchConfigFrom checks a load command's flags, before any connection, and
// turns them into the run's configuration.
func benchConfigFrom(c *cli.Context, mode bench.Mode) (bench.Config, error) {
	o := bench.Config{
		Mode:     mode,
		Topic:    c.String("topic"),
		Records:  c.Int64("records"),
		Duration: c.Duration("duration"),
		JSON:     c.Bool("json"),
		Baseline: c.Bool("baseline"),
		Dir:      c.String("dir"),
		Linger:   -1,
	}
	if o.Topic == "" {
		return o, errors.New("missing --topic (-t): name the topic to benchmark")
	}
	switch {
	case c.IsSet("records") && c.IsSet("duration"):
		return o, errors.New("--records and --duration conflict: give one of them")
	case c.IsSet("records") && o.Records < 1:
		return o, fmt.Errorf("--records must be at least 1, not %d", o.Records)
	case c.IsSet("duration") && o.Duration <= 0:
		return o, fmt.Errorf("--duration must be positive, not %v", o.Duration)
	case !c.IsSet("records") && !c.IsSet("duration") && mode != bench.Consume:
		o.Duration = defaultBenchDuration
	}
	if mode == bench.Consume {
		return o, nil
	}

	o.RecordSize = c.Int("record-size")
	if o.RecordSize < bench.MinRecordSize || o.RecordSize > maxRecordSize {
		return o, fmt.Errorf("--record-size must be from %d (the send stamp) to %d bytes, not %d", bench.MinRecordSize, maxRecordSize, o.RecordSize)
	}
	p, rf := c.Int("partitions"), c.Int("replication-factor")
	if p < 1 || p > math.MaxInt32 {
		return o, fmt.Errorf("--partitions must be at least 1, not %d", p)
	}
	if rf == 0 || rf < -1 || rf > math.MaxInt16 {
		return o, fmt.Errorf("--replication-factor must be at least 1 (or -1 for the broker's default), not %d", rf)
	}
	o.Partitions, o.ReplicationFactor = int32(p), int16(rf)
	var err error
	if o.Configs, err = c.Generic("config").(*configList).configs(); err != nil {
		return o, err
	}
	o.Producers = c.Int("producers")
	if o.Producers < 1 || o.Producers > 1024 {
		return o, fmt.Errorf("--producers must be from 1 to 1024, not %d", o.Producers)
	}
	o.AcksName = strings.ToLower(c.String("acks"))
	switch o.AcksName {
	case "all", "-1":
		o.AcksName = "all"
	case "1", "leader":
		o.AcksName = "1"
	default:
		return o, fmt.Errorf("invalid --acks %q: want all or 1 (latency is measured to the acknowledgement)", c.String("acks"))
	}
	if o.Acks, o.Idempotent, err = parseAcks(o.AcksName); err != nil {
		return o, err
	}
	o.CompressionName = strings.ToLower(c.String("compression"))
	if o.Compression, err = parseCompression(o.CompressionName); err != nil {
		return o, err
	}
	if c.IsSet("linger") {
		ms := c.Int("linger")
		if ms < 0 || ms > 60_000 {
			return o, fmt.Errorf("--linger must be from 0 to 60000 ms, not %d", ms)
		}
		o.Linger = time.Duration(ms) * time.Millisecond
	}
	o.Rate = c.Float64("rate")
	if c.IsSet("rate") && (o.Rate <= 0 || math.IsInf(o.Rate, 0) || math.IsNaN(o.Rate)) {
		return o, fmt.Errorf("--rate must be a positive number of records per second, not %v", c.Float64("rate"))
	}
	o.DeliveryTimeout = defaultDeliveryTimeout
	return o, nil
}

func runBenchLoad(c *cli.Context, mode bench.Mode) error {
	if err := unexpectedArgs(c, 0, ": name the topic with -t"); err != nil {
		return err
	}
	o, err := benchConfigFrom(c, mode)
	if err != nil {
		return err
	}
	cfg, err := clientConfigFrom(c)
	if err != nil {
		return err
	}
	if o.Baseline {
		if err := checkBaselineDir(o.Dir); err != nil {
			return err
		}
	}
	o.Brokers, o.Timeout = cfg.brokers, cfg.timeout
	o.Dial = func(brokers []string, opts ...kgo.Opt) (*bench.Client, error) {
		k, err := newKafkaClient(clientConfig{brokers: brokers, timeout: cfg.timeout}, nil, opts...)
		if err != nil {
			return nil, err
		}
		return &bench.Client{Kafka: k.cl, Admin: k.adm, Explain: k.explain, TopicError: topicError}, nil
	}
	o.NullServer = func(dir string) (*exec.Cmd, error) {
		self, err := skiffExecutable()
		if err != nil {
			return nil, err
		}
		return exec.Command(self, "bench", "null-server", "--dir", dir), nil
	}
	if isTerminal(c.App.ErrWriter) {
		o.Progress = c.App.ErrWriter
	}
	return bench.Run(c.Context, o, c.App.Writer)
}

// skiffExecutable is the skiff binary that runs the null server: this one (tests,
// which run commands inside the test binary, point it at a built skiff).
var skiffExecutable = os.Executable

func benchBaselineCommand() *cli.Command {
	return &cli.Command{
		Name:      "baseline",
		Usage:     "measure this machine's disk write, loopback TCP and sendfile throughput",
		ArgsUsage: " ",
		Description: `Moves --bytes through each of: sequential 1 MiB writes into a new file in --dir
(page cache, no sync); the same with fdatasync after every 1 MiB; a loopback TCP
stream between two goroutines; that file sent over loopback with sendfile; and
the same file copied over loopback through a 1 MiB buffer. Put --dir on the
filesystem of the brokers' data directory. The file is removed afterwards.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Value: ".", Usage: "write the disk baseline into `DIR`"},
			&cli.Int64Flag{Name: "bytes", Value: defaultBaseBytes, Usage: "move `N` bytes in each measurement"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			if err := unexpectedArgs(c, 0, ": bench baseline takes no arguments"); err != nil {
				return err
			}
			n := c.Int64("bytes")
			if n < bench.BaselineChunk || n > 64<<30 {
				return fmt.Errorf("--bytes must be from %d (1 MiB) to 64 GiB, not %d", bench.BaselineChunk, n)
			}
			if err := checkBaselineDir(c.String("dir")); err != nil {
				return err
			}
			return bench.RunBaseline(c.Context, c.String("dir"), n, c.Bool("json"), c.App.Writer)
		},
	}
}

func checkBaselineDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--dir %s is not a directory", dir)
	}
	return nil
}

func benchNullServerCommand() *cli.Command {
	return &cli.Command{
		Name:   "null-server",
		Usage:  "append produced records to files and serve fetches from them, and nothing else (the baseline of produce and consume --baseline)",
		Hidden: true,
		Description: `Listens on 127.0.0.1 (a port the kernel chooses), prints HOST:PORT on standard
output, and answers ApiVersions, Metadata, CreateTopics, InitProducerId and Produce,
appending produced batches to one file per partition, in a directory it makes in
--dir, without checking or syncing them, and ListOffsets and Fetch from those files.
It stops, removing them, when standard input closes or on SIGTERM. It ignores
SIGINT: a terminal's ^C reaches the whole process group, and the bench that
started it stops it once its load has stopped.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Value: ".", Usage: "append to files in `DIR`"},
		},
		Action: func(c *cli.Context) error {
			if err := unexpectedArgs(c, 0, ": bench null-server takes no arguments"); err != nil {
				return err
			}
			if err := checkBaselineDir(c.String("dir")); err != nil {
				return err
			}
			return bench.ServeNull(c.String("dir"), os.Stdin, c.App.Writer)
		},
	}
}
