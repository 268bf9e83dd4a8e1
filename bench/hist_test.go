package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// exactQuantile is the nearest-rank quantile of sorted values, the definition
// histogram.quantile approximates.
func exactQuantile(sorted []int64, q float64) int64 {
	rank := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return sorted[rank-1]
}

func TestHistogramEmpty(t *testing.T) {
	var h histogram
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if got := h.quantile(q); got != 0 {
			t.Errorf("empty quantile(%v) = %d, want 0", q, got)
		}
	}
	if h.mean() != 0 || h.count() != 0 {
		t.Errorf("empty: mean %v count %d", h.mean(), h.count())
	}
	if s := h.summary(); s != (LatencySummary{}) {
		t.Errorf("empty summary %+v", s)
	}
}

// Values below histSubCount are counted exactly, so every quantile is exact.
func TestHistogramSmallValuesExact(t *testing.T) {
	var h histogram
	var vals []int64
	for v := int64(0); v < histSubCount; v++ {
		for range v%3 + 1 {
			h.record(v)
			vals = append(vals, v)
		}
	}
	for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.99, 1} {
		if got, want := h.quantile(q), exactQuantile(vals, q); got != want {
			t.Errorf("quantile(%v) = %d, want %d", q, got, want)
		}
	}
}

// Every bucket holds a contiguous range: its high bound maps to it, the next
// value maps to the next bucket, and the ranges cover int64 without gaps.
func TestHistogramBuckets(t *testing.T) {
	next := int64(0)
	for i := 0; ; i++ {
		hi := histBucketHigh(i)
		if histBucket(next) != i || histBucket(hi) != i {
			t.Fatalf("bucket %d: low %d -> %d, high %d -> %d", i, next, histBucket(next), hi, histBucket(hi))
		}
		if hi < next {
			t.Fatalf("bucket %d: high %d below low %d", i, hi, next)
		}
		// Relative width: at most 1/histSubCount of the bucket's low bound.
		if next >= histSubCount && float64(hi-next+1) > float64(next)/histSubCount {
			t.Fatalf("bucket %d [%d, %d] wider than 1/%d of its low bound", i, next, hi, histSubCount)
		}
		if hi == math.MaxInt64 {
			if i >= histBuckets {
				t.Fatalf("int64 needs %d buckets, have %d", i+1, histBuckets)
			}
			break
		}
		next = hi + 1
	}
}

// Against exact quantiles of random latency-like values (log-uniform from 1 µs to
// 10 s): never below the truth and at most 1/histSubCount above it.
func TestHistogramQuantileError(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h histogram
	vals := make([]int64, 200_000)
	for i := range vals {
		vals[i] = int64(math.Exp(rng.Float64()*math.Log(1e7)) * 1e3)
		h.record(vals[i])
	}
	slices.Sort(vals)
	for _, q := range []float64{0, 0.001, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 0.9999, 1} {
		got, want := h.quantile(q), exactQuantile(vals, q)
		if got < want || float64(got-want) > float64(want)/histSubCount {
			t.Errorf("quantile(%v) = %d, exact %d: off by more than 1/%d", q, got, want, histSubCount)
		}
	}
	if h.quantile(0) != vals[0] || h.quantile(1) != vals[len(vals)-1] {
		t.Errorf("min/max %d/%d, want %d/%d", h.quantile(0), h.quantile(1), vals[0], vals[len(vals)-1])
	}
	var sum float64
	for _, v := range vals {
		sum += float64(v)
	}
	if m := h.mean(); math.Abs(m-sum/float64(len(vals))) > 1e-6*m {
		t.Errorf("mean %v, want %v", m, sum/float64(len(vals)))
	}
}

// A quantile is capped by the largest value: one value reports itself, not its
// bucket's bound.
func TestHistogramCappedByMax(t *testing.T) {
	var h histogram
	h.record(1_000_001)
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if got := h.quantile(q); got != 1_000_001 {
			t.Errorf("quantile(%v) = %d, want 1000001", q, got)
		}
	}
}

func TestHistogramNegativeAndHuge(t *testing.T) {
	var h histogram
	h.record(-5)
	h.record(math.MaxInt64)
	if h.quantile(0) != 0 || h.quantile(1) != math.MaxInt64 || h.count() != 2 {
		t.Errorf("min %d max %d count %d", h.quantile(0), h.quantile(1), h.count())
	}
	if got := h.quantile(0.5); got != 0 {
		t.Errorf("median %d, want 0", got)
	}
}

// merge gives the same histogram as recording both sets into one.
func TestHistogramMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b, both histogram
	for range 10_000 {
		v := rng.Int64N(1e9)
		if rng.IntN(2) == 0 {
			a.record(v)
		} else {
			b.record(v)
		}
		both.record(v)
	}
	var empty histogram
	a.merge(&empty)
	a.merge(&b)
	if a.counts != both.counts || a.n != both.n || a.min != both.min || a.max != both.max {
		t.Fatal("merge differs from recording into one histogram")
	}
	var c histogram
	c.merge(&both) // into an empty one: min must come from both
	if c.min != both.min || c.quantile(0.5) != both.quantile(0.5) {
		t.Errorf("merge into empty: min %d, want %d", c.min, both.min)
	}
	c.reset()
	if c.count() != 0 || c.quantile(1) != 0 {
		t.Error("reset left values")
	}
}

func TestHistogramSummaryUnits(t *testing.T) {
	var h histogram
	for range 100 {
		h.record(2_000_000) // 2 ms
	}
	s := h.summary()
	if s.Count != 100 || s.P50 != 2 || s.P99 != 2 || s.Max != 2 || s.Mean != 2 {
		t.Errorf("summary %+v, want 2 ms everywhere", s)
	}
}
