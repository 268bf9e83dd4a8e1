package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
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

func TestBenchOptsDefaults(t *testing.T) {
	var got benchOpts
	app := newApp()
	cmd := benchLoadCommand(benchProduce)
	cmd.Action = func(c *cli.Context) error {
		var err error
		got, err = benchOptsFrom(c, benchProduce)
		return err
	}
	app.Commands = []*cli.Command{{Name: "bench", Subcommands: []*cli.Command{cmd}}}
	if err := app.Run([]string{"skiff", "bench", "produce", "-t", "x"}); err != nil {
		t.Fatal(err)
	}
	if got.duration != defaultBenchDuration || got.records != 0 || got.recordSize != 1024 || got.partitions != 6 ||
		got.producers != 1 || got.acksName != "all" || !got.idempotent || got.linger != -1 || got.rate != 0 {
		t.Errorf("defaults: %+v", got)
	}
	// franz-go's own defaults stay in force unless a flag is given: no linger option.
	if n := len(got.producerOpts()); n != 4 {
		t.Errorf("%d producer options, want 4 (topic, acks, compression, delivery timeout)", n)
	}
}

func TestBaselineSmall(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runApp(nil, "bench", "baseline", "--dir", dir, "--bytes", "4194304", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res baselineResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []string{"page_cache_write", "loopback_tcp", "sendfile_loopback", "copy_loopback", "fdatasync_write"}
	if res.Bytes != 4<<20 || len(res.Rows) != len(want) || res.FdatasyncP50Ms <= 0 {
		t.Fatalf("baseline %+v", res)
	}
	for i, row := range res.Rows {
		if row.Name != want[i] || row.MBPerSec <= 0 || row.Seconds <= 0 {
			t.Errorf("row %d: %+v, want %s with a rate", i, row, want[i])
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("baseline left files in --dir: %v %v", ents, err)
	}

	text, _, err := runApp(nil, "bench", "baseline", "--dir", dir, "--bytes", "1048576")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"page-cache write", "loopback TCP", "sendfile", "copy", "fdatasync", "MB/s"} {
		if !strings.Contains(text, w) {
			t.Errorf("text output lacks %q:\n%s", w, text)
		}
	}
}

func TestBaselineVolume(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{{0, 64 << 20}, {100 << 20, 100 << 20}, {10 << 30, 4 << 30}} {
		if got := baselineVolume(tc.in); got != tc.want {
			t.Errorf("baselineVolume(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestBenchResultOutput(t *testing.T) {
	lat := latencySummary{Count: 10, Mean: 1.5, P50: 1.2, P95: 2, P99: 3, P999: 4, Max: 5}
	r := &benchResult{Mode: benchProduce, Topic: "t", Partitions: 6, Producers: 2, Acks: "all",
		Compression: "none", RecordSize: 1024, Records: 1000, Bytes: 1024000, ProduceLatency: &lat}
	r.setElapsed(2e9)
	if r.RecordsPerSec != 500 || r.MBPerSec != 0.512 {
		t.Errorf("rates %v rec/s %v MB/s", r.RecordsPerSec, r.MBPerSec)
	}
	r.setBaseline(&baselineResult{Dir: "/d", Bytes: 1 << 20, Rows: []baselineRow{
		{Name: "loopback_tcp", Desc: "loopback TCP", MBPerSec: 1.024},
		{Name: "broken", Desc: "nothing measured"},
	}})
	if r.Ratios["loopback_tcp"] != 0.5 {
		t.Errorf("ratio %v, want 0.5", r.Ratios["loopback_tcp"])
	}
	if _, ok := r.Ratios["broken"]; ok {
		t.Error("ratio against a zero baseline")
	}
	var text bytes.Buffer
	if err := r.writeText(&text); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"produce  topic t, 6 partitions, 2 producers, acks=all", "1000 acknowledged, 0 failed, in 2.00 s",
		"500 records/s", "0.5 MB/s", "p50 1.20", "p99.9 4.00", "loopback TCP", "ratio 0.500", "franz-go default"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil || strings.Count(js.String(), "\n") != 1 {
		t.Fatalf("not one JSON object on one line: %v\n%s", err, js.String())
	}
	for _, k := range []string{"records_per_sec", "mb_per_sec", "produce_latency", "baseline", "ratios"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, js.String())
		}
	}
	if _, ok := m["e2e_latency"]; ok {
		t.Error("produce JSON has e2e_latency")
	}
}

func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	p := newProgressLine(&b)
	p.clear()
	if b.Len() != 0 {
		t.Errorf("clear of an unused line wrote %q", b.String())
	}
	p.set("one")
	p.set("two")
	p.clear()
	if got, want := b.String(), "\r\033[Kone\r\033[Ktwo\r\033[K"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}
