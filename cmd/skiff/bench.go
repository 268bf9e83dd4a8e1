package main

// skiff bench produce|consume|e2e|baseline: throughput and latency of a Kafka
// cluster measured with franz-go (the same client as the other commands), and
// this machine's own limits measured in the same run, so that every figure can
// be read as a ratio rather than an absolute (docs/performance.md).
//
// Files: bench.go (commands, options, topic set-up, the run), bench_load.go
// (producers and the consumer), bench_report.go (summary, JSON, progress line),
// bench_baseline.go (the machine's limits), bench_hist.go (latency histogram).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

const (
	defaultBenchDuration = 10 * time.Second
	defaultRecordSize    = 1024
	defaultBenchParts    = 6
	// minRecordSize holds the 8-byte send stamp every benchmark record starts with.
	minRecordSize = 8
	maxRecordSize = 64 << 20
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
			benchLoadCommand(benchProduce),
			benchLoadCommand(benchConsume),
			benchLoadCommand(benchE2E),
			benchBaselineCommand(),
			benchNullServerCommand(),
		},
	}
}

// benchMode is what a load command does.
type benchMode string

const (
	benchProduce benchMode = "produce" // producers only
	benchConsume benchMode = "consume" // one consumer reading what is there
	benchE2E     benchMode = "e2e"     // producers and a consumer at once
)

func benchLoadCommand(mode benchMode) *cli.Command {
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
	case benchProduce:
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
	case benchConsume:
		usage = "read a topic from its start and measure throughput"
		desc = `Reads every partition from its log start with one franz-go consumer (no group)
until the end offsets listed at the start, --records or --duration, whichever
comes first. Produce first (skiff bench produce) to have something to read.`
	case benchE2E:
		usage = "produce and consume at once and measure latency from produce to consume"
		desc = `Like produce (same flags), with one consumer reading the new records as they
arrive. End-to-end latency runs from a record's send time (its due time with
--rate), stamped in its first 8 bytes, to its arrival at the consumer. The
producers and the consumer share this machine's CPUs with the brokers.`
	}
	if mode != benchConsume {
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

// benchOpts is what a load command's flags say, checked before any connection.
type benchOpts struct {
	mode        benchMode
	topic       string
	records     int64         // 0: no limit
	duration    time.Duration // 0: no limit
	recordSize  int
	partitions  int32
	rf          int16 // -1: the broker's default
	configs     map[string]*string
	producers   int
	acks        kgo.Acks
	acksName    string
	idempotent  bool
	compression kgo.CompressionCodec
	codecName   string
	linger      time.Duration // -1: franz-go's default
	rate        float64       // records/s in total; 0: as fast as possible
	json        bool
	baseline    bool
	dir         string
}

func benchOptsFrom(c *cli.Context, mode benchMode) (benchOpts, error) {
	o := benchOpts{
		mode:     mode,
		topic:    c.String("topic"),
		records:  c.Int64("records"),
		duration: c.Duration("duration"),
		json:     c.Bool("json"),
		baseline: c.Bool("baseline"),
		dir:      c.String("dir"),
		linger:   -1,
	}
	if o.topic == "" {
		return o, errors.New("missing --topic (-t): name the topic to benchmark")
	}
	switch {
	case c.IsSet("records") && c.IsSet("duration"):
		return o, errors.New("--records and --duration conflict: give one of them")
	case c.IsSet("records") && o.records < 1:
		return o, fmt.Errorf("--records must be at least 1, not %d", o.records)
	case c.IsSet("duration") && o.duration <= 0:
		return o, fmt.Errorf("--duration must be positive, not %v", o.duration)
	case !c.IsSet("records") && !c.IsSet("duration") && mode != benchConsume:
		o.duration = defaultBenchDuration
	}
	if mode == benchConsume {
		return o, nil
	}

	o.recordSize = c.Int("record-size")
	if o.recordSize < minRecordSize || o.recordSize > maxRecordSize {
		return o, fmt.Errorf("--record-size must be from %d (the send stamp) to %d bytes, not %d", minRecordSize, maxRecordSize, o.recordSize)
	}
	p, rf := c.Int("partitions"), c.Int("replication-factor")
	if p < 1 || p > math.MaxInt32 {
		return o, fmt.Errorf("--partitions must be at least 1, not %d", p)
	}
	if rf == 0 || rf < -1 || rf > math.MaxInt16 {
		return o, fmt.Errorf("--replication-factor must be at least 1 (or -1 for the broker's default), not %d", rf)
	}
	o.partitions, o.rf = int32(p), int16(rf)
	var err error
	if o.configs, err = c.Generic("config").(*configList).configs(); err != nil {
		return o, err
	}
	o.producers = c.Int("producers")
	if o.producers < 1 || o.producers > 1024 {
		return o, fmt.Errorf("--producers must be from 1 to 1024, not %d", o.producers)
	}
	o.acksName = strings.ToLower(c.String("acks"))
	switch o.acksName {
	case "all", "-1":
		o.acksName = "all"
	case "1", "leader":
		o.acksName = "1"
	default:
		return o, fmt.Errorf("invalid --acks %q: want all or 1 (latency is measured to the acknowledgement)", c.String("acks"))
	}
	if o.acks, o.idempotent, err = parseAcks(o.acksName); err != nil {
		return o, err
	}
	o.codecName = strings.ToLower(c.String("compression"))
	if o.compression, err = parseCompression(o.codecName); err != nil {
		return o, err
	}
	if c.IsSet("linger") {
		ms := c.Int("linger")
		if ms < 0 || ms > 60_000 {
			return o, fmt.Errorf("--linger must be from 0 to 60000 ms, not %d", ms)
		}
		o.linger = time.Duration(ms) * time.Millisecond
	}
	o.rate = c.Float64("rate")
	if c.IsSet("rate") && (o.rate <= 0 || math.IsInf(o.rate, 0) || math.IsNaN(o.rate)) {
		return o, fmt.Errorf("--rate must be a positive number of records per second, not %v", c.Float64("rate"))
	}
	return o, nil
}

// producerOpts are the franz-go options of one benchmark producer: its defaults
// except where a flag says otherwise.
func (o benchOpts) producerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(o.topic),
		kgo.RequiredAcks(o.acks),
		kgo.ProducerBatchCompression(o.compression),
		kgo.RecordDeliveryTimeout(defaultDeliveryTimeout),
	}
	if !o.idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if o.linger >= 0 {
		opts = append(opts, kgo.ProducerLinger(o.linger))
	}
	return opts
}

func runBenchLoad(c *cli.Context, mode benchMode) error {
	if err := unexpectedArgs(c, 0, ": name the topic with -t"); err != nil {
		return err
	}
	o, err := benchOptsFrom(c, mode)
	if err != nil {
		return err
	}
	cfg, err := clientConfigFrom(c)
	if err != nil {
		return err
	}
	if o.baseline {
		if err := checkBaselineDir(o.dir); err != nil {
			return err
		}
	}
	// The first interrupt stops the load and still prints what was measured.
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var progress *progressLine
	if isTerminal(c.App.ErrWriter) {
		progress = newProgressLine(c.App.ErrWriter)
	}
	// The null server goes first, on the memory the run will have: its files are
	// gone again when the run starts, whereas the run's stay cached afterwards.
	var null *baselineRow
	if o.baseline && mode == benchProduce && o.rate == 0 {
		row, err := nullProduceBaseline(ctx, cfg, o)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		null = &row
	}
	var res *benchResult
	switch mode {
	case benchConsume:
		res, err = runBenchConsume(ctx, cfg, o, progress)
	default:
		res, err = runBenchProduce(ctx, cfg, o, progress)
	}
	if err != nil {
		return err
	}
	// Only now does a consume run know how many records the null server must
	// hold; and its data was written before it, so the null server writes its
	// own after it, on the memory the run had.
	if o.baseline && mode == benchConsume {
		row, err := nullConsumeBaseline(ctx, cfg, o, res)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		null = &row
	}
	if o.baseline {
		syncFilesystems() // what the run left dirty (gigabytes), or the baselines pay for it
		bl, err := measureBaseline(c.Context, o.dir, baselineVolume(res.Bytes), nil)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		if null != nil {
			bl.Rows = append(bl.Rows, *null)
		}
		res.setBaseline(bl)
	}
	if o.json {
		err = res.writeJSON(c.App.Writer)
	} else {
		err = res.writeText(c.App.Writer)
	}
	if err != nil {
		return err
	}
	if res.Failed > 0 {
		return fmt.Errorf("%d of %d records were not acknowledged (first error: %s)", res.Failed, res.Failed+res.Records, res.FirstError)
	}
	return nil
}

// ensureTopic creates the topic unless it exists, then waits until every
// partition has a leader and all its replicas in sync, so that the run does not
// measure a cluster still settling. It returns the partition count.
func ensureTopic(ctx context.Context, k *kafkaClient, o benchOpts) (int32, error) {
	cctx, cancel := k.requestCtx(ctx)
	rs, err := k.adm.CreateTopics(cctx, o.partitions, o.rf, o.configs, o.topic)
	cancel()
	if err != nil {
		return 0, fmt.Errorf("create topic %q: %w", o.topic, k.explain(err))
	}
	if r, ok := rs[o.topic]; ok && r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("create topic %q: %w%s", o.topic, r.Err, brokerSays(r.ErrMessage))
	}
	deadline := time.Now().Add(k.cfg.timeout)
	for {
		n, ready, err := topicSettled(ctx, k, o.topic)
		switch {
		case err != nil:
			return 0, err
		case ready:
			return n, nil
		case time.Now().After(deadline):
			return 0, fmt.Errorf("topic %q: partitions still without a leader or with replicas out of sync after %v (raise --timeout to wait longer)", o.topic, k.cfg.timeout)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond): // polling the cluster's state
		}
	}
}

// topicSettled reports the topic's partition count and whether each partition
// has a leader and every replica in its ISR.
func topicSettled(ctx context.Context, k *kafkaClient, topic string) (int32, bool, error) {
	ctx, cancel := k.requestCtx(ctx)
	defer cancel()
	tds, err := k.adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, false, fmt.Errorf("look up topic %q: %w", topic, k.explain(err))
	}
	td, ok := tds[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) || errors.Is(td.Err, kerr.LeaderNotAvailable) {
		return 0, false, nil // just created: not known everywhere yet
	}
	if td.Err != nil {
		return 0, false, topicError(topic, td.Err)
	}
	if len(td.Partitions) == 0 {
		return 0, false, nil
	}
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
			return 0, false, nil
		}
	}
	return int32(len(td.Partitions)), true, nil
}
