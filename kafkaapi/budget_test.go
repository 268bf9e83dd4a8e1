package kafkaapi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestBudget checks the request memory semaphore: grants up to its size, FIFO
// order (a large waiter is not overtaken by small ones), cancellation that gives
// back nothing it did not get.
func TestBudget(t *testing.T) {
	var used int64
	b := newBudget(100, func(n int64) { used = n })
	ctx := context.Background()
	if err := b.acquire(ctx, 60); err != nil {
		t.Fatal(err)
	}
	large := make(chan error, 1)
	go func() { large <- b.acquire(ctx, 80) }()
	waitQueued(t, b, 1)
	small := make(chan error, 1)
	go func() { small <- b.acquire(ctx, 10) }() // fits, but queues behind the large one
	waitQueued(t, b, 2)
	select {
	case err := <-small:
		t.Fatalf("small acquire overtook the large waiter: %v", err)
	default:
	}
	b.release(60)
	if err := <-large; err != nil {
		t.Fatal(err)
	}
	if err := <-small; err != nil {
		t.Fatal(err)
	}
	if used != 90 {
		t.Fatalf("used %d, want 90", used)
	}

	// A canceled waiter leaves the queue and holds nothing.
	cctx, cancel := context.WithCancel(ctx)
	canceled := make(chan error, 1)
	go func() { canceled <- b.acquire(cctx, 50) }()
	waitQueued(t, b, 1)
	cancel()
	if err := <-canceled; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled acquire: %v", err)
	}
	b.release(90)
	if used != 0 || len(b.waiters) != 0 {
		t.Fatalf("after releasing everything: used %d, %d waiters", used, len(b.waiters))
	}
}

func waitQueued(t *testing.T, b *budget, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		got := len(b.waiters)
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", got, n)
		}
		time.Sleep(time.Millisecond) // polling a condition, not synchronising
	}
}

// TestRefusalLog checks that refusals are logged once per address and reason within
// the window, then once more with the count of those not logged, and that the
// addresses remembered are bounded.
func TestRefusalLog(t *testing.T) {
	var buf bytes.Buffer
	r := newRefusalLog(slog.New(slog.NewTextHandler(&buf, nil)))
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	lines := func() int { return strings.Count(buf.String(), "\n") }

	for range 5 {
		r.refuse("read_timeout", "10.0.0.1", "closing")
	}
	r.refuse("read_timeout", "10.0.0.2", "closing")
	r.refuse("request_size", "10.0.0.1", "closing")
	if got := lines(); got != 3 {
		t.Fatalf("%d lines, want 3:\n%s", got, buf.String())
	}
	now = now.Add(refusalLogWindow)
	r.refuse("read_timeout", "10.0.0.1", "closing")
	if !strings.Contains(buf.String(), "refused_unlogged=4") {
		t.Fatalf("the line after the window does not count the 4 refusals not logged:\n%s", buf.String())
	}

	// Many addresses: remembered up to maxRefusalKeys, the rest summarised once.
	buf.Reset()
	for i := range maxRefusalKeys + 100 {
		r.refuse("malformed_request", "addr-"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+time.Duration(i).String(), "closing")
	}
	if len(r.mu.seen) > maxRefusalKeys {
		t.Fatalf("%d addresses remembered, at most %d", len(r.mu.seen), maxRefusalKeys)
	}
	if got := strings.Count(buf.String(), "too many addresses"); got != 1 {
		t.Fatalf("%d overflow summaries, want 1", got)
	}
}

// TestBufPool checks the size classes: a buffer holds what was asked, buffers are
// reused by size class, and large ones are not pooled.
func TestBufPool(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 1 << 20, 1<<20 + 1, 5 << 20} {
		b := getBuf(n)
		if len(b) != n {
			t.Fatalf("getBuf(%d): length %d", n, len(b))
		}
		if n <= 1<<20 && cap(b) > max(2*n, 4096) {
			t.Fatalf("getBuf(%d): capacity %d", n, cap(b))
		}
		putBuf(b)
	}
	putBuf(make([]byte, 0, 3<<20)) // not pooled: must not come back for a 1 MiB request
	if b := getBuf(1 << 20); cap(b) > 2<<20 {
		t.Fatalf("a %d-byte buffer came back from the pool", cap(b))
	}
}
