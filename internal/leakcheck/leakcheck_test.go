package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func TestFind(t *testing.T) {
	if err := Find(0); err != nil {
		t.Fatalf("no goroutines started: %v", err)
	}

	release := make(chan struct{})
	go func() { <-release }()
	err := Find(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "TestFind") {
		t.Fatalf("a blocked goroutine: %v, want it named (started by TestFind)", err)
	}
	close(release)
	if err := Find(Wait); err != nil {
		t.Fatalf("after its release: %v", err)
	}

	// A goroutine that takes a while to end is waited for.
	go func() { <-time.After(300 * time.Millisecond) }()
	start := time.Now()
	if err := Find(Wait); err != nil {
		t.Fatalf("a slow goroutine: %v", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("Find returned after %v, before the goroutine could end", d)
	}
}
