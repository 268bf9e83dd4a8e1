package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A null-server baseline runs the same load (the same records or duration, client
// and settings) against a NullServer: a Kafka server that only appends what it is
// sent to files (one per partition) in --dir and sends them back. It runs in a
// process of its own, as a broker does (Config.NullServer, which runs ServeNull).
// Its throughput is the most this client reaches on this machine against a server
// that does no broker work, so the ratio to it says how much of that the broker
// keeps.

// nullProduceBaseline is the produce load against a null server.
func nullProduceBaseline(ctx context.Context, cfg Config) (BaselineRow, error) {
	addr, pid, stop, err := spawnNullServer(cfg)
	if err != nil {
		return BaselineRow{}, err
	}
	defer stop()
	cfg.Client.Brokers = []string{addr}
	cfg.serverPID = pid // its CPU stands for the brokers'
	cfg.ReplicationFactor, cfg.Configs = 1, nil
	res, err := produceAllAcked(ctx, cfg)
	if err != nil {
		return BaselineRow{}, fmt.Errorf("null Kafka server: %w", err)
	}
	return nullServerRow("same producer, Kafka server that only appends", res), nil
}

// nullConsumeBaseline fills a null server with as many records as run read, of
// its average size, in as many partitions, with franz-go's producer defaults,
// writes them back to disk, and then reads them with the consume load.
func nullConsumeBaseline(ctx context.Context, cfg Config, run *Result) (BaselineRow, error) {
	if run.Records == 0 {
		return BaselineRow{}, errors.New("null Kafka server: the run read no records")
	}
	addr, pid, stop, err := spawnNullServer(cfg)
	if err != nil {
		return BaselineRow{}, err
	}
	defer stop()
	cfg.Client.Brokers = []string{addr}
	cfg.serverPID = pid // its CPU stands for the brokers'
	fill := cfg
	fill.Mode, fill.Records, fill.Duration = Produce, run.Records, 0
	fill.RecordSize, fill.Partitions = max(int(run.Bytes/run.Records), MinRecordSize), max(run.Partitions, 1)
	fill.ReplicationFactor, fill.Configs, fill.Producers = 1, nil, 1
	fill.Acks, fill.AcksName, fill.Idempotent = kgo.AllISRAcks(), "all", true
	fill.Compression, fill.CompressionName, fill.Linger, fill.Rate = kgo.NoCompression(), "none", -1, 0
	if _, err := produceAllAcked(ctx, fill); err != nil {
		return BaselineRow{}, fmt.Errorf("null Kafka server: fill: %w", err)
	}
	syncFilesystems() // as the broker's data is, not dirty
	res, err := runConsume(ctx, cfg, nil)
	if err != nil {
		return BaselineRow{}, fmt.Errorf("null Kafka server: %w", err)
	}
	return nullServerRow("same consumer, Kafka server that only sends its files", res), nil
}

// produceAllAcked runs a produce load with no progress line; a record that was
// not acknowledged is an error.
func produceAllAcked(ctx context.Context, cfg Config) (*Result, error) {
	res, err := runProduce(ctx, cfg, nil)
	if err == nil && res.Failed > 0 {
		err = fmt.Errorf("%d records failed (first error: %s)", res.Failed, res.FirstError)
	}
	return res, err
}

// nullServerRow is a null server's result as a baseline row.
func nullServerRow(desc string, res *Result) BaselineRow {
	return BaselineRow{Name: "null_kafka_server", Desc: desc, MBPerSec: res.MBPerSec, Seconds: res.Seconds,
		CPUSecondsPerGB: res.BrokerCPUSecondsPerGB}
}

// spawnNullServer starts cfg.NullServer with its files in cfg.Dir and returns its
// address, its process id and a function that stops it.
func spawnNullServer(cfg Config) (addr string, pid int, stop func(), err error) {
	// Not stopped by ctx with a kill: it removes its files when its standard
	// input closes, which stop does when the load has stopped.
	cmd, err := cfg.NullServer(cfg.Dir)
	if err != nil {
		return "", 0, nil, fmt.Errorf("null Kafka server: %w", err)
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", 0, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, fmt.Errorf("null Kafka server: %w", err)
	}
	stop = func() {
		stdin.Close() // it stops when its standard input closes
		cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", 0, nil, fmt.Errorf("null Kafka server did not start: %w", err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid, stop, nil
}

// ServeNull is the null server's process (skiff bench null-server): it starts a
// NullServer with its files in dir, prints its HOST:PORT on stdout, and stops,
// removing them, when stdin ends or on SIGTERM. It ignores SIGINT: a terminal's ^C
// reaches the whole process group, and the run that started it stops it once its
// load has stopped.
func ServeNull(dir string, stdin io.Reader, stdout io.Writer) error {
	srv, err := StartNullServer(dir)
	if err != nil {
		return err
	}
	signal.Ignore(os.Interrupt)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	fmt.Fprintln(stdout, srv.Addr())
	eof := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, stdin)
		eof <- err
	}()
	select {
	case err = <-eof:
	case <-term:
	}
	return errors.Join(err, srv.Close())
}
