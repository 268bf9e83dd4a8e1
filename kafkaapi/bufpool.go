package kafkaapi

import (
	"math/bits"
	"sync"
)

// Request frames and response bytes live in buffers borrowed per request from
// size-classed pools (powers of two from 4 KiB to 16 MiB) and returned once the
// answer is written. An idle connection holds no buffer, so memory follows the
// requests in progress (bounded by the budget), not the connections; sync.Pool
// drops what is not reused within two garbage collections. Larger buffers are
// allocated for the request and left to the collector.
//
// The classes reach 16 MiB because producers batch up to 1 MB per partition, so a
// produce request to a few partitions is several MiB: allocating, zeroing and
// collecting those per request took about a third of a node's CPU under load
// (docs/performance.md).
const (
	minPooledShift = 12 // 4 KiB
	maxPooledShift = 24 // 16 MiB
)

var bufPools [maxPooledShift - minPooledShift + 1]sync.Pool

// getBuf returns a buffer of length n; its capacity may be larger.
func getBuf(n int) []byte {
	shift := max(bits.Len(uint(max(n, 1)-1)), minPooledShift) // smallest class holding n
	if shift > maxPooledShift {
		return make([]byte, n)
	}
	if bp, ok := bufPools[shift-minPooledShift].Get().(*[]byte); ok {
		return (*bp)[:n]
	}
	return make([]byte, n, 1<<shift)
}

// putBuf returns b to the pool of the largest class its capacity covers (buffers
// of 32 MiB and more are left to the collector). b must not be used afterwards.
func putBuf(b []byte) {
	shift := bits.Len(uint(cap(b))) - 1 // largest class not above cap(b)
	if shift < minPooledShift || shift > maxPooledShift {
		return
	}
	b = b[:0]
	bufPools[shift-minPooledShift].Put(&b)
}
