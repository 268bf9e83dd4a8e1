package bench

// skiff bench connect: the cost of new connections, dialled, secured (TLS and
// SASL as the client flags say) and answering their first request, as a fleet
// of clients starting at once or reconnecting after a broker restart would.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/client"
)

// ConnectConfig is one run of skiff bench connect.
type ConnectConfig struct {
	Client      client.Config
	Connections int  // how many, in all (default 1000)
	Concurrency int  // how many at once (default 8)
	JSON        bool // print the result as one JSON object
}

// ConnectResult is what a connect run measured.
type ConnectResult struct {
	Security    string  `json:"security"`
	Connections int     `json:"connections"`
	Concurrency int     `json:"concurrency"`
	Failed      int64   `json:"failed"`
	FirstError  string  `json:"first_error,omitempty"`
	Seconds     float64 `json:"seconds"` // for all of them
	PerSecond   float64 `json:"connections_per_sec"`
	// Latency runs from the dial to the answer of the connection's first
	// request (an ApiVersions request, which every client sends first): TCP,
	// TLS handshake, SaslHandshake and the SASL exchange included.
	Latency LatencySummary `json:"latency"`
}

// Connect opens cfg.Connections connections to the first broker, each with a
// client of its own, cfg.Concurrency at a time, and writes what it measured to
// out.
func Connect(ctx context.Context, cfg ConnectConfig, out io.Writer) error {
	if cfg.Connections <= 0 {
		cfg.Connections = 1000
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	var (
		next     atomic.Int64
		failed   atomic.Int64
		firstErr atomic.Pointer[string]
		mu       sync.Mutex
		hist     histogram
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local histogram
			for next.Add(1) <= int64(cfg.Connections) && ctx.Err() == nil {
				d, err := connectOnce(ctx, cfg.Client)
				if err != nil {
					failed.Add(1)
					msg := err.Error()
					firstErr.CompareAndSwap(nil, &msg)
					continue
				}
				local.record(int64(d))
			}
			mu.Lock()
			hist.merge(&local)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	res := ConnectResult{Security: cfg.Client.Protocol(), Connections: cfg.Connections, Concurrency: cfg.Concurrency,
		Failed: failed.Load(), Seconds: elapsed.Seconds(), Latency: hist.summary()}
	res.PerSecond = float64(hist.count()) / elapsed.Seconds()
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	if cfg.JSON {
		return json.NewEncoder(out).Encode(res)
	}
	_, err := fmt.Fprintf(out, "connect      %d connections to %s, %d at a time, %s\n"+
		"total        %.2f s, %.0f connections/s, %d failed%s\n"+
		"latency (ms, dial to first answer)   %s\n",
		res.Connections, cfg.Client.Brokers[0], res.Concurrency, res.Security,
		res.Seconds, res.PerSecond, res.Failed, errorNote(res.FirstError), latencyText(&res.Latency))
	return err
}

func errorNote(s string) string {
	if s == "" {
		return ""
	}
	return " (first: " + s + ")"
}

// connectOnce dials the first broker with a client of its own and returns
// the time to the answer of its first request.
func connectOnce(ctx context.Context, cfg client.Config) (time.Duration, error) {
	cfg.Brokers = cfg.Brokers[:1]
	k, err := client.New(cfg)
	if err != nil {
		return 0, err
	}
	defer k.Close()
	rctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	start := time.Now()
	// Sent to the seed broker itself: the client dials it, runs TLS and SASL,
	// and asks ApiVersions before this request.
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(rctx, k.Kafka()); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
