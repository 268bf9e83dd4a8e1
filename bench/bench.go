// Package bench is the implementation of skiff bench: throughput and latency of a
// Kafka cluster measured with franz-go (the same client as the other commands), and
// this machine's own limits measured in the same run, so that every figure can be
// read as a ratio rather than an absolute (docs/performance.md). cmd/skiff turns the
// command's flags into a Config and calls Run, RunBaseline or ServeNull.
//
// Files: bench.go (the run, topic set-up), load.go (producers and the consumer),
// report.go (summary, JSON, progress line), brokercpu.go (the nodes' CPU over a
// run), baseline.go and receiver.go (the machine's limits, the bare receivers),
// hist.go (latency histogram), nullserver.go and nullserver_fetch.go (a Kafka
// server that does no broker work), nullbaseline.go (the load against it, in a
// process of its own).
//
// It is a client of the broker like any other: it imports kafkaapi only for the
// null server's request decoder and response writers.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/client"
)

// Mode is what a load run does.
type Mode string

const (
	Produce Mode = "produce" // producers only
	Consume Mode = "consume" // one consumer reading what is there
	E2E     Mode = "e2e"     // producers and a consumer at once
)

// MinRecordSize holds the 8-byte send stamp every benchmark record starts with.
const MinRecordSize = 8

// Config is one load run, as skiff bench's flags give it (checked there).
type Config struct {
	Mode     Mode
	Topic    string
	Records  int64         // stop after this many; 0: no limit
	Duration time.Duration // stop after this long; 0: no limit

	// Produce and e2e: the topic is created with Partitions, ReplicationFactor
	// (-1: the broker's default) and Configs unless it exists; Producers clients
	// each produce RecordSize-byte records.
	RecordSize        int
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]*string
	Producers         int
	Acks              kgo.Acks
	AcksName          string // "all" or "1", as reported
	Idempotent        bool
	Compression       kgo.CompressionCodec
	CompressionName   string        // as reported
	Linger            time.Duration // -1: franz-go's default
	Rate              float64       // records/s in total; 0: as fast as possible
	DeliveryTimeout   time.Duration // of each record
	// TransactionalID, when set (produce mode), makes producer i transactional
	// with id TransactionalID-i, committing a transaction every TxnRecords
	// records; the same run first measures idempotent producers with the same
	// settings, and the result gives the ratio.
	TransactionalID string
	TxnRecords      int
	// TxnRounds (with TransactionalID; 0 or 1: one) splits the three runs
	// into that many rounds, the order alternating (txn_rounds.go).
	TxnRounds int
	// flushEvery > 0 (set by runTransactional, not a flag) makes the
	// idempotent producers Flush every flushEvery records: a transaction's
	// cadence without the transaction.
	flushEvery int
	// ReadCommitted makes consumers read at isolation read_committed (default
	// read_uncommitted, franz-go's).
	ReadCommitted bool

	// JSON prints the result as one JSON object instead of text.
	JSON bool
	// Baseline also measures this machine's limits, writing the disk baseline and
	// the null server's files in Dir, and reports ratios; the bare replication
	// row only for produce and e2e into a replicated topic, after a warm-up of
	// BaselineWarmUp bytes before each of its pairs of runs (0: the default,
	// BaselineOptions.WarmUp).
	Baseline       bool
	Dir            string
	BaselineWarmUp int64

	// Metrics are the /metrics addresses (HOST:PORT) of the nodes whose CPU the
	// run reports; when empty, each broker of the cluster's metadata at its host
	// and MetricsPort.
	Metrics     []string
	MetricsPort string
	// serverPID, when set, is a process on this machine whose CPU the run
	// reports as the brokers' (the null server's).
	serverPID int

	// Client is how the run's Kafka clients reach the cluster; its Timeout also
	// bounds each round of requests and each wait for progress.
	Client client.Config
	// NullServer is the command that runs a null server (ServeNull) in a process
	// of its own, with its files in dir.
	NullServer func(dir string) (*exec.Cmd, error)
	// Progress, when set, gets a progress line rewritten every second (a terminal).
	Progress io.Writer
}

// Run runs the load cfg describes and prints its result to out; with
// cfg.Baseline, the machine's limits measured in the same run beside it. The first
// interrupt (SIGINT, SIGTERM) stops the load, and what was measured is still
// printed. Records that were not acknowledged are an error, after the result.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	loadCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var progress *progressLine
	if cfg.Progress != nil {
		progress = newProgressLine(cfg.Progress)
	}
	// The null server goes first, on the memory the run will have: its files are
	// gone again when the run starts, whereas the run's stay cached afterwards.
	var null *BaselineRow
	if cfg.Baseline && cfg.Mode == Produce && cfg.Rate == 0 {
		row, err := nullProduceBaseline(loadCtx, cfg)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		null = &row
	}
	var res *Result
	var err error
	switch {
	case cfg.Mode == Consume:
		res, err = runConsume(loadCtx, cfg, progress)
	case cfg.TransactionalID != "" && cfg.Mode == Produce:
		res, err = runTransactional(loadCtx, cfg, progress)
	default:
		res, err = runProduce(loadCtx, cfg, progress)
	}
	if err != nil {
		return err
	}
	// Only now does a consume run know how many records the null server must
	// hold; and its data was written before it, so the null server writes its
	// own after it, on the memory the run had.
	if cfg.Baseline && cfg.Mode == Consume {
		row, err := nullConsumeBaseline(loadCtx, cfg, res)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		null = &row
	}
	if cfg.Baseline {
		syncFilesystems() // what the run left dirty (gigabytes), or the baselines pay for it
		bl, err := MeasureBaseline(ctx, cfg.Dir, baselineVolume(res.Bytes), cfg.baselineOptions(res), nil)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		if null != nil {
			bl.Rows = append(bl.Rows, *null)
		}
		res.setBaseline(bl)
	}
	if cfg.JSON {
		err = res.writeJSON(out)
	} else {
		err = res.writeText(out)
	}
	if err != nil {
		return err
	}
	if res.Failed > 0 {
		return fmt.Errorf("%d of %d records were not acknowledged (first error: %s)", res.Failed, res.Failed+res.Records, res.FirstError)
	}
	return nil
}

// baselineOptions are what the baseline beside run measures: the bare
// replication only where the run is compared with it, a produce into a topic
// of more than one replica.
func (cfg Config) baselineOptions(run *Result) BaselineOptions {
	return BaselineOptions{Replication: cfg.Mode != Consume && run.ReplicationFactor > 1, WarmUp: cfg.BaselineWarmUp}
}

// producerOpts are the franz-go options of benchmark producer i: its defaults
// except where a flag says otherwise.
func (cfg Config) producerOpts(i int) []kgo.Opt {
	opts := cfg.baseProducerOpts()
	if cfg.TransactionalID != "" {
		opts = append(opts, kgo.TransactionalID(fmt.Sprintf("%s-%d", cfg.TransactionalID, i)))
	}
	return opts
}

func (cfg Config) baseProducerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RequiredAcks(cfg.Acks),
		kgo.ProducerBatchCompression(cfg.Compression),
		kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout),
	}
	if !cfg.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if cfg.Linger >= 0 {
		opts = append(opts, kgo.ProducerLinger(cfg.Linger))
	}
	return opts
}

// ensureTopic creates the topic unless it exists, then waits until every
// partition has a leader and all its replicas in sync, so that the run does not
// measure a cluster still settling. It returns the partition count and the
// replication factor (the most replicas of any partition).
func ensureTopic(ctx context.Context, k *client.Client, cfg Config) (int32, int, error) {
	cctx, cancel := k.RequestCtx(ctx)
	rs, err := k.Admin().CreateTopics(cctx, cfg.Partitions, cfg.ReplicationFactor, cfg.Configs, cfg.Topic)
	cancel()
	if err != nil {
		return 0, 0, fmt.Errorf("create topic %q: %w", cfg.Topic, k.Explain(err))
	}
	if r, ok := rs[cfg.Topic]; ok && r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		return 0, 0, fmt.Errorf("create topic %q: %w%s", cfg.Topic, r.Err, brokerSays(r.ErrMessage))
	}
	deadline := time.Now().Add(cfg.Client.Timeout)
	for {
		n, rf, ready, err := topicSettled(ctx, k, cfg.Topic)
		switch {
		case err != nil:
			return 0, 0, err
		case ready:
			return n, rf, nil
		case time.Now().After(deadline):
			return 0, 0, fmt.Errorf("topic %q: partitions still without a leader or with replicas out of sync after %v (raise --timeout to wait longer)", cfg.Topic, cfg.Client.Timeout)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(100 * time.Millisecond): // polling the cluster's state
		}
	}
}

func brokerSays(msg string) string {
	if msg == "" {
		return ""
	}
	return " (broker says: " + msg + ")"
}

// topicSettled reports the topic's partition count, its replication factor (the
// most replicas of any partition) and whether each partition has a leader and
// every replica in its ISR.
func topicSettled(ctx context.Context, k *client.Client, topic string) (int32, int, bool, error) {
	td, err := describeTopic(ctx, k, topic)
	switch {
	case err != nil:
		return 0, 0, false, err
	case errors.Is(td.Err, kerr.UnknownTopicOrPartition) || errors.Is(td.Err, kerr.LeaderNotAvailable):
		return 0, 0, false, nil // just created: not known everywhere yet
	case td.Err != nil:
		return 0, 0, false, client.TopicError(topic, td.Err)
	case len(td.Partitions) == 0:
		return 0, 0, false, nil
	}
	rf := 0
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
			return 0, 0, false, nil
		}
		rf = max(rf, len(p.Replicas))
	}
	return int32(len(td.Partitions)), rf, true, nil
}

// describeTopic looks topic up with a metadata request, never creating it; a
// topic the broker does not describe has UNKNOWN_TOPIC_OR_PARTITION.
func describeTopic(ctx context.Context, k *client.Client, topic string) (kadm.TopicDetail, error) {
	ctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	tds, err := k.Admin().ListTopics(ctx, topic)
	if err != nil {
		return kadm.TopicDetail{}, fmt.Errorf("look up topic %q: %w", topic, k.Explain(err))
	}
	td, ok := tds[topic]
	if !ok {
		td.Err = kerr.UnknownTopicOrPartition
	}
	return td, nil
}
