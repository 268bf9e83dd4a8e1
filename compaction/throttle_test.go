package compaction

import (
	"context"
	"testing"
	"time"
)

// TestThrottle: 3 MB through a 1 MB/s throttle (from two goroutines, as two
// cleaner threads) takes about 2 s beyond the first second's allowance, never
// less; unlimited takes no time; a canceled context ends the wait.
func TestThrottle(t *testing.T) {
	th := newThrottle(1 << 20)
	start := time.Now()
	done := make(chan struct{})
	for range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 48 {
				if err := th.wait(context.Background(), 32<<10); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	<-done
	<-done
	if took := time.Since(start); took < 1900*time.Millisecond {
		t.Fatalf("3 MiB at 1 MiB/s took %v", took)
	}
	free := newThrottle(0)
	start = time.Now()
	for range 1000 {
		if err := free.wait(context.Background(), 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("unlimited throttle took %v", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := newThrottle(1).wait(ctx, 1<<20); err == nil {
		t.Fatal("wait ignored a canceled context")
	}
}
