package cluster

import (
	"bytes"
	"testing"
)

// TestConsoleKey: the first call creates the key, every later one (from any
// node) reads the same.
func TestConsoleKey(t *testing.T) {
	m := startMember(t, "")
	a, b := New(newClient(t, m), quiet), New(newClient(t, m), quiet)
	first, err := a.ConsoleKey(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.ConsoleKey(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != ConsoleKeySize || !bytes.Equal(first, again) {
		t.Errorf("keys %x and %x: want one key of %d bytes", first, again, ConsoleKeySize)
	}
}
