package appliance

import (
	"runtime/debug"

	"skiff/compaction"
	"skiff/kafkaapi"
)

// memoryHeadroom is what a node uses besides the requests it is reading and
// handling: about 40 MB idle and 71 MB under a produce benchmark
// (docs/performance.md), most of it Pebble's cache and memtables, etcd and the
// Go runtime.
const memoryHeadroom = 256 << 20

// SetMemoryLimit gives the Go runtime of a node a soft memory limit, unless GOMEMLIMIT (env)
// already set one: the memory requests may take together
// (queued-max-request-bytes, requestBudget), plus the log cleaner's key maps at
// their largest (log-cleaner-dedupe-buffer-size, cleanerBudget), plus headroom:
// 640 MiB by default.
// Near the limit the collector runs more often rather than letting the heap grow
// to twice what is live (GOGC=100) after a burst of large requests; it is a
// target, not a cap that fails allocations. It returns the limit in effect.
func SetMemoryLimit(requestBudget, cleanerBudget int64, env string) int64 {
	if env != "" {
		return debug.SetMemoryLimit(-1) // the runtime read GOMEMLIMIT at start
	}
	if requestBudget <= 0 {
		requestBudget = kafkaapi.DefaultQueuedMaxRequestBytes
	}
	if cleanerBudget <= 0 {
		cleanerBudget = compaction.DefaultDedupeBufferSize
	}
	limit := requestBudget + cleanerBudget + memoryHeadroom
	debug.SetMemoryLimit(limit)
	return limit
}
