package main

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	if got := setMemoryLimit(0, ""); got != 512<<20 || debug.SetMemoryLimit(-1) != 512<<20 {
		t.Errorf("default: %d, runtime %d; want 512 MiB", got, debug.SetMemoryLimit(-1))
	}
	if got := setMemoryLimit(1<<30, ""); got != 1<<30+256<<20 {
		t.Errorf("1 GiB of requests: %d", got)
	}
	// GOMEMLIMIT wins: the runtime's limit (here the one the test process started
	// with) stays.
	debug.SetMemoryLimit(math.MaxInt64)
	if got := setMemoryLimit(1<<30, "2GiB"); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: %d, want the runtime's limit left alone", got)
	}
}
