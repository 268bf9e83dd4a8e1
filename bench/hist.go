package bench

// A latency histogram in the manner of HdrHistogram, written out because it is
// small: log-linear buckets over non-negative int64 values (nanoseconds here).
// Values below 2^histSubBits are counted exactly; above, every power of two is
// cut into 2^histSubBits equal buckets, so a reported quantile is at most
// 1/2^histSubBits (0.8%) above the true value, and never below it. The whole
// int64 range fits in a fixed array: no value is clamped, no value is lost.

import (
	"math"
	"math/bits"
	"time"
)

const (
	histSubBits  = 7
	histSubCount = 1 << histSubBits // buckets per power of two (and exact values below it)
	// One group of histSubCount buckets for the exact values, then one per shift
	// 0..63-histSubBits (values up to 2^63-1).
	histBuckets = (64 - histSubBits + 1) * histSubCount
)

// histogram counts values. The zero value is empty and ready; it is not safe
// for concurrent use (latencyRecorder adds a lock).
type histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64 // for the mean; float so that it cannot overflow
	min, max int64
}

// histBucket returns the bucket index of v >= 0.
func histBucket(v int64) int {
	u := uint64(v)
	if u < histSubCount {
		return int(u)
	}
	shift := bits.Len64(u) - histSubBits - 1 // >= 0
	return (shift+1)<<histSubBits + int(u>>shift) - histSubCount
}

// histBucketHigh is the largest value that falls into bucket i.
func histBucketHigh(i int) int64 {
	if i < histSubCount {
		return int64(i)
	}
	shift := i>>histSubBits - 1
	low := uint64(histSubCount+i&(histSubCount-1)) << shift
	return int64(low + 1<<shift - 1)
}

// record counts v; negative values count as 0.
func (h *histogram) record(v int64) {
	v = max(v, 0)
	h.counts[histBucket(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// merge adds every value counted by o.
func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

func (h *histogram) reset() { *h = histogram{} }

// count is the number of values recorded.
func (h *histogram) count() uint64 { return h.n }

// quantile returns the value at quantile q in [0, 1]: the smallest bucket bound
// that at least ceil(q*count) values lie at or below, capped by the largest value
// seen. q=0 is the minimum and q=1 the maximum, both exact. An empty histogram
// returns 0.
func (h *histogram) quantile(q float64) int64 {
	switch {
	case h.n == 0:
		return 0
	case q <= 0:
		return h.min
	case q >= 1:
		return h.max
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histBucketHigh(i), h.max)
		}
	}
	return h.max
}

// mean is the exact mean of the values recorded (0 if none).
func (h *histogram) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// LatencySummary is what a run reports about one histogram of durations.
type LatencySummary struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

func (h *histogram) summary() LatencySummary {
	ms := func(ns int64) float64 { return float64(ns) / float64(time.Millisecond) }
	return LatencySummary{
		Count: h.n,
		Mean:  h.mean() / float64(time.Millisecond),
		P50:   ms(h.quantile(0.50)),
		P95:   ms(h.quantile(0.95)),
		P99:   ms(h.quantile(0.99)),
		P999:  ms(h.quantile(0.999)),
		Max:   ms(h.quantile(1)),
	}
}
