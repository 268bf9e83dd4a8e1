package embedetcd

import (
	"testing"

	"skiff/internal/leakcheck"
)

// TestMain fails the package if goroutines outlive the tests, waiting for etcd's
// slow ones to end (see leakcheck).
func TestMain(m *testing.M) { leakcheck.Main(m) }
