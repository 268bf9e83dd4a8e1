// Package leakcheck is the goleak check of TestMain for packages whose tests run
// etcd members. etcd has no permanent leak there, but a slow one: after a
// multi-member test, an idle keep-alive connection of a member's peer round tripper
// (used to ask other members for their versions) and the peer server's connection
// goroutine stay until etcd's peer read timeout (5 s) ends the blocked read. So the
// check waits up to Wait for goroutines to end; goleak's own retry gives up after
// about a second. No goroutine is ignored.
package leakcheck

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Wait is how long Main waits for goroutines to end.
const Wait = 10 * time.Second

// Main runs m's tests, then each of after (closing what the tests share), and, when
// all passed, fails the run if goroutines outlive them by more than Wait. It exits
// the process.
func Main(m *testing.M, after ...func() error) {
	code := m.Run()
	for _, f := range after {
		if err := f(); err != nil {
			fmt.Fprintf(os.Stderr, "after the tests: %v\n", err)
			code = 1
		}
	}
	if code == 0 {
		start := time.Now()
		if err := Find(Wait); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		} else if d := time.Since(start); d > time.Second {
			fmt.Fprintf(os.Stderr, "goleak: goroutines took %v to end\n", d.Round(time.Millisecond))
		}
	}
	os.Exit(code)
}

// Find waits up to wait for the goroutines other than the caller's to end: nil as
// soon as there are none, else goleak's error listing those still running.
func Find(wait time.Duration) error {
	start := time.Now()
	err := goleak.Find()
	for err != nil && time.Since(start) < wait {
		time.Sleep(100 * time.Millisecond) // polling a condition, not synchronising
		err = goleak.Find()
	}
	return err
}
