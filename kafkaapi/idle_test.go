package kafkaapi_test

import (
	"testing"
	"time"

	"skiff/appliance"
)

// TestIdleTimeout checks connections.max.idle.ms: a silent connection, and one that
// stops in the middle of a request frame, are closed once the timeout passes (not
// before), while a connection that keeps talking stays open.
func TestIdleTimeout(t *testing.T) {
	const idle = 400 * time.Millisecond
	n, err := startNode(t.TempDir(), func(c *appliance.Config) { c.IdleTimeout = idle })
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()

	silent := dial(t, n.KafkaAddr())
	partial := dial(t, n.KafkaAddr())
	partial.write([]byte{0, 0, 0, 40, 0, 18}) // a 40-byte frame, 2 bytes of it sent
	busy := dial(t, n.KafkaAddr())
	for start := time.Now(); time.Since(start) < 3*idle; {
		advertisedProfile(t, busy)
		time.Sleep(idle / 8) // pacing the requests, not synchronising
	}
	silent.expectClosed("idle connection")
	partial.expectClosed("connection stalled inside a request frame")

	late := dial(t, n.KafkaAddr())
	start := time.Now()
	late.expectClosed("idle connection")
	if took := time.Since(start); took < idle {
		t.Errorf("closed after %v, before the idle timeout %v", took, idle)
	}
}
