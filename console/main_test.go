package console_test

import (
	"testing"

	"skiff/internal/leakcheck"
)

// TestMain fails the package if goroutines outlive the tests (the console's
// sampler, the benchmark's etcd member).
func TestMain(m *testing.M) { leakcheck.Main(m) }
