package console

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkHistoryMemory measures the heap a node's full rate history takes at
// 1,000 topics, 10,000 partitions led here and 300 groups: 15 minutes of samples
// (the figure docs/console.md gives per node).
func BenchmarkHistoryMemory(b *testing.B) {
	l := Local{}
	for t := range 1000 {
		for p := range 10 {
			l.Replicas = append(l.Replicas, Replica{Topic: fmt.Sprintf("topic-%04d", t), Partition: int32(p), Leader: true})
		}
	}
	lag := map[string]int64{}
	for g := range 300 {
		lag[fmt.Sprintf("group-%03d", g)] = 1
	}
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		h := NewHistory(DefaultStep, DefaultWindow)
		now := time.Now()
		for i := range int(DefaultWindow / DefaultStep) {
			for j := range l.Replicas {
				l.Replicas[j].LogEnd += 10
			}
			h.Sample(now.Add(time.Duration(i)*DefaultStep), l, lag)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/node")
		runtime.KeepAlive(h)
	}
}
