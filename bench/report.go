package bench

// What a run prints: the summary (text or one JSON object) and, on a
// terminal, a progress line rewritten every second.

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Result is one run's outcome; its JSON form is what --json prints, and scripts
// read its field names (scripts/perf): they must not change.
type Result struct {
	Mode        Mode    `json:"mode"`
	Topic       string  `json:"topic"`
	Partitions  int32   `json:"partitions"`
	Producers   int     `json:"producers,omitempty"`
	Acks        string  `json:"acks,omitempty"`
	Compression string  `json:"compression,omitempty"`
	RecordSize  int     `json:"record_size,omitempty"`
	LingerMs    *int64  `json:"linger_ms,omitempty"` // nil: franz-go's default
	Rate        float64 `json:"target_rate,omitempty"`
	// Security is the clients' security.protocol (and SASL mechanism).
	Security string `json:"security"`
	// ReplicationFactor is the produced topic's (produce, e2e): the most
	// replicas of any of its partitions.
	ReplicationFactor int `json:"replication_factor,omitempty"`

	// Records and Bytes (record values and keys) are acknowledged (produce, e2e)
	// or read (consume); Failed were not acknowledged.
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"`
	Failed        int64   `json:"failed"`
	FirstError    string  `json:"first_error,omitempty"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
	// ClientCPUSeconds is the CPU time this process (producers and consumer)
	// used during the run: on a small machine it is taken from the brokers.
	ClientCPUSeconds float64 `json:"client_cpu_seconds,omitempty"`
	// ClientCPUSecondsPerGB is ClientCPUSeconds per 10^9 bytes of Bytes.
	ClientCPUSecondsPerGB float64 `json:"client_cpu_seconds_per_gb,omitempty"`
	// BrokerCPUSeconds is the CPU time the nodes (BrokerCPU, each read from its
	// process_cpu_seconds_total before and after the run) used in all during the
	// run, and BrokerCPUSecondsPerGB that per 10^9 bytes of Bytes. BrokerCPUError
	// says why they are missing when the nodes' metrics could not be read.
	BrokerCPUSeconds      float64   `json:"broker_cpu_seconds,omitempty"`
	BrokerCPUSecondsPerGB float64   `json:"broker_cpu_seconds_per_gb,omitempty"`
	BrokerCPU             []NodeCPU `json:"broker_cpu,omitempty"`
	BrokerCPUError        string    `json:"broker_cpu_error,omitempty"`

	ProduceLatency *LatencySummary `json:"produce_latency,omitempty"` // send (or due time) to ack
	MaxSendLagMs   *float64        `json:"max_send_lag_ms,omitempty"` // --rate: furthest behind schedule
	// MaxAckGapMs is the longest time a partition (MaxAckGapPartition) went
	// without an acknowledgement while a record waited for one: availability, for
	// runs with faults (a frozen or killed broker).
	MaxAckGapMs        *float64        `json:"max_ack_gap_ms,omitempty"`
	MaxAckGapPartition int32           `json:"max_ack_gap_partition,omitempty"`
	E2ELatency         *LatencySummary `json:"e2e_latency,omitempty"` // send (or due time) to consume
	Consumed           int64           `json:"consumed,omitempty"`
	ConsumeSeconds     float64         `json:"consume_seconds,omitempty"`

	// Transactional compares a transactional run with an idempotent one.
	Transactional *TxnComparison `json:"transactional,omitempty"`

	Baseline *BaselineResult    `json:"baseline,omitempty"`
	Ratios   map[string]float64 `json:"ratios,omitempty"` // MBPerSec / each baseline's MB/s

	lat *histogram // ProduceLatency's, kept to add up runs (combineRuns)
}

// TxnComparison is a transactional produce run beside the idempotent runs of
// the same settings before it.
type TxnComparison struct {
	TxnRecords              int     `json:"txn_records"`  // records per transaction
	Transactions            int64   `json:"transactions"` // committed
	IdempotentRecordsPerSec float64 `json:"idempotent_records_per_sec"`
	Ratio                   float64 `json:"ratio"` // transactional / idempotent records/s
	// The same idempotent producers flushing every TxnRecords records: the
	// transaction's cadence without the transaction, so FlushedRatio
	// (transactional / flushed records/s) is what the transactions themselves
	// cost, and FlushedFlushLatency the time of one such Flush.
	FlushedRecordsPerSec float64         `json:"flushed_records_per_sec,omitempty"`
	FlushedRatio         float64         `json:"flushed_ratio,omitempty"`
	FlushedFlushLatency  *LatencySummary `json:"flushed_flush,omitempty"`
	// The phases of each transaction as the client saw them: BeginTransaction
	// until its last record was handed to the client, then Flush (every record
	// acknowledged), then EndTransaction (committed).
	BufferLatency *LatencySummary `json:"txn_buffer,omitempty"`
	FlushLatency  *LatencySummary `json:"txn_flush,omitempty"`
	EndLatency    *LatencySummary `json:"txn_end,omitempty"`
	// With --rounds R > 1 (txn_rounds.go): R, and each round's ratios; Ratio
	// and FlushedRatio are of the totals.
	Rounds             int       `json:"rounds,omitempty"`
	RoundRatios        []float64 `json:"round_ratios,omitempty"`
	RoundFlushedRatios []float64 `json:"round_flushed_ratios,omitempty"`

	phases *txnPhases // the summaries', kept to add up runs
}

// setPhases sets the phases' summaries from t.phases.
func (t *TxnComparison) setPhases() {
	b, f, e := t.phases.buffer.summary(), t.phases.flush.summary(), t.phases.end.summary()
	t.BufferLatency, t.FlushLatency, t.EndLatency = &b, &f, &e
}

const (
	mb = 1e6
	gb = 1e9
)

func (r *Result) setElapsed(ns int64) {
	r.Seconds = float64(ns) / float64(time.Second)
	if r.Seconds > 0 {
		r.RecordsPerSec = float64(r.Records) / r.Seconds
		r.MBPerSec = float64(r.Bytes) / mb / r.Seconds
	}
}

// setCPUPerGB divides the client's and the brokers' CPU by the GB moved.
func (r *Result) setCPUPerGB() {
	if r.Bytes <= 0 {
		return
	}
	r.ClientCPUSecondsPerGB = r.ClientCPUSeconds / (float64(r.Bytes) / gb)
	r.BrokerCPUSecondsPerGB = r.BrokerCPUSeconds / (float64(r.Bytes) / gb)
}

func (r *Result) setBaseline(b *BaselineResult) {
	r.Baseline = b
	r.Ratios = make(map[string]float64, len(b.Rows))
	for _, row := range b.Rows {
		if row.MBPerSec > 0 {
			r.Ratios[row.Name] = r.MBPerSec / row.MBPerSec
		}
	}
}

func (r *Result) writeJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeText prints the summary for people, e.g.
//
//	produce  topic bench, 6 partitions, 1 producer, acks=all, compression none, 1024-byte records, linger 10 ms (franz-go default), as fast as possible
//	records      1000000 acknowledged, 0 failed, in 3.10 s
//	throughput   322580 records/s   330.3 MB/s
//	produce latency (ms, send to ack)   p50 2.10   p95 4.05   p99 6.20   p99.9 9.80   max 14.1   mean 2.31
func (r *Result) writeText(w io.Writer) error {
	var b strings.Builder
	switch r.Mode {
	case Consume:
		fmt.Fprintf(&b, "consume  topic %s, %d partitions, one consumer from the log start\n", r.Topic, r.Partitions)
		fmt.Fprintf(&b, "records      %d read in %.2f s\n", r.Records, r.Seconds)
	default:
		linger := "10 ms (franz-go default)"
		if r.LingerMs != nil {
			linger = fmt.Sprintf("%d ms", *r.LingerMs)
		}
		rate := "as fast as possible"
		if r.Rate > 0 {
			rate = fmt.Sprintf("at %.0f records/s (%.1f MB/s)", r.Rate, r.Rate*float64(r.RecordSize)/mb)
		}
		fmt.Fprintf(&b, "%s  topic %s, %d partitions, %d producer%s, acks=%s, compression %s, %d-byte records, linger %s, %s\n",
			r.Mode, r.Topic, r.Partitions, r.Producers, plural(r.Producers), r.Acks, r.Compression, r.RecordSize, linger, rate)
		fmt.Fprintf(&b, "records      %d acknowledged, %d failed, in %.2f s\n", r.Records, r.Failed, r.Seconds)
	}
	if r.Security != "" {
		fmt.Fprintf(&b, "security     %s\n", r.Security)
	}
	fmt.Fprintf(&b, "throughput   %.0f records/s   %.1f MB/s\n", r.RecordsPerSec, r.MBPerSec)
	if t := r.Transactional; t != nil {
		fmt.Fprintf(&b, "transactions %d committed, %d records each; idempotent in the same run: %.0f records/s; ratio %.2f\n",
			t.Transactions, t.TxnRecords, t.IdempotentRecordsPerSec, t.Ratio)
		if t.BufferLatency != nil && t.FlushLatency != nil && t.EndLatency != nil && t.FlushLatency.Count > 0 {
			fmt.Fprintf(&b, "txn phases   p50 %.2f ms to buffer the records, %.2f ms Flush, %.2f ms EndTransaction (p95 %.2f, %.2f, %.2f)\n",
				t.BufferLatency.P50, t.FlushLatency.P50, t.EndLatency.P50, t.BufferLatency.P95, t.FlushLatency.P95, t.EndLatency.P95)
		}
		if t.Rounds > 1 {
			fmt.Fprintf(&b, "rounds       %d, the order alternating; ratio per round %s", t.Rounds, ratiosText(t.RoundRatios))
			if len(t.RoundFlushedRatios) > 0 {
				fmt.Fprintf(&b, ", transactional / flushed %s", ratiosText(t.RoundFlushedRatios))
			}
			b.WriteString("\n")
		}
		if t.FlushedRecordsPerSec > 0 {
			fmt.Fprintf(&b, "flushed      idempotent, a Flush every %d records: %.0f records/s; transactional / flushed %.2f", t.TxnRecords, t.FlushedRecordsPerSec, t.FlushedRatio)
			if f := t.FlushedFlushLatency; f != nil && f.Count > 0 {
				fmt.Fprintf(&b, " (Flush p50 %.2f ms, p95 %.2f)", f.P50, f.P95)
			}
			b.WriteString("\n")
		}
	}
	if r.ClientCPUSeconds > 0 && r.Seconds > 0 {
		fmt.Fprintf(&b, "client CPU   %.2f s (%.2f cores) in this process, %.2f s per GB\n",
			r.ClientCPUSeconds, r.ClientCPUSeconds/r.Seconds, r.ClientCPUSecondsPerGB)
	}
	switch {
	case r.BrokerCPUError != "":
		fmt.Fprintf(&b, "broker CPU   not measured: %s\n", r.BrokerCPUError)
	case len(r.BrokerCPU) > 0 && r.Seconds > 0:
		fmt.Fprintf(&b, "broker CPU   %.2f s (%.2f cores) on %d node%s, %.2f s per GB\n", r.BrokerCPUSeconds,
			r.BrokerCPUSeconds/r.Seconds, len(r.BrokerCPU), plural(len(r.BrokerCPU)), r.BrokerCPUSecondsPerGB)
	}
	if r.ProduceLatency != nil {
		from := "send"
		if r.Rate > 0 {
			from = "due time"
		}
		fmt.Fprintf(&b, "produce latency (ms, %s to ack)      %s\n", from, latencyText(r.ProduceLatency))
	}
	if r.MaxSendLagMs != nil {
		fmt.Fprintf(&b, "schedule     furthest behind the --rate schedule: %.2f ms\n", *r.MaxSendLagMs)
	}
	if r.MaxAckGapMs != nil {
		fmt.Fprintf(&b, "availability longest time a partition went without an acknowledgement: %.2f ms (partition %d)\n",
			*r.MaxAckGapMs, r.MaxAckGapPartition)
	}
	if r.E2ELatency != nil {
		fmt.Fprintf(&b, "e2e latency (ms, produce to consume)  %s\n", latencyText(r.E2ELatency))
		fmt.Fprintf(&b, "consumed     %d records in %.2f s\n", r.Consumed, r.ConsumeSeconds)
	}
	if r.Baseline != nil {
		fmt.Fprintf(&b, "baseline     this machine in the same run, %.0f MB each, disk in %s; ratio = %.1f MB/s / baseline\n",
			float64(r.Baseline.Bytes)/mb, r.Baseline.Dir, r.MBPerSec)
		tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
		for _, row := range r.Baseline.Rows {
			line := fmt.Sprintf("  %s\t%.1f MB/s\tratio %.3f", row.Desc, row.MBPerSec, r.Ratios[row.Name])
			if cpu := row.cpuText(); cpu != "" {
				line += "\t" + cpu
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func latencyText(s *LatencySummary) string {
	return fmt.Sprintf("p50 %s   p95 %s   p99 %s   p99.9 %s   max %s   mean %s",
		msText(s.P50), msText(s.P95), msText(s.P99), msText(s.P999), msText(s.Max), msText(s.Mean))
}

// msText prints milliseconds with three significant digits.
func msText(ms float64) string {
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f", ms)
	case ms >= 1:
		return fmt.Sprintf("%.2f", ms)
	default:
		return fmt.Sprintf("%.3f", ms)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// progressLine rewrites one terminal line in place.
type progressLine struct {
	w    io.Writer
	mu   sync.Mutex
	used bool
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w} }

func (p *progressLine) set(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[K%s", s)
	p.used = true
}

// clear removes the line so that the summary starts on a clean one.
func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// sampler prints the progress line every second: the rate of records and bytes
// since the last line and the latency percentiles of those records.
type sampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	line *progressLine
}

func startSampler(line *progressLine, clock benchClock, c *loadCounters, producers []*loadProducer, cons *loadConsumer) *sampler {
	s := &sampler{done: make(chan struct{}), line: line}
	if line == nil {
		return s
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		lastN, lastB, lastT := c.records.Load(), c.bytes.Load(), clock.now()
		var h, e histogram
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
			}
			n, b, now := c.records.Load(), c.bytes.Load(), clock.now()
			secs := float64(now-lastT) / float64(time.Second)
			text := fmt.Sprintf("%6.0fs  %9.0f records/s  %8.1f MB/s", float64(now)/float64(time.Second),
				float64(n-lastN)/secs, float64(b-lastB)/mb/secs)
			lastN, lastB, lastT = n, b, now
			h.reset()
			for _, p := range producers {
				p.lat.takeInterval(&h)
			}
			if h.count() > 0 {
				text += fmt.Sprintf("  produce p50 %s p99 %s ms", msText(ms(h.quantile(0.5))), msText(ms(h.quantile(0.99))))
			}
			if cons != nil {
				e.reset()
				cons.lat.takeInterval(&e)
				if e.count() > 0 {
					text += fmt.Sprintf("  e2e p50 %s p99 %s ms", msText(ms(e.quantile(0.5))), msText(ms(e.quantile(0.99))))
				}
			}
			line.set(text)
		}
	}()
	return s
}

func ms(ns int64) float64 { return float64(ns) / float64(time.Millisecond) }

func (s *sampler) stop() {
	close(s.done)
	s.wg.Wait()
	if s.line != nil {
		s.line.clear()
	}
}

func ratiosText(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(parts, " ")
}
