package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"skiff/bench"
	"skiff/client"
)

// Bad flags are refused before any connection (the broker address is unused).
func TestBenchFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "produce"}, "missing --topic"},
		{[]string{"bench", "produce", "-t", "x", "--records", "10", "--duration", "1s"}, "conflict"},
		{[]string{"bench", "produce", "-t", "x", "--records", "0"}, "--records must be at least 1"},
		{[]string{"bench", "produce", "-t", "x", "--duration", "-1s"}, "--duration must be positive"},
		{[]string{"bench", "produce", "-t", "x", "--record-size", "7"}, "--record-size must be from 8"},
		{[]string{"bench", "produce", "-t", "x", "--partitions", "0"}, "--partitions must be at least 1"},
		{[]string{"bench", "produce", "-t", "x", "-r", "0"}, "--replication-factor"},
		{[]string{"bench", "produce", "-t", "x", "--producers", "0"}, "--producers must be from 1"},
		{[]string{"bench", "produce", "-t", "x", "--acks", "0"}, "invalid --acks"},
		{[]string{"bench", "e2e", "-t", "x", "--compression", "brotli"}, "invalid --compression"},
		{[]string{"bench", "e2e", "-t", "x", "--linger", "-1"}, "--linger must be from 0"},
		{[]string{"bench", "produce", "-t", "x", "--rate", "0"}, "--rate must be a positive"},
		{[]string{"bench", "produce", "-t", "x", "--config", "novalue"}, "KEY=VALUE"},
		{[]string{"bench", "produce", "-t", "x", "--baseline", "--dir", "/nonexistent-skiff"}, "--dir"},
		{[]string{"bench", "consume", "-t", "x", "--rate", "10"}, "flag provided but not defined"},
		{[]string{"bench", "produce", "-t", "x", "extra"}, "unexpected argument"},
		{[]string{"bench", "baseline", "--bytes", "1000"}, "--bytes must be from"},
		{[]string{"bench", "baseline", "--warm-up", "1000"}, "--warm-up must be from"},
		{[]string{"bench", "produce", "-t", "x", "--baseline", "--warm-up", "0"}, "--warm-up must be from"},
		{[]string{"bench", "produce", "-t", "x", "--warm-up", "2097152"}, "needs --baseline"},
		{[]string{"bench", "consume", "-t", "x", "--baseline", "--warm-up", "2097152"}, "flag provided but not defined"},
		{[]string{"bench", "compact", "--keys", "0"}, "--keys and --overwrites must be at least 1"},
		{[]string{"bench", "compact", "--rounds", "0"}, "--rounds must be from 1"},
		{[]string{"bench", "compact", "--record-size", "2097152"}, "--record-size must be from 8 to 1048576"},
		{[]string{"bench", "compact", "--keys", "10000000", "--overwrites", "100"}, "do not fit in one segment"},
		{[]string{"bench", "compact", "-r", "0"}, "--replication-factor must be at least 1"},
		{[]string{"bench", "compact", "--compression", "brotli"}, "invalid --compression"},
		{[]string{"bench", "compact", "--dir", "/nonexistent-skiff"}, "--dir"},
		{[]string{"bench", "produce", "-t", "x", "--transactional-id", "t", "--txn-records", "0"}, "--txn-records must be at least 1"},
		{[]string{"bench", "produce", "-t", "x", "--transactional-id", "t", "--rate", "5"}, "--rate does not apply"},
		{[]string{"bench", "produce", "-t", "x", "--rounds", "2"}, "needs --transactional-id"},
		{[]string{"bench", "produce", "-t", "x", "--transactional-id", "t", "--rounds", "0"}, "--rounds must be from 1 to 100"},
		{[]string{"bench", "produce", "-t", "x", "--transactional-id", "t", "--rounds", "101"}, "--rounds must be from 1 to 100"},
		{[]string{"bench", "produce", "-t", "x", "--transactional-id", "t", "--rounds", "3", "--records", "2"}, "--records 2 is fewer than --rounds × --producers (3 × 1)"},
		{[]string{"bench", "consume", "-t", "x", "--rounds", "2"}, "flag provided but not defined"},
	} {
		args := tc.args
		if args[1] != "baseline" {
			args = append(args, "-b", "127.0.0.1:1")
		}
		_, _, err := runApp(nil, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("skiff %s: error %v, want it to contain %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestBenchConfigDefaults(t *testing.T) {
	var got bench.Config
	app := newApp()
	cmd := benchLoadCommand(bench.Produce)
	cmd.Action = func(c *cli.Context) error {
		var err error
		got, err = benchConfigFrom(c, bench.Produce)
		return err
	}
	app.Commands = []*cli.Command{{Name: "bench", Subcommands: []*cli.Command{cmd}}}
	if err := app.Run([]string{"skiff", "bench", "produce", "-t", "x"}); err != nil {
		t.Fatal(err)
	}
	if got.Duration != defaultBenchDuration || got.Records != 0 || got.RecordSize != 1024 || got.Partitions != 6 ||
		got.Producers != 1 || got.AcksName != "all" || !got.Idempotent || got.Linger != -1 || got.Rate != 0 ||
		got.DeliveryTimeout != client.DefaultDeliveryTimeout || got.BaselineWarmUp != 0 {
		t.Errorf("defaults: %+v", got)
	}
	if err := app.Run([]string{"skiff", "bench", "produce", "-t", "x", "--baseline", "--warm-up", "8388608"}); err != nil {
		t.Fatal(err)
	}
	if !got.Baseline || got.BaselineWarmUp != 8<<20 {
		t.Errorf("--warm-up 8388608: %+v", got)
	}
}

func TestBaselineSmall(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runApp(nil, "bench", "baseline", "--dir", dir, "--bytes", "4194304", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res bench.BaselineResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []string{"page_cache_write", "loopback_tcp", "bare_receiver_read_write", "bare_receiver_splice",
		"bare_replication", "sendfile_loopback", "copy_loopback", "fdatasync_write"}
	if res.Bytes != 4<<20 || len(res.Rows) != len(want) || res.FdatasyncP50Ms <= 0 || res.BareReplicationRatio <= 0 {
		t.Fatalf("baseline %+v", res)
	}
	for i, row := range res.Rows {
		if row.Name != want[i] || row.MBPerSec <= 0 || row.Seconds <= 0 {
			t.Errorf("row %d: %+v, want %s with a rate", i, row, want[i])
		}
		// Every row but the plain stream says what its working thread cost.
		if measured := row.Name != "loopback_tcp"; measured != (row.CPUSecondsPerGB > 0) {
			t.Errorf("row %s: %v s CPU per GB", row.Name, row.CPUSecondsPerGB)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("baseline left files in --dir: %v %v", ents, err)
	}

	text, _, err := runApp(nil, "bench", "baseline", "--dir", dir, "--bytes", "1048576")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"page-cache write", "loopback TCP", "bare receiver", "splice", "bare replication", "read+write receiver's",
		"sendfile", "copy", "fdatasync", "MB/s", "s CPU per GB"} {
		if !strings.Contains(text, w) {
			t.Errorf("text output lacks %q:\n%s", w, text)
		}
	}
}
