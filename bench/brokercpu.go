package bench

// The brokers' CPU over a run: each node's process_cpu_seconds_total, read from
// its /metrics before and after, so that it works for nodes on other machines
// too. Divided by the GB of record values the run moved, it is the broker's cost
// per GB, the figure a deployment with its clients elsewhere is bound by.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"skiff/client"
)

// NodeCPU is one node's CPU time over a run.
type NodeCPU struct {
	HTTP       string  `json:"http"` // the /metrics address it was read from
	CPUSeconds float64 `json:"cpu_seconds"`
}

// brokerMeter reads the nodes' CPU counters.
type brokerMeter struct {
	addrs []string
	pid   int // instead of addrs: a process on this machine (the null server)
}

// newBrokerMeter is a meter of cfg.Metrics, or when that is empty, of each
// broker in the cluster's metadata at its host and cfg.MetricsPort.
func newBrokerMeter(ctx context.Context, k *client.Client, cfg Config) (*brokerMeter, error) {
	if cfg.serverPID > 0 {
		return &brokerMeter{addrs: []string{fmt.Sprintf("pid %d", cfg.serverPID)}, pid: cfg.serverPID}, nil
	}
	if len(cfg.Metrics) > 0 {
		return &brokerMeter{addrs: cfg.Metrics}, nil
	}
	if cfg.MetricsPort == "" {
		return nil, errors.New("no /metrics address of the brokers (--http)")
	}
	rctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	md, err := k.Admin().BrokerMetadata(rctx)
	if err != nil {
		return nil, fmt.Errorf("list the brokers: %w", k.Explain(err))
	}
	m := &brokerMeter{}
	seen := map[string]bool{}
	for _, b := range md.Brokers {
		addr := net.JoinHostPort(b.Host, cfg.MetricsPort)
		if seen[addr] {
			return nil, fmt.Errorf("several brokers on host %s: give each one's /metrics address with --http", b.Host)
		}
		seen[addr] = true
		m.addrs = append(m.addrs, addr)
	}
	return m, nil
}

// read returns each node's process_cpu_seconds_total, in the order of m.addrs.
func (m *brokerMeter) read(ctx context.Context) ([]float64, error) {
	if m.pid > 0 {
		d, err := processCPU(m.pid)
		return []float64{d.Seconds()}, err
	}
	cpu := make([]float64, len(m.addrs))
	for i, addr := range m.addrs {
		series, err := scrapeMetrics(ctx, addr, "process_cpu_seconds_total")
		if err != nil {
			return nil, err
		}
		v, ok := series["process_cpu_seconds_total"]
		if !ok {
			return nil, fmt.Errorf("the metrics at %s have no process_cpu_seconds_total", addr)
		}
		cpu[i] = v
	}
	return cpu, nil
}

// brokerWindow is the meter's reading at the start of a run, or why there is none.
type brokerWindow struct {
	m     *brokerMeter
	start []float64
	err   error
}

// startBrokerWindow reads the nodes' CPU at the start of a run; a node that cannot
// be read leaves the run without broker CPU, and the result says why.
func startBrokerWindow(ctx context.Context, k *client.Client, cfg Config) *brokerWindow {
	w := &brokerWindow{}
	if w.m, w.err = newBrokerMeter(ctx, k, cfg); w.err == nil {
		w.start, w.err = w.m.read(ctx)
	}
	return w
}

// end reads the nodes' CPU again and sets the result's broker CPU fields.
func (w *brokerWindow) end(ctx context.Context, res *Result) {
	var end []float64
	if w.err == nil {
		end, w.err = w.m.read(ctx)
	}
	if w.err != nil {
		res.BrokerCPUError = w.err.Error()
		return
	}
	for i, addr := range w.m.addrs {
		d := end[i] - w.start[i]
		res.BrokerCPU = append(res.BrokerCPU, NodeCPU{HTTP: addr, CPUSeconds: d})
		res.BrokerCPUSeconds += d
	}
	res.setCPUPerGB()
}

// scrapeMetrics reads a node's /metrics and returns the series named in names
// (unlabelled ones, as name value lines).
func scrapeMetrics(ctx context.Context, addr string, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("broker metrics (--http): %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("broker metrics at %s: %s", addr, resp.Status)
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	got := make(map[string]float64, len(names))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("broker metrics at %s: %s %q", addr, name, v)
		}
		got[name] = f
	}
	return got, sc.Err()
}
