package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if goroutines outlive its tests: null servers,
// their connections and the clients of the tests are all closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
