package e2e

import (
	"os"
	"testing"
	"time"

	"skiff/internal/testnode"
)

// BenchmarkFormCluster compares forming a cluster plain (a bootstrap, then joins
// naming etcd's client address) and with --secure (a bootstrap that makes the
// cluster CA, then joins with join tokens over the HTTP port, each receiving a
// node certificate), one and three nodes, alternately in the same run. Each
// figure is the seconds from the first process start until every node lists
// every broker live. The nodes are killed and their data removed after each
// round.
//
//	go test ./e2e -run XXX -bench FormCluster -benchtime 5x
func BenchmarkFormCluster(b *testing.B) {
	kinds := []struct {
		name  string
		count int
		start func(testing.TB, int, ...string) []*testnode.Node
	}{
		{"plain-1", 1, testnode.StartCluster},
		{"secure-1", 1, testnode.StartSecureCluster},
		{"plain-3", 3, testnode.StartCluster},
		{"secure-3", 3, testnode.StartSecureCluster},
	}
	testnode.Binary(b) // built before the clock starts
	took := make([]time.Duration, len(kinds))
	rounds := 0
	for b.Loop() {
		for i, k := range kinds {
			t0 := time.Now()
			nodes := k.start(b, k.count)
			took[i] += time.Since(t0)
			for _, n := range nodes {
				n.Kill()
				if err := os.RemoveAll(n.DataDir); err != nil {
					b.Fatal(err)
				}
			}
		}
		rounds++
	}
	for i, k := range kinds {
		b.ReportMetric(took[i].Seconds()/float64(rounds), k.name+"-s/op")
	}
}
