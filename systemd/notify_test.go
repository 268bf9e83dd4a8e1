package systemd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeManager listens where systemd would ($NOTIFY_SOCKET) and returns the
// datagrams it receives.
type fakeManager struct {
	t    *testing.T
	conn *net.UnixConn
}

func newFakeManager(t *testing.T) *fakeManager {
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return &fakeManager{t: t, conn: conn}
}

// next returns the next datagram, failing the test if none comes within 10s.
func (f *fakeManager) next() string {
	f.t.Helper()
	buf := make([]byte, 4096)
	f.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := f.conn.Read(buf)
	if err != nil {
		f.t.Fatalf("no notification: %v", err)
	}
	return string(buf[:n])
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestNotifications(t *testing.T) {
	m := newFakeManager(t)
	n := NewNotifier(quietLogger())
	n.Status("starting: etcd")
	if got, want := m.next(), "STATUS=starting: etcd"; got != want {
		t.Errorf("Status sent %q, want %q", got, want)
	}
	n.Ready("ready: Kafka on [::]:9092\nHTTP on [::]:9644")
	if got, want := m.next(), "READY=1\nSTATUS=ready: Kafka on [::]:9092 HTTP on [::]:9644"; got != want {
		t.Errorf("Ready sent %q, want %q", got, want)
	}
	n.Stopping("stopping")
	if got, want := m.next(), "STOPPING=1\nSTATUS=stopping"; got != want {
		t.Errorf("Stopping sent %q, want %q", got, want)
	}
}

// Outside systemd nothing is sent and nothing fails; a watchdog is not started.
func TestNoServiceManager(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "")
	n := NewNotifier(quietLogger())
	var calls atomic.Int32
	n.Status("x")
	n.Ready("x")
	n.StartWatchdog(func(context.Context) error { calls.Add(1); return nil }, "x")
	n.Stopping("x")
	if calls.Load() != 0 {
		t.Errorf("watchdog check ran %d times without WATCHDOG_USEC", calls.Load())
	}
}

// A watchdog meant for another process (WATCHDOG_PID) is not ours to feed.
func TestWatchdogOtherPID(t *testing.T) {
	newFakeManager(t)
	t.Setenv("WATCHDOG_USEC", "30000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))
	n := NewNotifier(quietLogger())
	var calls atomic.Int32
	n.StartWatchdog(func(context.Context) error { calls.Add(1); return nil }, "ready")
	n.Stopping("stopping")
	if calls.Load() != 0 {
		t.Errorf("watchdog check ran %d times for another process's watchdog", calls.Load())
	}
}

// WATCHDOG=1 is sent only while the check passes: a failing check sends one
// STATUS=unhealthy and then no ping at all until it passes again, when the ready
// status is restored. Stopping ends the loop before STOPPING=1.
func TestWatchdogFollowsHealth(t *testing.T) {
	m := newFakeManager(t)
	t.Setenv("WATCHDOG_USEC", "150000") // 150 ms: a check every 50 ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	var healthy atomic.Bool
	var failedChecks atomic.Int32
	healthy.Store(true)
	check := func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("check called without a deadline")
		}
		if healthy.Load() {
			return nil
		}
		failedChecks.Add(1)
		return errors.New("etcd: no leader")
	}
	n := NewNotifier(quietLogger())
	n.StartWatchdog(check, "ready: serving")
	n.StartWatchdog(check, "ready: serving") // a second start is ignored

	for range 3 {
		if got := m.next(); got != "WATCHDOG=1" {
			t.Fatalf("healthy node sent %q, want WATCHDOG=1", got)
		}
	}
	healthy.Store(false)
	for {
		got := m.next()
		if got == "STATUS=unhealthy: etcd: no leader" {
			break
		}
		if got != "WATCHDOG=1" {
			t.Fatalf("unexpected %q before the unhealthy status", got)
		}
	}
	// Several failed checks pass without a single datagram; then health returns.
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	deadline := time.After(10 * time.Second)
	for failedChecks.Load() < 4 {
		select {
		case <-poll.C:
		case <-deadline:
			t.Fatal("the watchdog loop stopped checking")
		}
	}
	healthy.Store(true)
	if got, want := m.next(), "WATCHDOG=1\nSTATUS=ready: serving"; got != want {
		t.Fatalf("after %d failed checks the first datagram is %q, want %q", failedChecks.Load(), got, want)
	}
	n.Stopping("stopping")
	for {
		got := m.next()
		if got == "STOPPING=1\nSTATUS=stopping" {
			break
		}
		if got != "WATCHDOG=1" {
			t.Fatalf("unexpected %q before STOPPING=1", got)
		}
	}
}

func TestStatusIsOneLine(t *testing.T) {
	if got := statusLine("a\nb"); strings.Contains(got, "\n") {
		t.Errorf("statusLine kept a newline: %q", got)
	}
}
