package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestResultOutput(t *testing.T) {
	lat := LatencySummary{Count: 10, Mean: 1.5, P50: 1.2, P95: 2, P99: 3, P999: 4, Max: 5}
	r := &Result{Mode: Produce, Topic: "t", Partitions: 6, Producers: 2, Acks: "all",
		Compression: "none", RecordSize: 1024, Records: 1000, Bytes: 1024000, ProduceLatency: &lat}
	r.setElapsed(2e9)
	if r.RecordsPerSec != 500 || r.MBPerSec != 0.512 {
		t.Errorf("rates %v rec/s %v MB/s", r.RecordsPerSec, r.MBPerSec)
	}
	r.ClientCPUSeconds, r.BrokerCPUSeconds = 0.01024, 0.002048
	r.BrokerCPU = []NodeCPU{{HTTP: "a:1", CPUSeconds: 0.001024}, {HTTP: "b:1", CPUSeconds: 0.001024}}
	r.setCPUPerGB()
	if math.Abs(r.ClientCPUSecondsPerGB-10) > 1e-9 || math.Abs(r.BrokerCPUSecondsPerGB-2) > 1e-9 {
		t.Errorf("CPU per GB: client %v, brokers %v; want 10 and 2", r.ClientCPUSecondsPerGB, r.BrokerCPUSecondsPerGB)
	}
	r.setBaseline(&BaselineResult{Dir: "/d", Bytes: 1 << 20, Rows: []BaselineRow{
		{Name: "loopback_tcp", Desc: "loopback TCP", MBPerSec: 1.024, CPUSecondsPerGB: 0.75},
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
		"500 records/s", "0.5 MB/s", "p50 1.20", "p99.9 4.00", "loopback TCP", "ratio 0.500", "franz-go default",
		"0.01 cores) in this process, 10.00 s per GB", "broker CPU   0.00 s (0.00 cores) on 2 nodes, 2.00 s per GB", "0.75 s CPU per GB"} {
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

	// Nodes whose metrics could not be read: the reason instead of the figures.
	r.BrokerCPU, r.BrokerCPUError = nil, "no /metrics"
	text.Reset()
	if err := r.writeText(&text); err != nil || !strings.Contains(text.String(), "broker CPU   not measured: no /metrics") {
		t.Errorf("text without broker CPU (%v):\n%s", err, text.String())
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

// TestResultJSONFields pins the field names of skiff bench --json: scripts
// (scripts/perf) read them, so renaming or dropping one breaks them. A new field
// is added here on purpose.
func TestResultJSONFields(t *testing.T) {
	lat := LatencySummary{Count: 1, Mean: 1, P50: 1, P95: 1, P99: 1, P999: 1, Max: 1}
	linger, lag, gap := int64(5), 1.5, 2.5
	r := &Result{Mode: E2E, Topic: "t", Partitions: 1, Producers: 1, Acks: "all", Compression: "none",
		RecordSize: 8, LingerMs: &linger, Rate: 1, Records: 1, Bytes: 8, Failed: 1, FirstError: "e",
		ClientCPUSeconds: 1, ClientCPUSecondsPerGB: 1, BrokerCPUSeconds: 1, BrokerCPUSecondsPerGB: 1,
		BrokerCPU: []NodeCPU{{HTTP: "h:1", CPUSeconds: 1}}, BrokerCPUError: "e", ProduceLatency: &lat, MaxSendLagMs: &lag, MaxAckGapMs: &gap, MaxAckGapPartition: 2,
		E2ELatency: &lat, Consumed: 1, ConsumeSeconds: 1}
	r.setElapsed(1e9)
	r.setBaseline(&BaselineResult{Dir: "d", Bytes: 1, FdatasyncP50Ms: 1,
		Rows: []BaselineRow{{Name: "loopback_tcp", Desc: "x", MBPerSec: 1, Seconds: 1, CPUSecondsPerGB: 1}}})
	var js bytes.Buffer
	if err := r.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	latency := []string{"count", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "p99_9_ms", "max_ms"}
	want := map[string][]string{
		"": {"mode", "topic", "partitions", "producers", "acks", "compression", "record_size", "linger_ms",
			"target_rate", "security", "records", "bytes", "failed", "first_error", "seconds", "records_per_sec", "mb_per_sec",
			"client_cpu_seconds", "client_cpu_seconds_per_gb", "broker_cpu_seconds", "broker_cpu_seconds_per_gb",
			"broker_cpu", "broker_cpu_error", "produce_latency", "max_send_lag_ms", "max_ack_gap_ms", "max_ack_gap_partition",
			"e2e_latency", "consumed",
			"consume_seconds", "baseline", "ratios"},
		"produce_latency": latency,
		"e2e_latency":     latency,
		"baseline":        {"dir", "bytes", "rows", "fdatasync_p50_ms"},
		"baseline.rows":   {"name", "description", "mb_per_sec", "seconds", "cpu_seconds_per_gb"},
		"broker_cpu":      {"http", "cpu_seconds"},
	}
	got := map[string]any{
		"":                m,
		"produce_latency": m["produce_latency"],
		"e2e_latency":     m["e2e_latency"],
		"baseline":        m["baseline"],
	}
	if nodes, ok := m["broker_cpu"].([]any); ok && len(nodes) == 1 {
		got["broker_cpu"] = nodes[0]
	}
	if b, ok := m["baseline"].(map[string]any); ok {
		if rows, ok := b["rows"].([]any); ok && len(rows) == 1 {
			got["baseline.rows"] = rows[0]
		}
	}
	for path, names := range want {
		obj, ok := got[path].(map[string]any)
		if !ok {
			t.Errorf("%q: not an object in %s", path, js.String())
			continue
		}
		var keys []string
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		names = slices.Sorted(slices.Values(names))
		if !slices.Equal(keys, names) {
			t.Errorf("JSON fields of %q:\n got  %v\n want %v", path, keys, names)
		}
	}
}
