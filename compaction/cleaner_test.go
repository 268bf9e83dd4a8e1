package compaction

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"skiff/internal/compress"
)

// TestCleaner: a cleaner with two threads compacts every compacted log it is
// given, leaves the others alone, picks up a log made compacted later once
// woken, counts its passes in its metrics, and stops on Close (goleak checks
// its goroutines).
func TestCleaner(t *testing.T) {
	now := time.Now()
	var mu sync.Mutex
	var targets []Target
	var hist []history
	for i := range 4 {
		cfg := compactCfg()
		cfg.Compact = i != 3
		tg := newTarget(t, cfg)
		var h history
		fill(t, tg, &h, rand.New(rand.NewPCG(uint64(i), 1)), 40, 6, []compress.Codec{compress.Codec(i)}, now.UnixMilli())
		targets = append(targets, tg)
		hist = append(hist, h)
	}
	c := New(CleanerConfig{Threads: 2, Backoff: time.Hour, DedupeBufferSize: 1 << 20, Targets: func() []Target {
		mu.Lock()
		defer mu.Unlock()
		return targets
	}})
	defer c.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.Collectors()...)

	compacted := func(i int) bool { return targets[i].Log().CleanerPoint() > 0 }
	deadline := time.Now().Add(30 * time.Second)
	for !(compacted(0) && compacted(1) && compacted(2)) {
		if time.Now().After(deadline) {
			t.Fatal("the compacted logs were not compacted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 3 {
		checkCompacted(t, targets[i].(*target), hist[i], false)
	}
	if compacted(3) {
		t.Fatal("a log with cleanup.policy=delete was compacted")
	}
	if n := gathered(t, reg, "skiff_log_cleaner_passes_total"); n < 3 {
		t.Fatalf("%v passes counted", n)
	}
	t3 := targets[3].(*target)
	t3.mu.Lock()
	t3.cfg.Compact = true
	t3.mu.Unlock()
	c.Wake()
	deadline = time.Now().Add(30 * time.Second)
	for !compacted(3) {
		if time.Now().After(deadline) {
			t.Fatal("the log made compacted was not compacted after a Wake")
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkCompacted(t, targets[3].(*target), hist[3], false)
	if n := gathered(t, reg, "skiff_log_cleaner_read_bytes_total"); n <= 0 {
		t.Fatalf("%v bytes read", n)
	}
	if n := gathered(t, reg, "skiff_log_cleaner_uncleaned_bytes"); n != 0 {
		t.Fatalf("%v bytes left uncleaned", n)
	}
}

// gathered returns the value of the unlabelled series name in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("no series %s", name)
	return 0
}

// TestCleanerReconfigure: a running cleaner takes new settings: more threads
// and fewer (the metric follows; goleak checks that the retired ones end), the
// I/O rate, and a shorter backoff, after which a log that becomes compacted is
// compacted without a Wake.
func TestCleanerReconfigure(t *testing.T) {
	cfg := compactCfg()
	cfg.Compact = false
	tg := newTarget(t, cfg)
	var h history
	fill(t, tg, &h, rand.New(rand.NewPCG(7, 1)), 40, 6, []compress.Codec{compress.None}, time.Now().UnixMilli())
	c := New(CleanerConfig{Threads: 1, Backoff: time.Hour, Targets: func() []Target { return []Target{tg} }})
	defer c.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.Collectors()...)
	if n := gathered(t, reg, "skiff_log_cleaner_threads"); n != 1 {
		t.Fatalf("%v threads, want 1", n)
	}
	c.Reconfigure(CleanerConfig{Threads: 3, Backoff: time.Hour, IOBytesPerSecond: 5 << 20})
	if n := gathered(t, reg, "skiff_log_cleaner_threads"); n != 3 {
		t.Fatalf("%v threads, want 3", n)
	}
	c.throttle.mu.Lock()
	rate := c.throttle.rate
	c.throttle.mu.Unlock()
	if rate != 5<<20 {
		t.Fatalf("I/O rate %v, want %v", rate, 5<<20)
	}
	c.Reconfigure(CleanerConfig{Threads: 2, Backoff: 10 * time.Millisecond})
	if n := c.Threads(); n != 2 {
		t.Fatalf("%v threads, want 2", n)
	}
	// The idle threads took the new backoff: they look again within 10ms.
	tg.mu.Lock()
	tg.cfg.Compact = true
	tg.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for tg.Log().CleanerPoint() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a log made compacted was not compacted with a 10ms backoff")
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkCompacted(t, tg, h, false)
}
