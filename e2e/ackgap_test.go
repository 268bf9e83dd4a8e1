package e2e

import (
	"fmt"
	"strings"
	"time"
)

// ackGaps measures availability as a producer sees it: for each partition, the
// longest time that went by without an acknowledged record, from the start of the
// workload to the end of its producing. A partition that accepts nothing for the rest
// of a run shows the whole rest of the run.
type ackGaps struct {
	start time.Time
	last  []time.Time // per partition: the last acknowledgement (or the start)
	worst []ackGap    // per partition: its longest gap so far
}

// ackGap is one stretch without acknowledgements on a partition.
type ackGap struct {
	partition int32
	from      time.Time
	d         time.Duration
}

func newAckGaps(start time.Time, partitions int32) *ackGaps {
	g := &ackGaps{start: start, last: make([]time.Time, partitions), worst: make([]ackGap, partitions)}
	for p := range g.last {
		g.last[p] = start
		g.worst[p].partition = int32(p)
	}
	return g
}

// ack records an acknowledgement on partition p at time at.
func (g *ackGaps) ack(p int32, at time.Time) {
	if p < 0 || int(p) >= len(g.last) || at.Before(g.last[p]) {
		return
	}
	if d := at.Sub(g.last[p]); d > g.worst[p].d {
		g.worst[p].from, g.worst[p].d = g.last[p], d
	}
	g.last[p] = at
}

// end closes every partition's current gap at time at (the producer stopped).
func (g *ackGaps) end(at time.Time) {
	for p := range g.last {
		g.ack(int32(p), at)
	}
}

// longest returns the longest gap of any partition.
func (g *ackGaps) longest() ackGap {
	var w ackGap
	for _, x := range g.worst {
		if x.d > w.d {
			w = x
		}
	}
	return w
}

// String lists each partition's longest gap and when it began, in seconds after the
// start: "p0 1.20s at t=31.05s, p1 ...".
func (g *ackGaps) String() string {
	var b strings.Builder
	for _, x := range g.worst {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "p%d %.2fs at t=%.2fs", x.partition, x.d.Seconds(), x.from.Sub(g.start).Seconds())
	}
	return b.String()
}
