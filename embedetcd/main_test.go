package embedetcd

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if goroutines outlive the tests. etcd has no
// permanent leak here, but it has a slow one: after a multi-member test, an
// idle keep-alive connection of a member's peer round tripper (used to ask
// other members for their versions) and the peer server's connection
// goroutine stay until etcd's peer read timeout (5 s) ends the blocked read.
// So the check waits up to 10 s for goroutines to finish; goleak's own retry
// gives up after about a second.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		start := time.Now()
		err := goleak.Find()
		for err != nil && time.Since(start) < 10*time.Second {
			time.Sleep(100 * time.Millisecond) // polling a condition, not synchronising
			err = goleak.Find()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		} else if d := time.Since(start); d > time.Second {
			fmt.Fprintf(os.Stderr, "goleak: goroutines took %v to end\n", d.Round(time.Millisecond))
		}
	}
	os.Exit(code)
}
