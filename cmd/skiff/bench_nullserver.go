package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/urfave/cli/v2"

	"skiff/kafkaapi"
)

// nullServerBaseline runs the produce load (the same records or duration, client and
// settings) against a kafkaapi.NullServer: a Kafka server that only appends what it is
// sent to files (one per partition) in --dir. It runs in a process of its own, as a broker does
// (skiff bench null-server). Its throughput is the most this client reaches on
// this machine against a server that does no broker work, so the ratio to it says
// how much of that the broker keeps.
func nullServerBaseline(ctx context.Context, cfg clientConfig, o benchOpts) (baselineRow, error) {
	self, err := skiffExecutable()
	if err != nil {
		return baselineRow{}, fmt.Errorf("null Kafka server: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "bench", "null-server", "--dir", o.dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return baselineRow{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return baselineRow{}, err
	}
	if err := cmd.Start(); err != nil {
		return baselineRow{}, fmt.Errorf("null Kafka server: %w", err)
	}
	defer func() {
		stdin.Close() // it stops when its standard input closes
		cmd.Wait()
	}()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return baselineRow{}, fmt.Errorf("null Kafka server did not start: %w", err)
	}
	cfg.brokers = []string{strings.TrimSpace(addr)}
	o.rf, o.configs = 1, nil
	res, err := runBenchProduce(ctx, cfg, o, nil)
	if err != nil {
		return baselineRow{}, fmt.Errorf("null Kafka server: %w", err)
	}
	if res.Failed > 0 {
		return baselineRow{}, fmt.Errorf("null Kafka server: %d records failed (first error: %s)", res.Failed, res.FirstError)
	}
	return baselineRow{
		Name:     "null_kafka_server",
		Desc:     "same producer, Kafka server that only appends",
		MBPerSec: res.MBPerSec,
		Seconds:  res.Seconds,
	}, nil
}

// skiffExecutable is the skiff binary that runs the null server: this one (tests,
// which run commands inside the test binary, point it at a built skiff).
var skiffExecutable = os.Executable

func benchNullServerCommand() *cli.Command {
	return &cli.Command{
		Name:   "null-server",
		Usage:  "serve produce requests by appending them to files, and nothing else (the baseline of produce --baseline)",
		Hidden: true,
		Description: `Listens on 127.0.0.1 (a port the kernel chooses), prints HOST:PORT on standard
output, and answers ApiVersions, Metadata, CreateTopics, InitProducerId and Produce,
appending produced record bytes to one file per partition, in a directory it makes
in --dir, without checking, indexing or syncing them. It stops, removing them, when
standard input closes.`,
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
			fmt.Fprintln(c.App.Writer, srv.Addr())
			_, err = io.Copy(io.Discard, os.Stdin)
			return errors.Join(err, srv.Close())
		},
	}
}
