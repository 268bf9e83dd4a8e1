package replication

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the replication counters of a Manager, served as Prometheus series.
type Metrics struct {
	isrShrinks atomic.Int64
	isrExpands atomic.Int64
}

// ISRChanges returns how many ISR changes this broker wrote as leader since it
// started: those that removed replicas and those that added some.
func (m *Manager) ISRChanges() (shrinks, expands int64) {
	return m.metrics.isrShrinks.Load(), m.metrics.isrExpands.Load()
}

// registerMetrics registers the manager's series with reg: counters of ISR changes
// this broker made as leader, and gauges computed at scrape time from the partitions.
func (m *Manager) registerMetrics(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	reg.MustRegister(m.cleaner.Collectors()...)
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "skiff_isr_shrinks_total", Help: "ISR changes written by this broker that removed replicas.",
		}, func() float64 { return float64(m.metrics.isrShrinks.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "skiff_isr_expands_total", Help: "ISR changes written by this broker that added replicas.",
		}, func() float64 { return float64(m.metrics.isrExpands.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skiff_under_replicated_partitions",
			Help: "Partitions led by this broker whose ISR is smaller than their replica set.",
		}, func() float64 {
			n := 0
			for _, p := range m.Partitions() {
				if p.underReplicated() {
					n++
				}
			}
			return float64(n)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skiff_follower_max_lag_records",
			Help: "Largest number of records a follower is behind, over the partitions this broker leads.",
		}, func() float64 {
			var worst int64
			for _, p := range m.Partitions() {
				worst = max(worst, p.maxFollowerLag())
			}
			return float64(worst)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skiff_unsynced_acknowledged_bytes",
			Help: "Bytes in this node's replicas of partitions under flush.policy replicated or interval that producers may have been acknowledged for but that are not yet fdatasynced here: what a power failure of this node could take from its copies (under flush.policy=always nothing is acknowledged before it is synced).",
		}, func() float64 {
			var n int64
			for _, p := range m.Partitions() {
				if p.cfg.Load().Flush != FlushAlways {
					n += p.UnsyncedBytes()
				}
			}
			return float64(n)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skiff_offline_partitions",
			Help: "Local replicas that are not served because their log could not be opened (a missing segment, a failing disk); see the log.",
		}, func() float64 {
			m.mu.RLock()
			defer m.mu.RUnlock()
			return float64(len(m.mu.offline))
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skiff_segment_files_open",
			Help: "Segment files this node holds open: every partition's active segment, rolled ones not yet synced, sealed ones being read, and idle sealed ones up to segment-file-cache.",
		}, func() float64 { return float64(m.cfg.SegmentFiles.OpenFiles()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "skiff_segment_files_reopened_total",
			Help: "Sealed segment files opened again to be read because the segment file cache had closed them.",
		}, func() float64 { return float64(m.cfg.SegmentFiles.Reopened()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "skiff_segment_files_evicted_total",
			Help: "Idle sealed segment files closed to keep within segment-file-cache.",
		}, func() float64 { return float64(m.cfg.SegmentFiles.Evicted()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skiff_partitions_leading", Help: "Partitions this broker leads.",
		}, func() float64 {
			n := 0
			for _, p := range m.Partitions() {
				if p.IsLeader() {
					n++
				}
			}
			return float64(n)
		}),
	)
}

func (p *Partition) underReplicated() bool {
	if !p.IsLeader() {
		return false
	}
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	return len(p.st.isr) < len(p.st.replicas)
}

func (p *Partition) maxFollowerLag() int64 {
	if !p.IsLeader() {
		return 0
	}
	leo := p.log.LogEndOffset()
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	var worst int64
	for _, f := range p.st.followers {
		if f.leo >= 0 {
			worst = max(worst, leo-f.leo)
		} else {
			worst = max(worst, leo)
		}
	}
	return worst
}
