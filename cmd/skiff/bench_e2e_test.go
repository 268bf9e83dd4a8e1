package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/bench"
	"skiff/internal/testnode"
)

// benchJSON runs a bench command with --json and decodes its result.
func benchJSON(t *testing.T, args ...string) bench.Result {
	t.Helper()
	out := skiffOK(t, nil, append(args, "--json")...)
	var r bench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("skiff %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return r
}

// TestBenchE2E runs every bench mode against a real broker and checks that the
// counts add up: what produce acknowledged, consume reads, and every timed record
// has a latency.
func TestBenchE2E(t *testing.T) {
	b := e2eBrokers(t)
	topic := uniqueTopic("bench")

	p := benchJSON(t, "bench", "produce", "-b", b, "-t", topic, "--records", "3000", "--partitions", "3", "--record-size", "100")
	if p.Mode != bench.Produce || p.Records != 3000 || p.Failed != 0 || p.Bytes != 300_000 || p.Partitions != 3 {
		t.Fatalf("produce: %+v", p)
	}
	if p.ProduceLatency == nil || p.ProduceLatency.Count != 3000 || p.ProduceLatency.P50 <= 0 ||
		p.ProduceLatency.Max < p.ProduceLatency.P99 || p.RecordsPerSec <= 0 || p.E2ELatency != nil {
		t.Fatalf("produce latency: %+v %+v", p.ProduceLatency, p)
	}

	// Consume reads everything: the timed records and 2 warm-up records per partition.
	c := benchJSON(t, "bench", "consume", "-b", b, "-t", topic)
	if c.Records != 3006 || c.Bytes != 300_600 || c.Partitions != 3 || c.MBPerSec <= 0 {
		t.Fatalf("consume: %+v", c)
	}
	c = benchJSON(t, "bench", "consume", "-b", b, "-t", topic, "-n", "100")
	if c.Records != 100 || c.Bytes != 10_000 {
		t.Fatalf("consume -n 100 read %d", c.Records)
	}

	// e2e at a fixed rate: 1000 records due over 0.2 s, all consumed and timed.
	e := benchJSON(t, "bench", "e2e", "-b", b, "-t", topic, "--records", "1000", "--rate", "5000")
	if e.Records != 1000 || e.Consumed != 1000 || e.E2ELatency == nil || e.E2ELatency.Count != 1000 ||
		e.ProduceLatency == nil || e.ProduceLatency.Count != 1000 || e.Rate != 5000 || e.MaxSendLagMs == nil {
		t.Fatalf("e2e: %+v", e)
	}
	// No fault: no partition waited longer than the slowest acknowledgement.
	if e.MaxAckGapMs == nil || *e.MaxAckGapMs <= 0 || *e.MaxAckGapMs > e.ProduceLatency.Max {
		t.Errorf("e2e: longest ack gap %v ms, want above 0 and at most the max produce latency %v ms", e.MaxAckGapMs, e.ProduceLatency.Max)
	}
	if e.Seconds < 0.19 {
		t.Errorf("1000 records at 5000/s took %.3f s, want at least 0.2", e.Seconds)
	}
	if e.E2ELatency.P50 < e.ProduceLatency.P50/10 {
		t.Errorf("e2e p50 %v ms far below produce p50 %v ms", e.E2ELatency.P50, e.ProduceLatency.P50)
	}

	// Several producers, acks=1, compression, linger, and the baseline beside it,
	// the null Kafka server's run included.
	skiffExecutable = func() (string, error) { return testnode.Binary(t), nil }
	t.Cleanup(func() { skiffExecutable = os.Executable })
	dir := t.TempDir()
	r := benchJSON(t, "bench", "produce", "-b", b, "-t", uniqueTopic("bench2"), "--records", "1001", "-k", "2",
		"--acks", "1", "-z", "lz4", "--linger", "0", "--baseline", "--dir", dir)
	if r.Records != 1001 || r.Producers != 2 || r.Acks != "1" || r.Compression != "lz4" || r.LingerMs == nil || *r.LingerMs != 0 {
		t.Fatalf("produce -k 2: %+v", r)
	}
	// One node: RF 1, and no bare replication row to compare with.
	if r.Baseline == nil || len(r.Baseline.Rows) != 8 || r.Ratios["loopback_tcp"] <= 0 || r.Ratios["fdatasync_write"] <= 0 ||
		r.Ratios["null_kafka_server"] <= 0 || r.ReplicationFactor != 1 || hasRow(r.Baseline, "bare_replication") ||
		r.Baseline.BareReplicationRatio != 0 || r.Baseline.BareReplicationRatios != nil {
		t.Fatalf("baseline: %+v ratios %v", r.Baseline, r.Ratios)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("the baselines left %v in --dir", left)
	}

	// Text output with the baseline.
	out := skiffOK(t, nil, "bench", "produce", "-b", b, "-t", topic, "--records", "200", "--baseline", "--dir", dir)
	mustContain(t, "produce text", out, "200 acknowledged, 0 failed", "produce latency (ms, send to ack)", "ratio", "loopback TCP",
		"Kafka server that only appends")

	// consume --baseline reads as many records from a null Kafka server.
	c = benchJSON(t, "bench", "consume", "-b", b, "-t", topic, "--baseline", "--dir", dir)
	if c.Records != 3006+1000+2*3+200+2*3 || c.Baseline == nil || len(c.Baseline.Rows) != 8 || c.Ratios["null_kafka_server"] <= 0 ||
		hasRow(c.Baseline, "bare_replication") || c.Baseline.BareReplicationRatio != 0 {
		t.Fatalf("consume --baseline: %d records, baseline %+v ratios %v", c.Records, c.Baseline, c.Ratios)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("the consume baselines left %v in --dir", left)
	}

	// An empty topic and a missing one are refused with a hint.
	empty := uniqueTopic("bench-empty")
	skiffOK(t, nil, "topic", "create", empty, "-b", b)
	mustContain(t, "empty", skiffErr(t, nil, "bench", "consume", "-b", b, "-t", empty), "is empty", "skiff bench produce")
	mustContain(t, "missing", skiffErr(t, nil, "bench", "consume", "-b", b, "-t", uniqueTopic("nope")), "does not exist")
}

func hasRow(b *bench.BaselineResult, name string) bool {
	for _, row := range b.Rows {
		if row.Name == name {
			return true
		}
	}
	return false
}

// TestBenchBaselineRF3: produce --baseline into a topic of three replicas has
// the bare replication row, the floor it is compared with, and its ratio;
// consume --baseline of the same topic does not.
func TestBenchBaselineRF3(t *testing.T) {
	nodes := testnode.StartCluster(t, 3)
	skiffExecutable = func() (string, error) { return testnode.Binary(t), nil }
	t.Cleanup(func() { skiffExecutable = os.Executable })
	dir := t.TempDir()
	topic := uniqueTopic("bench-rf3")
	p := benchJSON(t, "bench", "produce", "-b", nodes[0].Addr, "-t", topic, "--records", "2000", "-r", "3", "--partitions", "2",
		"--baseline", "--dir", dir, "--warm-up", "2097152")
	if p.Records != 2000 || p.ReplicationFactor != 3 || p.Baseline == nil || len(p.Baseline.Rows) != 9 || !hasRow(p.Baseline, "bare_replication") ||
		p.Baseline.BareReplicationRatio <= 0 || len(p.Baseline.BareReplicationRatios) != 3 || p.Ratios["bare_replication"] <= 0 {
		t.Fatalf("produce RF 3: RF %d, baseline %+v ratios %v", p.ReplicationFactor, p.Baseline, p.Ratios)
	}
	c := benchJSON(t, "bench", "consume", "-b", nodes[0].Addr, "-t", topic, "--baseline", "--dir", dir)
	if c.Baseline == nil || hasRow(c.Baseline, "bare_replication") || c.Baseline.BareReplicationRatio != 0 {
		t.Fatalf("consume: baseline %+v", c.Baseline)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("the baselines left %v in --dir", left)
	}
}

// TestBenchBrokerCPU: produce and consume report the node's CPU over the run,
// read from its /metrics (--http), and per GB beside the client's; a node whose
// metrics cannot be read leaves the figures out with the reason, and the run
// still succeeds.
func TestBenchBrokerCPU(t *testing.T) {
	n := testnode.Start(t)
	topic := uniqueTopic("bench-cpu")
	p := benchJSON(t, "bench", "produce", "-b", n.Addr, "-t", topic, "--records", "50000", "--partitions", "2", "--http", n.HTTPAddr)
	c := benchJSON(t, "bench", "consume", "-b", n.Addr, "-t", topic, "--http", n.HTTPAddr)
	for _, r := range []bench.Result{p, c} {
		if r.BrokerCPUError != "" || len(r.BrokerCPU) != 1 || r.BrokerCPU[0].HTTP != n.HTTPAddr || r.BrokerCPUSeconds <= 0 ||
			r.BrokerCPU[0].CPUSeconds != r.BrokerCPUSeconds || r.BrokerCPUSecondsPerGB <= 0 || r.ClientCPUSecondsPerGB <= 0 {
			t.Fatalf("%s: broker CPU %+v %v s (%v s per GB, error %q), client %v s per GB", r.Mode, r.BrokerCPU,
				r.BrokerCPUSeconds, r.BrokerCPUSecondsPerGB, r.BrokerCPUError, r.ClientCPUSecondsPerGB)
		}
		perGB := r.BrokerCPUSeconds / (float64(r.Bytes) / 1e9)
		if d := r.BrokerCPUSecondsPerGB - perGB; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: %v s per GB, want %v", r.Mode, r.BrokerCPUSecondsPerGB, perGB)
		}
	}
	out := skiffOK(t, nil, "bench", "produce", "-b", n.Addr, "-t", topic, "--records", "100", "--http", n.HTTPAddr)
	mustContain(t, "text", out, "broker CPU", "on 1 node", "s per GB")

	// A closed port: no figures, the reason, and the load's result all the same.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	r := benchJSON(t, "bench", "produce", "-b", n.Addr, "-t", topic, "--records", "100", "--http", closed)
	if r.Records != 100 || r.BrokerCPUError == "" || r.BrokerCPU != nil || r.BrokerCPUSecondsPerGB != 0 {
		t.Errorf("unreadable metrics: %+v", r)
	}
}

// TestNullServerProcess: skiff bench null-server ignores SIGINT (a terminal's ^C
// reaches the whole process group, and the bench stops it when its load has
// stopped), and on the end of its standard input or on SIGTERM stops and removes
// its files.
func TestNullServerProcess(t *testing.T) {
	bin := testnode.Binary(t)
	for _, stopBy := range []string{"stdin", "SIGTERM"} {
		dir := t.TempDir()
		cmd := exec.Command(bin, "bench", "null-server", "--dir", dir)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("null server: %v", err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.TrimSpace(line)), kgo.DefaultProduceTopic("t"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after SIGINT")}).FirstErr(); err != nil {
			t.Fatalf("produce after SIGINT: %v", err)
		}
		cancel()
		cl.Close()
		if files, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(files) != 1 {
			t.Fatalf("files %v, want the partition's", files)
		}
		if stopBy == "stdin" {
			stdin.Close()
		} else if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("stopped by %s: %v", stopBy, err)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
			t.Errorf("stopped by %s, it left %v", stopBy, left)
		}
	}
}

// TestBenchTransactional: --transactional-id runs idempotent producers, the
// same flushing every --txn-records, then transactional ones committing every
// --txn-records, and reports the ratios; the topic then holds the three runs'
// records, which read_committed consumers read too.
func TestBenchTransactional(t *testing.T) {
	b := e2eBrokers(t)
	topic := uniqueTopic("bench-txn")
	p := benchJSON(t, "bench", "produce", "-b", b, "-t", topic, "--records", "2000", "--partitions", "2", "--record-size", "100",
		"--transactional-id", topic, "--txn-records", "100")
	if p.Records != 2000 || p.Failed != 0 || p.Transactional == nil || p.Transactional.Transactions != 20 ||
		p.Transactional.TxnRecords != 100 || p.Transactional.IdempotentRecordsPerSec <= 0 || p.Transactional.Ratio <= 0 {
		t.Fatalf("transactional produce: %d records, %d failed; %+v", p.Records, p.Failed, p.Transactional)
	}
	if tx := p.Transactional; tx.FlushedRecordsPerSec <= 0 || tx.FlushedRatio <= 0 {
		t.Fatalf("flushed baseline missing: %+v", tx)
	}
	// Each committed transaction (not the warm-up's) is timed in every phase,
	// and each Flush of the flushed run (every 100 records).
	for name, s := range map[string]*bench.LatencySummary{"txn_buffer": p.Transactional.BufferLatency,
		"txn_flush": p.Transactional.FlushLatency, "txn_end": p.Transactional.EndLatency,
		"flushed_flush": p.Transactional.FlushedFlushLatency} {
		if s == nil || s.Count != 20 || s.P50 <= 0 {
			t.Fatalf("%s: %+v, want 20 transactions timed", name, s)
		}
	}
	// The three runs: 2000 records each plus 2 warm-up records per partition each.
	for _, iso := range []string{"read_uncommitted", "read_committed"} {
		if c := benchJSON(t, "bench", "consume", "-b", b, "-t", topic, "--isolation", iso); c.Records != 6012 {
			t.Fatalf("consume --isolation %s read %d records, want 6012", iso, c.Records)
		}
	}
	mustContain(t, "txn-records 0", skiffErr(t, nil, "bench", "produce", "-b", b, "-t", topic, "--transactional-id", "x", "--txn-records", "0"), "at least 1")
}

// TestBenchTransactionalRounds: with --rounds each of the three runs is split
// into that many parts, run in rounds of alternating order; the totals are
// those of one run each, and each round's ratios are given.
func TestBenchTransactionalRounds(t *testing.T) {
	b := e2eBrokers(t)
	topic := uniqueTopic("bench-txn-rounds")
	p := benchJSON(t, "bench", "produce", "-b", b, "-t", topic, "--records", "3000", "--partitions", "2", "--record-size", "100",
		"--transactional-id", topic, "--txn-records", "100", "--rounds", "3")
	tx := p.Transactional
	if p.Records != 3000 || p.Failed != 0 || tx == nil || tx.Transactions != 30 || tx.Rounds != 3 ||
		len(tx.RoundRatios) != 3 || len(tx.RoundFlushedRatios) != 3 || tx.Ratio <= 0 || tx.FlushedRatio <= 0 {
		t.Fatalf("transactional produce in rounds: %d records, %d failed; %+v", p.Records, p.Failed, tx)
	}
	for i := range 3 {
		if tx.RoundRatios[i] <= 0 || tx.RoundFlushedRatios[i] <= 0 {
			t.Fatalf("round %d: ratio %v, flushed ratio %v", i+1, tx.RoundRatios[i], tx.RoundFlushedRatios[i])
		}
	}
	for name, s := range map[string]*bench.LatencySummary{"txn_flush": tx.FlushLatency, "flushed_flush": tx.FlushedFlushLatency,
		"produce_latency": p.ProduceLatency} {
		if s == nil || s.P50 <= 0 {
			t.Fatalf("%s: %+v", name, s)
		}
	}
	if tx.FlushLatency.Count != 30 || tx.FlushedFlushLatency.Count != 30 || p.ProduceLatency.Count != 3000 {
		t.Fatalf("latencies of one round only? txn_flush %d, flushed_flush %d, produce %d; want 30, 30, 3000",
			tx.FlushLatency.Count, tx.FlushedFlushLatency.Count, p.ProduceLatency.Count)
	}
	// Nine runs of 1000 records, each after 2 warm-up records per partition.
	if c := benchJSON(t, "bench", "consume", "-b", b, "-t", topic, "--isolation", "read_committed"); c.Records != 9036 {
		t.Fatalf("consume read %d records, want 9036", c.Records)
	}
	out := skiffOK(t, nil, "bench", "produce", "-b", b, "-t", topic, "--records", "400", "--partitions", "2", "--record-size", "100",
		"--transactional-id", topic, "--txn-records", "100", "--rounds", "2")
	mustContain(t, "text report", out, "rounds       2, the order alternating; ratio per round ")
}

// TestBenchCompact runs skiff bench compact against a broker whose cleaner looks
// for work every 100 ms: one pass compacts the written-over topic (timed by the
// broker's metrics, with its baseline), reading the segment once for its key map
// and then little more than the batches it keeps (the others are dropped from
// their headers), the produce load runs with and without cleaning, and the
// compacted topic holds every key at its final value.
func TestBenchCompact(t *testing.T) {
	n := testnode.Start(t, "--log-cleaner-backoff", "100ms")
	out := skiffOK(t, nil, "bench", "compact", "-b", n.Addr, "--http", n.HTTPAddr, "--dir", t.TempDir(),
		"--keys", "20000", "--overwrites", "5", "--rounds", "2", "--json")
	var r bench.CompactResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Records != 100_000 || r.KeysRead != 20_000 || r.RecordsRead != 20_000 || r.SegmentBytes < 100_000*100 ||
		r.CleanSeconds <= 0 || r.CleanRead < r.SegmentBytes || r.CleanRead > r.SegmentBytes*3/2 || r.CleanWritten > r.SegmentBytes/3 ||
		r.ReadWriteSeconds <= 0 || r.CleanRatio <= 0 || r.Security != "PLAINTEXT" || r.ProduceAloneMBPerSec <= 0 || r.ProduceCleaningMBPerSec <= 0 || r.LoadSeconds <= 0 ||
		len(r.Rounds) != 2 || r.ProduceRatioMin > r.ProduceRatio || r.ProduceRatio > r.ProduceRatioMax {
		t.Fatalf("bench compact: %+v", r)
	}
	// Each round has both windows, alternating which came first, and the
	// broker's CPU from its metrics.
	for i, rd := range r.Rounds {
		if rd.CleaningFirst != (i == 0) || rd.AloneMBPerSec <= 0 || rd.CleaningMBPerSec <= 0 || rd.CleanBusySeconds <= 0 ||
			rd.CleaningCPU.Broker <= 0 || rd.AloneCPU.Broker <= 0 || rd.CleaningCPU.MachineBusy <= 0 || rd.Ratio <= 0 {
			t.Fatalf("bench compact: round %d: %+v", i+1, rd)
		}
	}
	t.Logf("%s", out)
}

// TestBenchE2EFrozenBroker: bench e2e reports availability for a run with a fault.
// The only broker is frozen (SIGSTOP) for 3 s while records are due every 2 ms:
// the longest time a partition went without an acknowledgement covers the freeze,
// and nothing fails.
func TestBenchE2EFrozenBroker(t *testing.T) {
	n := testnode.Start(t)
	const freeze = 3 * time.Second
	frozen := make(chan error, 1)
	go func() {
		time.Sleep(2500 * time.Millisecond) // the run is producing by then
		if err := n.Signal(syscall.SIGSTOP); err != nil {
			frozen <- err
			return
		}
		time.Sleep(freeze) // the fault lasts this long
		frozen <- n.Signal(syscall.SIGCONT)
	}()
	e := benchJSON(t, "bench", "e2e", "-b", n.Addr, "-t", uniqueTopic("bench-frozen"), "--duration", "8s", "--rate", "500", "--partitions", "2")
	if err := <-frozen; err != nil {
		t.Fatal(err)
	}
	if e.Failed != 0 || e.Records == 0 || e.Consumed != e.Records {
		t.Fatalf("e2e across a freeze: %d records, %d failed, %d consumed", e.Records, e.Failed, e.Consumed)
	}
	if e.MaxAckGapMs == nil || *e.MaxAckGapMs < float64(freeze.Milliseconds())-100 || *e.MaxAckGapMs > 2*float64(freeze.Milliseconds()) {
		t.Errorf("e2e across a %v freeze: longest ack gap %v ms, want about the freeze", freeze, e.MaxAckGapMs)
	}
	t.Logf("longest ack gap %.0f ms on partition %d across a %v freeze", *e.MaxAckGapMs, e.MaxAckGapPartition, freeze)
}
