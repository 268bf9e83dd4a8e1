package appliance

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	if got := SetMemoryLimit(0, 0, ""); got != 640<<20 || debug.SetMemoryLimit(-1) != 640<<20 {
		t.Errorf("default: %d, runtime %d; want 640 MiB", got, debug.SetMemoryLimit(-1))
	}
	if got := SetMemoryLimit(1<<30, 1<<20, ""); got != 1<<30+1<<20+256<<20 {
		t.Errorf("1 GiB of requests, 1 MiB of key maps: %d", got)
	}
	// GOMEMLIMIT wins: the runtime's limit (here the one the test process started
	// with) stays.
	debug.SetMemoryLimit(math.MaxInt64)
	if got := SetMemoryLimit(1<<30, 0, "2GiB"); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: %d, want the runtime's limit left alone", got)
	}
}
