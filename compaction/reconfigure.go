package compaction

// Settings of a running cleaner: log.cleaner.threads,
// log.cleaner.dedupe.buffer.size, log.cleaner.io.max.bytes.per.second and
// log.cleaner.backoff.ms are dynamic broker configs, as in Kafka.

import "time"

// MaxThreads is the most cleaner threads a node runs.
const MaxThreads = 64

// Reconfigure applies the Threads, DedupeBufferSize, IOBytesPerSecond and
// Backoff of cfg (defaults for zero values; its other fields are ignored) to
// the running cleaner: the I/O rate from the threads' next bytes on, the
// backoff and key map size from each thread's next pass on; threads are started
// at once, and stopped after their pass in progress.
func (c *Cleaner) Reconfigure(cfg CleanerConfig) {
	cfg = cfg.withDefaults()
	cfg.Threads = min(cfg.Threads, MaxThreads)
	c.throttle.setRate(cfg.IOBytesPerSecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		return // closed: start nothing
	}
	c.mu.settings = CleanerConfig{Threads: cfg.Threads, DedupeBufferSize: cfg.DedupeBufferSize,
		IOBytesPerSecond: cfg.IOBytesPerSecond, Backoff: cfg.Backoff}
	for len(c.mu.retire) > cfg.Threads {
		last := len(c.mu.retire) - 1
		close(c.mu.retire[last])
		c.mu.retire = c.mu.retire[:last]
	}
	for len(c.mu.retire) < cfg.Threads {
		retire := make(chan struct{})
		c.mu.retire = append(c.mu.retire, retire)
		w := &worker{throttle: c.throttle}
		c.wg.Add(1)
		go c.run(w, retire)
	}
	c.wakeLocked(cfg.Threads) // idle threads take the new settings now
}

// Threads returns how many threads the cleaner runs (those stopping after
// their pass not counted).
func (c *Cleaner) Threads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.retire)
}

// fitWorker gives w a key map of its share of the dedupe buffer, new if the
// share changed, and returns the backoff in force.
func (c *Cleaner) fitWorker(w *worker) (backoff time.Duration) {
	c.mu.Lock()
	s := c.mu.settings
	c.mu.Unlock()
	share := s.DedupeBufferSize / int64(s.Threads)
	if w.m == nil || w.mapBytes != share {
		w.m, w.mapBytes = newOffsetMap(share), share
	}
	return s.Backoff
}
