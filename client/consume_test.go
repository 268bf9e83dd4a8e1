package client

import "testing"

func TestStartOffset(t *testing.T) {
	// The log holds offsets [10, 20).
	const logStart, end = 10, 20
	for _, tc := range []struct {
		name      string
		o         ConsumeOptions
		committed int64
		want      int64
	}{
		{"default: the end", ConsumeOptions{}, -1, 20},
		{"from beginning", ConsumeOptions{Start: StartAtBeginning}, -1, 10},
		{"offset inside", ConsumeOptions{Start: StartAtOffset, Offset: 15}, -1, 15},
		{"offset before log start", ConsumeOptions{Start: StartAtOffset, Offset: 3}, -1, 10},
		{"offset after end", ConsumeOptions{Start: StartAtOffset, Offset: 99}, -1, 20},
		{"offset zero", ConsumeOptions{Start: StartAtOffset, Offset: 0}, -1, 10},
		{"negative: from the end", ConsumeOptions{Start: StartAtOffset, Offset: -3}, -1, 17},
		{"negative beyond the start", ConsumeOptions{Start: StartAtOffset, Offset: -100}, -1, 10},
		{"group commit wins", ConsumeOptions{Start: StartAtBeginning}, 14, 14},
		{"group commit at end", ConsumeOptions{}, 20, 20},
		{"group commit below log start", ConsumeOptions{}, 2, 10},
		{"group commit past end", ConsumeOptions{}, 25, 20},
	} {
		if got := startOffset(tc.o, logStart, end, tc.committed); got != tc.want {
			t.Errorf("%s: startOffset = %d; want %d", tc.name, got, tc.want)
		}
	}
}

func TestEndTracker(t *testing.T) {
	starts := map[int32]int64{0: 0, 1: 5, 2: 3}
	ends := map[int32]int64{0: 3, 1: 5, 2: 4} // partition 1 is empty from its start
	tr := newEndTracker(starts, ends)
	if tr.done() || !tr.reachedEnd(1) || tr.reachedEnd(0) {
		t.Fatalf("initial state wrong: pending %v", tr.pending)
	}
	if got := tr.pendingString(); got != "0, 2 (end offsets 3, 4)" {
		t.Errorf("pendingString = %q", got)
	}
	if tr.beyond(0, 2) || !tr.beyond(0, 3) || !tr.beyond(7, 0) {
		t.Error("beyond wrong")
	}
	if tr.observe(0, 1) {
		t.Error("offset 1 of 3 completed partition 0")
	}
	if !tr.observe(0, 2) {
		t.Error("offset 2 of 3 did not complete partition 0")
	}
	if tr.observe(0, 2) {
		t.Error("partition 0 completed twice")
	}
	// A skipped offset (compaction, a control batch) still completes.
	if !tr.observe(2, 9) || !tr.done() {
		t.Errorf("not done: pending %v", tr.pending)
	}

	if tr := newEndTracker(map[int32]int64{0: 5}, map[int32]int64{0: 5}); !tr.done() {
		t.Error("a partition starting at its end is not done")
	}
}
