package main

import (
	"strings"
	"testing"
)

func TestStartOffset(t *testing.T) {
	// The log holds offsets [10, 20).
	const logStart, end = 10, 20
	for _, tc := range []struct {
		name      string
		o         consumeOpts
		committed int64
		want      int64
	}{
		{"default: the end", consumeOpts{}, -1, 20},
		{"from beginning", consumeOpts{start: startAtBeginning}, -1, 10},
		{"offset inside", consumeOpts{start: startAtOffset, offset: 15}, -1, 15},
		{"offset before log start", consumeOpts{start: startAtOffset, offset: 3}, -1, 10},
		{"offset after end", consumeOpts{start: startAtOffset, offset: 99}, -1, 20},
		{"offset zero", consumeOpts{start: startAtOffset, offset: 0}, -1, 10},
		{"negative: from the end", consumeOpts{start: startAtOffset, offset: -3}, -1, 17},
		{"negative beyond the start", consumeOpts{start: startAtOffset, offset: -100}, -1, 10},
		{"group commit wins", consumeOpts{start: startAtBeginning}, 14, 14},
		{"group commit at end", consumeOpts{}, 20, 20},
		{"group commit below log start", consumeOpts{}, 2, 10},
		{"group commit past end", consumeOpts{}, 25, 20},
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

// TestConsumeFlagErrors checks that conflicting or bad flags are refused
// before any connection (the broker address is unroutable).
func TestConsumeFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"consume"}, "missing --topic"},
		{[]string{"consume", "-t", "x", "--from-beginning", "--offset", "3"}, "--from-beginning and --offset conflict"},
		{[]string{"consume", "-t", "x", "--offset", "-1", "--from-beginning"}, "--from-beginning and --offset conflict"},
		{[]string{"consume", "-t", "x", "-n", "0"}, "-n (--count) must be at least 1"},
		{[]string{"consume", "-t", "x", "--format", "xml"}, "invalid --format"},
		{[]string{"consume", "-t", "x", "--format", "json", "-K", ":"}, "--key-separator only applies to --format value"},
		{[]string{"consume", "-t", "x", "-p", "-2"}, "invalid --partition -2"},
		{[]string{"consume", "-t", "x", "-g", "g", "--offset", "1"}, "--offset cannot be used with --group"},
		{[]string{"consume", "-t", "x", "-g", "g", "-p", "1"}, "--partition cannot be used with --group"},
		{[]string{"consume", "-t", "x", "-g", ""}, "--group must not be empty"},
		{[]string{"consume", "-t", "x", "extra"}, `unexpected argument "extra"`},
	} {
		_, _, err := runApp(nil, append(tc.args, "-b", "192.0.2.1:9")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v; want it to contain %q", tc.args, err, tc.want)
		}
	}
}
