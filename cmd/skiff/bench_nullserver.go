package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"skiff/kafkaapi"
)

// A null-server baseline runs the same load (the same records or duration, client
// and settings) against a kafkaapi.NullServer: a Kafka server that only appends
// what it is sent to files (one per partition) in --dir and sends them back. It
// runs in a process of its own, as a broker does (skiff bench null-server). Its
// throughput is the most this client reaches on this machine against a server
// that does no broker work, so the ratio to it says how much of that the broker
// keeps.

// nullProduceBaseline is the produce load against a null server.
func nullProduceBaseline(ctx context.Context, cfg clientConfig, o benchOpts) (baselineRow, error) {
	addr, stop, err := startNullServer(o.dir)
	if err != nil {
		return baselineRow{}, err
	}
	defer stop()
	cfg.brokers = []string{addr}
	o.rf, o.configs = 1, nil
	res, err := produceAllAcked(ctx, cfg, o)
	if err != nil {
		return baselineRow{}, fmt.Errorf("null Kafka server: %w", err)
	}
	return nullServerRow("same producer, Kafka server that only appends", res), nil
}

// nullConsumeBaseline fills a null server with as many records as run read, of
// its average size, in as many partitions, with franz-go's producer defaults,
// writes them back to disk, and then reads them with the consume load.
func nullConsumeBaseline(ctx context.Context, cfg clientConfig, o benchOpts, run *benchResult) (baselineRow, error) {
	if run.Records == 0 {
		return baselineRow{}, errors.New("null Kafka server: the run read no records")
	}
	addr, stop, err := startNullServer(o.dir)
	if err != nil {
		return baselineRow{}, err
	}
	defer stop()
	cfg.brokers = []string{addr}
	fill := benchOpts{mode: benchProduce, topic: o.topic, records: run.Records,
		recordSize: max(int(run.Bytes/run.Records), minRecordSize), partitions: max(run.Partitions, 1),
		rf: 1, producers: 1, acks: kgo.AllISRAcks(), acksName: "all", idempotent: true,
		compression: kgo.NoCompression(), codecName: "none", linger: -1}
	if _, err := produceAllAcked(ctx, cfg, fill); err != nil {
		return baselineRow{}, fmt.Errorf("null Kafka server: fill: %w", err)
	}
	syncFilesystems() // as the broker's data is, not dirty
	res, err := runBenchConsume(ctx, cfg, o, nil)
	if err != nil {
		return baselineRow{}, fmt.Errorf("null Kafka server: %w", err)
	}
	return nullServerRow("same consumer, Kafka server that only sends its files", res), nil
}

// produceAllAcked runs a produce load with no progress line; a record that was
// not acknowledged is an error.
func produceAllAcked(ctx context.Context, cfg clientConfig, o benchOpts) (*benchResult, error) {
	res, err := runBenchProduce(ctx, cfg, o, nil)
	if err == nil && res.Failed > 0 {
		err = fmt.Errorf("%d records failed (first error: %s)", res.Failed, res.FirstError)
	}
	return res, err
}

// nullServerRow is a null server's result as a baseline row.
func nullServerRow(desc string, res *benchResult) baselineRow {
	return baselineRow{Name: "null_kafka_server", Desc: desc, MBPerSec: res.MBPerSec, Seconds: res.Seconds}
}

// startNullServer starts skiff bench null-server with its files in dir and
// returns its address and a function that stops it.
func startNullServer(dir string) (addr string, stop func(), err error) {
	self, err := skiffExecutable()
	if err != nil {
		return "", nil, fmt.Errorf("null Kafka server: %w", err)
	}
	// Not stopped by ctx with a kill: it removes its files when its standard
	// input closes, which stop does when the load has stopped.
	cmd := exec.Command(self, "bench", "null-server", "--dir", dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("null Kafka server: %w", err)
	}
	stop = func() {
		stdin.Close() // it stops when its standard input closes
		cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("null Kafka server did not start: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// skiffExecutable is the skiff binary that runs the null server: this one (tests,
// which run commands inside the test binary, point it at a built skiff).
var skiffExecutable = os.Executable

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
			srv, err := kafkaapi.StartNullServer(c.String("dir"))
			if err != nil {
				return err
			}
			signal.Ignore(os.Interrupt)
			term := make(chan os.Signal, 1)
			signal.Notify(term, syscall.SIGTERM)
			fmt.Fprintln(c.App.Writer, srv.Addr())
			eof := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, os.Stdin)
				eof <- err
			}()
			select {
			case err = <-eof:
			case <-term:
			}
			return errors.Join(err, srv.Close())
		},
	}
}
