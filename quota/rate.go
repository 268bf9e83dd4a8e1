package quota

import "time"

// Window is how rates are measured: Samples samples of Size each (Kafka's
// quota.window.num and quota.window.size.seconds).
type Window struct {
	Samples int
	Size    time.Duration
}

// Defaults of Window, Kafka's.
const (
	DefaultSamples = 11
	DefaultSize    = time.Second
)

func (w Window) withDefaults() Window {
	if w.Samples < 1 {
		w.Samples = DefaultSamples
	}
	if w.Size <= 0 {
		w.Size = DefaultSize
	}
	return w
}

// Span is the shortest time a rate is averaged over, Samples-1 windows: at
// the start a client may take Span times its quota before it is throttled.
func (w Window) Span() time.Duration {
	w = w.withDefaults()
	return time.Duration(w.Samples-1) * w.Size
}

// rate is Kafka's sampled Rate: the sum of the values recorded in the live
// samples, over the time since the oldest began, but at least Samples-1
// windows. Not safe for concurrent use.
type rate struct {
	w       Window
	samples []sample
	cur     int
}

type sample struct {
	start time.Time // zero: unused
	value float64
}

func newRate(w Window) *rate {
	w = w.withDefaults()
	return &rate{w: w, samples: make([]sample, w.Samples)}
}

// purge drops the samples that began Samples windows ago or more.
func (r *rate) purge(now time.Time) {
	expiry := time.Duration(r.w.Samples) * r.w.Size
	for i := range r.samples {
		if s := &r.samples[i]; !s.start.IsZero() && now.Sub(s.start) >= expiry {
			*s = sample{}
		}
	}
}

// record adds v at now, in a new sample when the current one's window is over.
func (r *rate) record(v float64, now time.Time) {
	s := &r.samples[r.cur]
	if s.start.IsZero() || now.Sub(s.start) >= r.w.Size {
		r.cur = (r.cur + 1) % len(r.samples)
		r.samples[r.cur] = sample{start: now}
		s = &r.samples[r.cur]
	}
	s.value += v
}

// windowSize is the time the rate is averaged over at now.
func (r *rate) windowSize(now time.Time) time.Duration {
	r.purge(now)
	oldest := now
	for _, s := range r.samples {
		if !s.start.IsZero() && s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	if full, least := int(elapsed/r.w.Size), r.w.Samples-1; full < least {
		elapsed += time.Duration(least-full) * r.w.Size
	}
	return elapsed
}

// measure is the rate at now, per second.
func (r *rate) measure(now time.Time) float64 {
	size := r.windowSize(now) // purges
	var total float64
	for _, s := range r.samples {
		total += s.value
	}
	return total / size.Seconds()
}

// bucket is Kafka's TokenBucket (KIP-599): it holds up to Samples×Size of the
// quota, starts full, refills at the quota, and a client that takes it below
// zero is throttled until it refills to zero. Unlike the sampled rate, whose
// oldest sample dropping out lets a client that sends flat out burst again
// every Samples windows, it holds such a client to its quota once the first
// burst is spent. Not safe for concurrent use.
type bucket struct {
	w      Window
	tokens float64
	last   time.Time // zero: full
}

// take removes v at now from a bucket of limit per second and returns the
// throttle: the time until the bucket is back at zero.
func (b *bucket) take(limit, v float64, now time.Time) time.Duration {
	burst := limit * float64(b.w.Samples) * b.w.Size.Seconds()
	if b.last.IsZero() {
		b.tokens = burst
	} else if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(burst, b.tokens+limit*dt.Seconds()) // full is full, however long idle
	}
	b.last = now
	b.tokens = min(burst, b.tokens) - v
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / limit * float64(time.Second))
}
