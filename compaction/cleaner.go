package compaction

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"skiff/internal/batch"
	"skiff/logstore"
)

// Cleaner compacts the logs of one node: CleanerConfig.Threads goroutines each
// pick the log most in need (planSpan, span.due: the dirtiest over its
// min.cleanable.dirty.ratio, or one overdue by max.compaction.lag.ms, or one
// holding a tombstone whose delete horizon passed), compact it in one pass, and
// look again; with nothing to do a thread waits CleanerConfig.Backoff or a Wake.
// One log is compacted by one thread at a time. Followers' replicas are
// compacted like leaders', each on its own node.
type Cleaner struct {
	cfg      CleanerConfig
	throttle *throttle
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	wake     chan struct{}
	metrics  metrics

	mu struct {
		sync.Mutex
		// settings are the Threads, DedupeBufferSize, IOBytesPerSecond and
		// Backoff in force (Reconfigure).
		settings CleanerConfig
		// retire holds a channel per running thread, closed to stop it after
		// its pass in progress.
		retire []chan struct{}
		busy   map[*logstore.Log]bool
		// horizons holds the earliest delete horizon of a tombstone kept in each
		// log's compacted part (-1: none); a log missing here is looked up.
		horizons map[*logstore.Log]int64
	}
}

// New starts a cleaner.
func New(cfg CleanerConfig) *Cleaner {
	cfg = cfg.withDefaults()
	c := &Cleaner{cfg: cfg, throttle: newThrottle(0), wake: make(chan struct{}, MaxThreads)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.mu.busy = make(map[*logstore.Log]bool)
	c.mu.horizons = make(map[*logstore.Log]int64)
	c.metrics = newMetrics(c)
	c.Reconfigure(cfg)
	return c
}

// Collectors returns the cleaner's metrics, for a Prometheus registry.
func (c *Cleaner) Collectors() []prometheus.Collector { return c.metrics.collectors() }

// Wake makes idle threads look for work now (a log's settings changed).
func (c *Cleaner) Wake() { c.wakeLocked(c.Threads()) }

// wakeLocked wakes up to n idle threads; it does not lock c.mu.
func (c *Cleaner) wakeLocked(n int) {
	for range n {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// Close stops the threads, dropping the rewrites in progress, and waits for them.
func (c *Cleaner) Close() error {
	c.cancel()
	c.wg.Wait()
	return nil
}

// cleanerNice is how much nicer than the node the cleaner's threads run
// (lowerPriority): a cleaner competing with one busy thread of normal priority gets about a
// quarter of a CPU (CFS weights 335 and 1024), so that it slows the node's own
// work little and still makes progress on a busy machine.
const cleanerNice = 5

func (c *Cleaner) run(w *worker, retire <-chan struct{}) {
	defer c.wg.Done()
	runtime.LockOSThread() // never unlocked: the niced thread ends with this goroutine
	lowerPriority()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-retire:
			return
		default:
		}
		backoff := c.fitWorker(w)
		now := time.Now()
		t, sp, ok := c.grab(now)
		if !ok {
			timer := time.NewTimer(backoff)
			select {
			case <-c.ctx.Done():
				timer.Stop()
				return
			case <-retire:
				timer.Stop()
				return
			case <-c.wake:
			case <-timer.C:
			}
			timer.Stop()
			continue
		}
		start := time.Now()
		st, err := w.clean(c.ctx, t, sp, now)
		took := time.Since(start)
		c.done(t, st, err)
		c.metrics.pass(st, took, err)
		c.report(t, st, took, err)
	}
}

// grab picks the log most in need of compaction and marks it busy.
func (c *Cleaner) grab(now time.Time) (Target, span, bool) {
	type candidate struct {
		t   Target
		cfg Config
		sp  span
	}
	var cands []candidate
	for _, t := range c.cfg.Targets() {
		cfg := t.CompactionConfig()
		if !cfg.Compact {
			continue
		}
		l := t.Log()
		c.mu.Lock()
		busy := c.mu.busy[l]
		c.mu.Unlock()
		if busy {
			continue
		}
		cands = append(cands, candidate{t, cfg, planSpan(l.Segments(), l.LogStartOffset(), l.CleanerPoint(), t.HighWatermark(), cfg, now)})
	}
	var best *candidate
	for i := range cands {
		cd := &cands[i]
		if !cd.sp.due(cd.cfg, c.horizon(cd.t.Log()), now) {
			continue
		}
		if best == nil || cd.sp.ratio() > best.sp.ratio() {
			best = cd
		}
	}
	if best == nil {
		return nil, span{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := best.t.Log()
	if c.mu.busy[l] {
		return nil, span{}, false // another thread took it meanwhile
	}
	c.mu.busy[l] = true
	return best.t, best.sp, true
}

// horizon returns the earliest delete horizon of a kept tombstone in l, reading
// the batch headers of its compacted part the first time.
func (c *Cleaner) horizon(l *logstore.Log) int64 {
	c.mu.Lock()
	h, ok := c.mu.horizons[l]
	c.mu.Unlock()
	if ok {
		return h
	}
	h, err := earliestHorizon(l)
	if err != nil {
		return -1 // looked up again next time
	}
	c.mu.Lock()
	c.mu.horizons[l] = h
	c.mu.Unlock()
	return h
}

// earliestHorizon reads the batch headers of the compacted part of l for the
// earliest delete horizon (-1: none).
func earliestHorizon(l *logstore.Log) (int64, error) {
	h := int64(-1)
	end := l.CleanerPoint()
	errStop := errors.New("stop")
	err := l.ScanHeaders(l.LogStartOffset(), func(bh batch.Header) error {
		if bh.BaseOffset >= end {
			return errStop
		}
		if hz, ok := bh.DeleteHorizon(); ok && (h < 0 || hz < h) {
			h = hz
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return -1, err
	}
	return h, nil
}

// done releases the log of a pass and notes its earliest delete horizon.
func (c *Cleaner) done(t Target, st passStats, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := t.Log()
	delete(c.mu.busy, l)
	switch {
	case err == nil:
		c.mu.horizons[l] = st.horizon
	case !errors.Is(err, errNothing):
		delete(c.mu.horizons, l)
	}
	// Forget logs that are gone.
	if len(c.mu.horizons) > 64 {
		live := make(map[*logstore.Log]bool)
		for _, t := range c.cfg.Targets() {
			live[t.Log()] = true
		}
		for l := range c.mu.horizons {
			if !live[l] {
				delete(c.mu.horizons, l)
			}
		}
	}
}

// report logs one line per pass.
func (c *Cleaner) report(t Target, st passStats, took time.Duration, err error) {
	switch {
	case err == nil:
		c.cfg.Logger.Info("compacted log", "log", t.Name(), "segments", st.segments, "files", st.files,
			"cleaner_point", st.endOffset, "bytes_read", st.bytesRead, "bytes_written", st.bytesWritten,
			"records_in", st.recordsIn, "records_out", st.recordsOut, "took", took)
	case errors.Is(err, errNothing), errors.Is(err, context.Canceled):
	case errors.Is(err, logstore.ErrSegmentsChanged), errors.Is(err, logstore.ErrClosed):
		c.cfg.Logger.Debug("compaction pass given up: the log changed", "log", t.Name(), "err", err)
	default:
		c.cfg.Logger.Error("compaction pass failed", "log", t.Name(), "err", err)
	}
	if st.undecodable > 0 {
		c.cfg.Logger.Warn("compaction kept batches whose records it cannot read", "log", t.Name(), "batches", st.undecodable)
	}
}
