package client

import (
	"fmt"
	"slices"
	"strings"
)

// endTracker follows ConsumeOptions.ExitAtEnd: which partitions have been read up to the
// end offset listed at start.
type endTracker struct {
	end     map[int32]int64 // first offset not to print
	pending map[int32]bool  // partitions not yet read to their end
}

func newEndTracker(starts, ends map[int32]int64) *endTracker {
	t := &endTracker{end: ends, pending: make(map[int32]bool)}
	for p, e := range ends {
		if starts[p] < e {
			t.pending[p] = true
		}
	}
	return t
}

// beyond reports whether offset off of partition p is at or past its end.
func (t *endTracker) beyond(p int32, off int64) bool {
	e, ok := t.end[p]
	return !ok || off >= e
}

// observe records that offset off of p was read and reports whether that
// completed p.
func (t *endTracker) observe(p int32, off int64) bool {
	if t.pending[p] && off+1 >= t.end[p] {
		delete(t.pending, p)
		return true
	}
	return false
}

func (t *endTracker) reachedEnd(p int32) bool { return !t.pending[p] }

func (t *endTracker) done() bool { return len(t.pending) == 0 }

// pendingString lists unfinished partitions, e.g. "0, 2 (end offsets 10, 7)".
func (t *endTracker) pendingString() string {
	ps := make([]int32, 0, len(t.pending))
	for p := range t.pending {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	ids := make([]string, len(ps))
	ends := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = fmt.Sprint(p)
		ends[i] = fmt.Sprint(t.end[p])
	}
	return fmt.Sprintf("%s (end offsets %s)", strings.Join(ids, ", "), strings.Join(ends, ", "))
}
