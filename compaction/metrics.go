package compaction

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"skiff/logstore"
)

// metrics are the cleaner's series.
type metrics struct {
	passes, failures          prometheus.Counter
	bytesRead, bytesWritten   prometheus.Counter
	seconds                   prometheus.Counter
	dirtyRatio, uncleanedSize prometheus.GaugeFunc
	threads                   prometheus.GaugeFunc
}

func newMetrics(c *Cleaner) metrics {
	return metrics{
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "skiff_log_cleaner_passes_total",
			Help: "Compaction passes completed (each rewrites the compacted part of one log)."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "skiff_log_cleaner_failed_passes_total",
			Help: "Compaction passes that failed (see the log); a pass given up because its log changed is not counted."}),
		bytesRead: prometheus.NewCounter(prometheus.CounterOpts{Name: "skiff_log_cleaner_read_bytes_total",
			Help: "Bytes of segments the cleaner read (building key maps and rewriting)."}),
		bytesWritten: prometheus.NewCounter(prometheus.CounterOpts{Name: "skiff_log_cleaner_written_bytes_total",
			Help: "Bytes of compacted segments the cleaner wrote."}),
		seconds: prometheus.NewCounter(prometheus.CounterOpts{Name: "skiff_log_cleaner_seconds_total",
			Help: "Time the cleaner threads spent in compaction passes."}),
		dirtyRatio: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skiff_log_cleaner_max_dirty_ratio",
			Help: "The largest share of a compacted log's compactable bytes not yet compacted (Kafka's max-dirty-percent, as a ratio)."},
			func() float64 { r, _ := c.dirt(); return r }),
		uncleanedSize: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skiff_log_cleaner_uncleaned_bytes",
			Help: "Bytes of sealed segments of compacted logs that the cleaner may compact and has not yet."},
			func() float64 { _, n := c.dirt(); return float64(n) }),
		threads: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skiff_log_cleaner_threads",
			Help: "Cleaner threads running (log.cleaner.threads)."},
			func() float64 { return float64(c.Threads()) }),
	}
}

func (m metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.passes, m.failures, m.bytesRead, m.bytesWritten, m.seconds, m.dirtyRatio, m.uncleanedSize, m.threads}
}

func (m metrics) pass(st passStats, took time.Duration, err error) {
	m.bytesRead.Add(float64(st.bytesRead))
	m.bytesWritten.Add(float64(st.bytesWritten))
	m.seconds.Add(took.Seconds())
	switch {
	case err == nil:
		m.passes.Inc()
	case errors.Is(err, errNothing), errors.Is(err, context.Canceled),
		errors.Is(err, logstore.ErrSegmentsChanged), errors.Is(err, logstore.ErrClosed):
	default:
		m.failures.Inc()
	}
}

// dirt returns the largest dirty ratio and the dirty bytes of all compacted
// logs, as of now.
func (c *Cleaner) dirt() (ratio float64, bytes int64) {
	now := time.Now()
	for _, t := range c.cfg.Targets() {
		cfg := t.CompactionConfig()
		if !cfg.Compact {
			continue
		}
		l := t.Log()
		sp := planSpan(l.Segments(), l.LogStartOffset(), l.CleanerPoint(), t.HighWatermark(), cfg, now)
		ratio = max(ratio, sp.ratio())
		bytes += sp.dirtyBytes
	}
	return ratio, bytes
}
