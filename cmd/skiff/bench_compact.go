package main

// skiff bench compact: the log cleaner's throughput against a read+write of the
// same bytes, and produce throughput while it runs against without (package
// bench, compact.go; docs/performance.md).

import (
	"fmt"
	"net"

	"github.com/urfave/cli/v2"

	"skiff/appliance"
	"skiff/bench"
)

func benchCompactCommand() *cli.Command {
	flags := append(clientFlags(),
		&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Value: "bench-compact", Usage: "`PREFIX` of the topics: PREFIX-a and PREFIX-b (compacted), PREFIX-load"},
		&cli.IntFlag{Name: "keys", Value: 100_000, Usage: "`N` keys"},
		&cli.IntFlag{Name: "overwrites", Value: 10, Usage: "write every key `M` times"},
		&cli.IntFlag{Name: "rounds", Value: 3, Usage: "`N` rounds of the produce load with and without cleaning, each on a fresh fill (PREFIX-b, PREFIX-b2, ...)"},
		&cli.IntFlag{Name: "record-size", Aliases: []string{"s"}, Value: 100, Usage: "record value size in `BYTES` (the produce load's too)"},
		&cli.IntFlag{Name: "replication-factor", Aliases: []string{"r"}, Value: -1, Usage: "create the topics with `N` replicas per partition (-1: the broker's default)"},
		&cli.IntFlag{Name: "partitions", Aliases: []string{"p"}, Value: defaultBenchParts, Usage: "partitions of the produce load's topic"},
		&cli.GenericFlag{Name: "config", Value: &configList{}, Usage: "create the produce load's topic with config `KEY=VALUE` (repeat for several)"},
		&cli.StringFlag{Name: "compression", Aliases: []string{"z"}, Value: "none", Usage: "batch compression `CODEC` of every producer: none, gzip, snappy, lz4 or zstd"},
		&cli.StringFlag{Name: "http", Usage: "`HOST:PORT` of the /metrics of the broker leading the topics (default: the first broker's host, port " + appliance.DefaultHTTPPort + ")"},
		&cli.StringFlag{Name: "dir", Value: ".", Usage: "write the read+write baseline's files into `DIR` (put it on the brokers' data filesystem)"},
		&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
	)
	return &cli.Command{
		Name:  "compact",
		Usage: "time one compaction of a topic written over, against a read+write of the same bytes, and produce throughput while it runs",
		Description: `Fills a compacted topic (one partition) with --keys keys written
--overwrites times, all in one segment, then seals it: the broker's log cleaner
compacts it in one pass, timed by the broker's own metrics (--http), and
compared with reading a file of the segment's size and writing a copy in --dir.
Then, --rounds times, it fills another such topic and seals it while producing
to a third topic until that pass ends, and produces about as long without
cleaning (before or after, alternately): the median ratio of the two throughputs
is what cleaning costs producers, beside the CPU the broker, the bench and the
machine used in each window. Finally it reads the first topic from offset 0 and
checks that every key has its final value. Run the broker with
--log-cleaner-backoff 100ms, so that the cleaner starts at once.`,
		ArgsUsage: " ",
		Flags:     flags,
		Action:    runBenchCompact,
	}
}

func runBenchCompact(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": bench compact takes no arguments"); err != nil {
		return err
	}
	cc, err := clientConfigFrom(c)
	if err != nil {
		return err
	}

	rf, p := c.Int("replication-factor"), c.Int("partitions")
	if rf == 0 || rf < -1 || rf > 32767 || p < 1 || p > 1<<20 {
		return fmt.Errorf("--replication-factor must be at least 1 (or -1) and --partitions at least 1, not %d and %d", rf, p)
	}
	cfg := bench.CompactConfig{Keys: c.Int("keys"), Overwrites: c.Int("overwrites"), Rounds: c.Int("rounds"), HTTP: c.String("http"),
		Load: bench.Config{Topic: c.String("topic"), RecordSize: c.Int("record-size"), Dir: c.String("dir"), JSON: c.Bool("json"),
			Producers: 1, Linger: -1, AcksName: "all", CompressionName: c.String("compression"), Client: cc,
			ReplicationFactor: int16(rf), Partitions: int32(p)}}
	if cfg.Load.Configs, err = c.Generic("config").(*configList).configs(); err != nil {
		return err
	}
	if err := cfg.Check(); err != nil {
		return err
	}
	if cfg.HTTP == "" {
		host, _, err := net.SplitHostPort(cc.Brokers[0])
		if err != nil {
			return err
		}
		cfg.HTTP = net.JoinHostPort(host, appliance.DefaultHTTPPort)
	}
	return bench.RunCompact(c.Context, cfg, c.App.Writer)
}
