package e2e

import (
	"fmt"
	"testing"

	"skiff/internal/testnode"
)

// BenchmarkProduceFlushPolicy compares produce throughput under each flush.policy
// on the same node in the same run: 1 KiB records, franz-go's defaults
// (idempotent, acks=all), 6 partitions of one replica, data directory in the test's
// temporary folder (so on its filesystem: put TMPDIR on a real disk).
//
//	go test ./e2e -run XXX -bench ProduceFlushPolicy -benchtime 100000x
func BenchmarkProduceFlushPolicy(b *testing.B) {
	n := testnode.Start(b)
	value := benchValue()
	for _, policy := range []string{"replicated", "always", "interval"} {
		b.Run(policy, func(b *testing.B) {
			topic := fmt.Sprintf("flush-%s-%d", policy, benchTopics.Add(1))
			createTopicWith(b, n.Addr, topic, 6, 1, map[string]string{"flush.policy": policy})
			produceAll(b, n.Addr, topic, value)
		})
	}
}
