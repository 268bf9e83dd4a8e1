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
	"time"

	"github.com/urfave/cli/v2"

	"skiff/appliance"
	"skiff/bench"
)

const (
	defaultBenchDuration = 10 * time.Second
	defaultRecordSize    = 1024
	defaultBenchParts    = 6
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
not the absolute. Their baseline has the bare replication row only for produce
and e2e into a topic of more than one replica, the floor to compare those with:
its three pairs of runs each write four times the row's bytes (at most 1 GiB),
after a warm-up file of the row's bytes, at most 256 MiB (--warm-up asks for
more). produce, consume and e2e also print the CPU the client and the brokers
(each node's process_cpu_seconds_total, read from its /metrics before and after:
--http) used, per GB of record values.
docs/performance.md has the targets and how to reproduce them.`,
		Subcommands: []*cli.Command{
			benchLoadCommand(bench.Produce),
			benchLoadCommand(bench.Consume),
			benchLoadCommand(bench.E2E),
			benchBaselineCommand(),
			benchCompactCommand(),
			benchConnectCommand(),
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
		&cli.StringSliceFlag{Name: "http", Usage: "`HOST:PORT` of a node's /metrics, whose CPU the run reports (repeat for each node; default: each broker's host, port " + appliance.DefaultHTTPPort + ")"},
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
			warmUpFlag(),
		)
	}
	if mode == bench.Produce {
		flags = append(flags,
			&cli.StringFlag{Name: "transactional-id", Usage: "produce in transactions as `ID`-0, ID-1, ... (one per producer), after idempotent runs of the same settings (streaming, then flushing every --txn-records), and print the ratios"},
			&cli.IntFlag{Name: "txn-records", Value: 1000, Usage: "with --transactional-id: commit a transaction every `N` records"},
			&cli.IntFlag{Name: "rounds", Value: 1, Usage: "with --transactional-id: split each of the three runs into `R` parts, run in rounds whose order alternates, and print the ratios of the totals (--duration and --records are each run's in all)"},
		)
	}
	if mode == bench.Consume {
		flags = append(flags,
			&cli.StringFlag{Name: "isolation", Value: "read_uncommitted", Usage: "`LEVEL`: read_uncommitted (franz-go's default) or read_committed"},
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
	cfg := bench.Config{
		Mode:     mode,
		Topic:    c.String("topic"),
		Records:  c.Int64("records"),
		Duration: c.Duration("duration"),
		JSON:     c.Bool("json"),
		Baseline: c.Bool("baseline"),
		Dir:      c.String("dir"),
		Linger:   -1,

		Metrics:     c.StringSlice("http"),
		MetricsPort: appliance.DefaultHTTPPort,
	}
	if cfg.Topic == "" {
		return cfg, errors.New("missing --topic (-t): name the topic to benchmark")
	}
	switch {
	case c.IsSet("records") && c.IsSet("duration"):
		return cfg, errors.New("--records and --duration conflict: give one of them")
	case c.IsSet("records") && cfg.Records < 1:
		return cfg, fmt.Errorf("--records must be at least 1, not %d", cfg.Records)
	case c.IsSet("duration") && cfg.Duration <= 0:
		return cfg, fmt.Errorf("--duration must be positive, not %v", cfg.Duration)
	case !c.IsSet("records") && !c.IsSet("duration") && mode != bench.Consume:
		cfg.Duration = defaultBenchDuration
	}
	if mode == bench.Consume {
		switch iso := c.String("isolation"); iso {
		case "read_uncommitted", "":
		case "read_committed":
			cfg.ReadCommitted = true
		default:
			return cfg, fmt.Errorf("invalid --isolation %q: want read_committed or read_uncommitted", iso)
		}
		return cfg, nil
	}
	if mode == bench.Produce && c.IsSet("rounds") && !c.IsSet("transactional-id") {
		return cfg, errors.New("--rounds is for the transactional comparison: it needs --transactional-id")
	}
	if mode == bench.Produce && c.IsSet("transactional-id") {
		cfg.TransactionalID, cfg.TxnRecords, cfg.TxnRounds = c.String("transactional-id"), c.Int("txn-records"), c.Int("rounds")
		if cfg.TransactionalID == "" {
			return cfg, errors.New("--transactional-id must not be empty")
		}
		if cfg.TxnRounds < 1 {
			return cfg, fmt.Errorf("--rounds must be from 1 to 100, not %d", cfg.TxnRounds)
		}
	}
	p, rf := c.Int("partitions"), c.Int("replication-factor")
	if p < 1 || p > math.MaxInt32 {
		return cfg, fmt.Errorf("--partitions must be at least 1, not %d", p)
	}
	if rf == 0 || rf < -1 || rf > math.MaxInt16 {
		return cfg, fmt.Errorf("--replication-factor must be at least 1 (or -1 for the broker's default), not %d", rf)
	}
	cfg.Partitions, cfg.ReplicationFactor = int32(p), int16(rf)
	var err error
	if cfg.Configs, err = c.Generic("config").(*configList).configs(); err != nil {
		return cfg, err
	}
	cfg.RecordSize, cfg.Producers = c.Int("record-size"), c.Int("producers")
	cfg.AcksName, cfg.CompressionName = c.String("acks"), c.String("compression")
	if c.IsSet("linger") {
		cfg.Linger = time.Duration(c.Int("linger")) * time.Millisecond
	}
	cfg.Rate = c.Float64("rate")
	if c.IsSet("rate") && (cfg.Rate <= 0 || math.IsInf(cfg.Rate, 0) || math.IsNaN(cfg.Rate)) {
		return cfg, fmt.Errorf("--rate must be a positive number of records per second, not %v", c.Float64("rate"))
	}
	if c.IsSet("warm-up") {
		if cfg.BaselineWarmUp = c.Int64("warm-up"); cfg.BaselineWarmUp == 0 {
			return cfg, bench.CheckWarmUp(0)
		}
	}
	return cfg, cfg.Check()
}

// warmUpFlag sets the file written and removed before each pair of bare
// replication runs (bench.BaselineOptions.WarmUp).
func warmUpFlag() cli.Flag {
	return &cli.Int64Flag{Name: "warm-up", DefaultText: "the runs' bytes, at most 256 MiB",
		Usage: "with the bare replication row: write and remove `N` bytes in --dir before each of its 3 pairs of runs"}
}

func runBenchLoad(c *cli.Context, mode bench.Mode) error {
	if err := unexpectedArgs(c, 0, ": name the topic with -t"); err != nil {
		return err
	}
	cfg, err := benchConfigFrom(c, mode)
	if err != nil {
		return err
	}
	if cfg.Client, err = clientConfigFrom(c); err != nil {
		return err
	}
	if cfg.Baseline {
		if err := bench.CheckDir(cfg.Dir); err != nil {
			return err
		}
	}
	cfg.NullServer = func(dir string) (*exec.Cmd, error) {
		self, err := skiffExecutable()
		if err != nil {
			return nil, err
		}
		return exec.Command(self, "bench", "null-server", "--dir", dir), nil
	}
	if isTerminal(c.App.ErrWriter) {
		cfg.Progress = c.App.ErrWriter
	}
	return bench.Run(c.Context, cfg, c.App.Writer)
}

// skiffExecutable is the skiff binary that runs the null server: this one (tests,
// which run commands inside the test binary, point it at a built skiff).
var skiffExecutable = os.Executable

func benchBaselineCommand() *cli.Command {
	return &cli.Command{
		Name:      "baseline",
		Usage:     "measure this machine's disk write, loopback TCP, bare receiver and sendfile throughput and CPU per GB",
		ArgsUsage: " ",
		Description: `Moves --bytes through each of: sequential 1 MiB writes into a new file in --dir
(page cache, no sync); the same with fdatasync after every 1 MiB; a loopback TCP
stream between two goroutines; that stream received into a file in --dir with
read+write through a 1 MiB buffer, and with splice (Linux), the bare receivers;
bare replication, the floor of RF 3 on one machine: that stream received into a
file by a leader that sends each write's bytes with sendfile to two followers over
loopback, each reading them into a file of its own (three runs of at most 1 GiB,
each after a run of the read+write receiver, and the median of the ratios of the
pairs' CPU per GB; before each pair a file of the runs' bytes, at most 256 MiB
unless --warm-up says otherwise, is written and removed, so that both runs write
into pages the kernel has just freed);
the first file sent over loopback with sendfile; and the same file copied over
loopback through a 1 MiB buffer. Rows print the CPU time of the thread doing the
measured side's work (writer, receiver, sender; the leader's and followers'
threads together for bare replication) per GB (10^9 bytes). Put --dir on
the filesystem of the brokers' data directory. The files are removed afterwards.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Value: ".", Usage: "write the disk baseline into `DIR`"},
			&cli.Int64Flag{Name: "bytes", Value: defaultBaseBytes, Usage: "move `N` bytes in each measurement"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
			warmUpFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := unexpectedArgs(c, 0, ": bench baseline takes no arguments"); err != nil {
				return err
			}
			n, warm := c.Int64("bytes"), c.Int64("warm-up")
			if err := bench.CheckBaselineBytes(n); err != nil {
				return err
			}
			if c.IsSet("warm-up") {
				if err := bench.CheckWarmUp(warm); err != nil {
					return err
				}
			}
			if err := bench.CheckDir(c.String("dir")); err != nil {
				return err
			}
			opts := bench.BaselineOptions{Replication: true, WarmUp: warm}
			return bench.RunBaseline(c.Context, c.String("dir"), n, opts, c.Bool("json"), c.App.Writer)
		},
	}
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
			if err := bench.CheckDir(c.String("dir")); err != nil {
				return err
			}
			return bench.ServeNull(c.String("dir"), os.Stdin, c.App.Writer)
		},
	}
}

func benchConnectCommand() *cli.Command {
	return &cli.Command{
		Name:  "connect",
		Usage: "open many new connections and measure how long each takes to be served (TLS and SASL included)",
		Description: `Opens --connections connections to the first broker, --concurrency at a time, each
with a client of its own that dials, runs TLS and SASL as the client flags say
(--tls, --sasl-mechanism, ...) and sends ApiVersions. Reports the total time, the
connections per second and the latency of each, from the dial to the first answer.
Run it once without the security flags against a PLAINTEXT listener for the
baseline.`,
		ArgsUsage: " ",
		Flags: append(clientFlags(),
			&cli.IntFlag{Name: "connections", Aliases: []string{"n"}, Value: 1000, Usage: "`N` connections in all"},
			&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Value: 8, Usage: "`C` connections being opened at once"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
		),
		Action: func(c *cli.Context) error {
			if err := unexpectedArgs(c, 0, ""); err != nil {
				return err
			}
			cc, err := clientConfigFrom(c)
			if err != nil {
				return err
			}
			if c.Int("connections") <= 0 || c.Int("concurrency") <= 0 {
				return fmt.Errorf("--connections and --concurrency must be positive")
			}
			return bench.Connect(c.Context, bench.ConnectConfig{Client: cc, Connections: c.Int("connections"),
				Concurrency: c.Int("concurrency"), JSON: c.Bool("json")}, c.App.Writer)
		},
	}
}
