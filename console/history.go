package console

import (
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"time"
)

// The rate history each node keeps in memory for the charts: one sample every
// Step for the last Window, as float32 (4 bytes a sample). With the defaults (5 s,
// 15 min: 180 samples) a series costs 720 bytes, so a node keeps
//
//	2 series (bytes in, bytes out)            1.4 KiB
//	+ 1 per topic it leads a partition of      720 B each (0.7 MiB at 1,000 topics)
//	+ 1 per group it coordinates (total lag)   720 B each
//	+ the last log end offset of each partition it leads, to take differences
//	  (about 64 B each: 0.6 MiB at 10,000 partitions)
//
// and nothing else: the console adds about 1.7 MiB per node at 1,000 topics,
// 10,000 partitions and 300 groups (BenchmarkHistoryMemory measures it). Samples are aligned to multiples of
// Step in Unix time, so the series of different nodes add up slot by slot.

// Default history shape.
const (
	DefaultStep   = 5 * time.Second
	DefaultWindow = 15 * time.Minute
)

// series is a ring of samples; slot i holds the sample of bucket b where
// b % len == i. A bucket never written reads NaN (no data).
type series struct {
	vals []float32
	last int64 // the newest bucket written
}

func newSeries(n int) *series {
	s := &series{vals: make([]float32, n), last: -1}
	for i := range s.vals {
		s.vals[i] = float32(math.NaN())
	}
	return s
}

// put records v in bucket b, clearing buckets skipped since the last one.
func (s *series) put(b int64, v float32) {
	n := int64(len(s.vals))
	if s.last >= 0 && b > s.last {
		for k := s.last + 1; k < b && k <= s.last+n; k++ {
			s.vals[k%n] = float32(math.NaN())
		}
	}
	s.vals[b%n] = v
	s.last = max(s.last, b)
}

// window returns the samples of buckets end-n+1..end, oldest first.
func (s *series) window(end int64) Series {
	n := int64(len(s.vals))
	out := make(Series, n)
	for i := range out {
		b := end - n + 1 + int64(i)
		if b < 0 || b > s.last || b <= s.last-n {
			out[i] = float32(math.NaN())
			continue
		}
		out[i] = s.vals[b%n]
	}
	return out
}

// latest returns the sample of bucket end or the one before it (NaN: none).
func (s *series) latest(end int64) float32 {
	n := int64(len(s.vals))
	for b := end; b >= end-1; b-- {
		if b >= 0 && b <= s.last && b > s.last-n {
			if v := s.vals[b%n]; !math.IsNaN(float64(v)) {
				return v
			}
		}
	}
	return float32(math.NaN())
}

// History is one node's rate history.
type History struct {
	step time.Duration
	n    int
	mu   struct {
		sync.Mutex
		in, out *series
		topics  map[string]*series // messages per second
		groups  map[string]*series // total lag
		// prev holds the previous sample's counters, to take differences.
		prevAt   time.Time
		prevIn   int64
		prevOut  int64
		prevEnds map[tpKey]int64
		shrinks  []counterAt // ISR changes, one a minute for the last hour
	}
}

type tpKey struct {
	topic     string
	partition int32
}

type counterAt struct {
	at               time.Time
	shrinks, expands int64
}

// NewHistory returns an empty history of window/step samples.
func NewHistory(step, window time.Duration) *History {
	h := &History{step: step, n: int(window / step)}
	h.mu.in, h.mu.out = newSeries(h.n), newSeries(h.n)
	h.mu.topics, h.mu.groups = map[string]*series{}, map[string]*series{}
	h.mu.prevEnds = map[tpKey]int64{}
	return h
}

func (h *History) bucket(t time.Time) int64 { return t.UnixMilli() / h.step.Milliseconds() }

// Sample records one sample taken at now from the node's state: node rates from
// its counters, topic rates from the log end offsets of the partitions it leads
// (a partition counts from its second sample as leader, so a leadership move adds
// no jump), and each group's total lag.
func (h *History) Sample(now time.Time, l Local, lag map[string]int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.bucket(now)
	secs := now.Sub(h.mu.prevAt).Seconds()
	first := h.mu.prevAt.IsZero()
	if !first && secs > 0 {
		h.mu.in.put(b, float32(float64(l.BytesIn-h.mu.prevIn)/secs))
		h.mu.out.put(b, float32(float64(l.BytesOut-h.mu.prevOut)/secs))
	}
	ends := make(map[tpKey]int64, len(h.mu.prevEnds))
	perTopic := map[string]int64{}
	for _, r := range l.Replicas {
		if !r.Leader {
			continue
		}
		k := tpKey{r.Topic, r.Partition}
		ends[k] = r.LogEnd
		if prev, ok := h.mu.prevEnds[k]; ok && r.LogEnd >= prev {
			perTopic[r.Topic] += r.LogEnd - prev
		} else {
			perTopic[r.Topic] += 0
		}
	}
	if !first && secs > 0 {
		for t, d := range perTopic {
			s := h.mu.topics[t]
			if s == nil {
				s = newSeries(h.n)
				h.mu.topics[t] = s
			}
			s.put(b, float32(float64(d)/secs))
		}
	}
	// Topics no longer led here stop getting samples; drop them once empty.
	for t, s := range h.mu.topics {
		if _, ok := perTopic[t]; !ok && s.last <= b-int64(h.n) {
			delete(h.mu.topics, t)
		}
	}
	for g, v := range lag {
		s := h.mu.groups[g]
		if s == nil {
			s = newSeries(h.n)
			h.mu.groups[g] = s
		}
		s.put(b, float32(v))
	}
	for g, s := range h.mu.groups {
		if _, ok := lag[g]; !ok && s.last <= b-int64(h.n) {
			delete(h.mu.groups, g)
		}
	}
	h.mu.prevAt, h.mu.prevIn, h.mu.prevOut, h.mu.prevEnds = now, l.BytesIn, l.BytesOut, ends
	if len(h.mu.shrinks) == 0 || now.Sub(h.mu.shrinks[len(h.mu.shrinks)-1].at) >= time.Minute {
		h.mu.shrinks = append(h.mu.shrinks, counterAt{now, l.ISRShrinks, l.ISRExpands})
		if len(h.mu.shrinks) > 61 {
			h.mu.shrinks = h.mu.shrinks[1:]
		}
	}
}

// HistoryReport is the part of a node's history a page asked for.
type HistoryReport struct {
	// End is the newest bucket (Unix ms / StepMS); series run up to it, oldest first.
	End    int64 `json:"end"`
	StepMS int64 `json:"step_ms"`
	// In and Out are bytes per second; Topics messages per second; Groups lag.
	In     Series            `json:"in,omitempty"`
	Out    Series            `json:"out,omitempty"`
	Topics map[string]Series `json:"topics,omitempty"`
	Groups map[string]Series `json:"groups,omitempty"`
	// Rates are the latest messages per second of every topic led here.
	Rates map[string]float32 `json:"rates,omitempty"`
	// ISRShrinks and ISRExpands are the changes of the last hour (or since start).
	ISRShrinks int64 `json:"isr_shrinks"`
	ISRExpands int64 `json:"isr_expands"`
}

// Want names what a node's report carries: the history series (Node: bytes in
// and out; Topics, Groups: theirs), and the replicas of the topics Parts (all
// of them with AllParts).
type Want struct {
	Node     bool
	Topics   []string
	Groups   []string
	Parts    []string
	AllParts bool
}

// Report returns the series of w as of now.
func (h *History) Report(now time.Time, w Want) *HistoryReport {
	h.mu.Lock()
	defer h.mu.Unlock()
	end := h.bucket(now)
	r := &HistoryReport{End: end, StepMS: h.step.Milliseconds(), Rates: make(map[string]float32, len(h.mu.topics))}
	for t, s := range h.mu.topics {
		if v := s.latest(end); !math.IsNaN(float64(v)) {
			r.Rates[t] = v
		}
	}
	if w.Node {
		r.In, r.Out = h.mu.in.window(end), h.mu.out.window(end)
	}
	for _, t := range w.Topics {
		if s := h.mu.topics[t]; s != nil {
			if r.Topics == nil {
				r.Topics = map[string]Series{}
			}
			r.Topics[t] = s.window(end)
		}
	}
	for _, g := range w.Groups {
		if s := h.mu.groups[g]; s != nil {
			if r.Groups == nil {
				r.Groups = map[string]Series{}
			}
			r.Groups[g] = s.window(end)
		}
	}
	if k := len(h.mu.shrinks); k > 0 {
		first, last := h.mu.shrinks[0], h.mu.shrinks[k-1]
		r.ISRShrinks, r.ISRExpands = last.shrinks-first.shrinks, last.expands-first.expands
	}
	return r
}

// Series is a run of samples, oldest first; NaN marks a slot without a sample
// (null in JSON, which has no NaN).
type Series []float32

// MarshalJSON writes NaN as null.
func (s Series) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 2+len(s)*6)
	out = append(out, '[')
	for i, v := range s {
		if i > 0 {
			out = append(out, ',')
		}
		if math.IsNaN(float64(v)) {
			out = append(out, "null"...)
			continue
		}
		out = strconv.AppendFloat(out, float64(v), 'g', -1, 32)
	}
	return append(out, ']'), nil
}

// UnmarshalJSON reads null as NaN.
func (s *Series) UnmarshalJSON(b []byte) error {
	var vals []*float32
	if err := json.Unmarshal(b, &vals); err != nil {
		return err
	}
	*s = make(Series, len(vals))
	for i, v := range vals {
		(*s)[i] = float32(math.NaN())
		if v != nil {
			(*s)[i] = *v
		}
	}
	return nil
}
