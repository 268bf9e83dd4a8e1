package systemd

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends a service's state to systemd over $NOTIFY_SOCKET. Outside systemd
// (NOTIFY_SOCKET unset) every method does nothing. A failed send is logged, not
// returned: a service manager that cannot be told something is no reason to stop
// serving, and systemd itself acts on what it did not hear (start timeout, watchdog).
type Notifier struct {
	logger *slog.Logger

	mu struct {
		sync.Mutex
		stopWatchdog context.CancelFunc // nil when no watchdog loop runs
		watchdogDone chan struct{}
	}
}

// NewNotifier returns a Notifier that logs send failures to logger.
func NewNotifier(logger *slog.Logger) *Notifier {
	return &Notifier{logger: logger}
}

// send writes one notification datagram of newline-separated assignments.
func (n *Notifier) send(lines ...string) {
	if _, err := daemon.SdNotify(false, strings.Join(lines, "\n")); err != nil {
		n.logger.Warn("cannot notify systemd", "state", lines[0], "err", err)
	}
}

// Status sets the one-line status `systemctl status` shows (STATUS=).
func (n *Notifier) Status(status string) { n.send(statusLine(status)) }

// Ready tells systemd the service serves (READY=1) with status as its STATUS=.
// With Type=notify, `systemctl start` returns only now.
func (n *Notifier) Ready(status string) { n.send(daemon.SdNotifyReady, statusLine(status)) }

// Stopping ends the watchdog loop, if one runs, and tells systemd the service is
// shutting down (STOPPING=1) with status as its STATUS=.
func (n *Notifier) Stopping(status string) {
	n.stopWatchdogLoop()
	n.send(daemon.SdNotifyStopping, statusLine(status))
}

// statusLine makes status one line: systemd shows STATUS= up to its first newline.
func statusLine(status string) string {
	return "STATUS=" + strings.ReplaceAll(status, "\n", " ")
}

// StartWatchdog starts the watchdog loop when systemd asks for one (WatchdogSec=
// sets WATCHDOG_USEC for this process): every third of the watchdog interval it runs
// check, bounded by that third, and sends WATCHDOG=1 only when check passes. A hung
// process sends nothing, and neither does an unhealthy one; systemd then kills and
// restarts the service once the interval passes without a ping. While check fails
// the status says why; readyStatus is set again when it passes. The loop runs until
// Stopping. Without WatchdogSec= StartWatchdog does nothing.
func (n *Notifier) StartWatchdog(check func(context.Context) error, readyStatus string) {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		n.logger.Warn("systemd watchdog settings unreadable; sending no watchdog pings", "err", err)
		return
	}
	if interval <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.mu.Lock()
	if n.mu.stopWatchdog != nil { // already running
		n.mu.Unlock()
		cancel()
		return
	}
	n.mu.stopWatchdog, n.mu.watchdogDone = cancel, done
	n.mu.Unlock()
	go func() {
		defer close(done)
		n.watchdogLoop(ctx, interval/3, check, readyStatus)
	}()
}

func (n *Notifier) watchdogLoop(ctx context.Context, every time.Duration, check func(context.Context) error, readyStatus string) {
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		cctx, cancel := context.WithTimeout(ctx, every)
		err := check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && failing:
			failing = false
			n.logger.Info("health check passes again; watchdog pings resume")
			n.send(daemon.SdNotifyWatchdog, statusLine(readyStatus))
		case err == nil:
			n.send(daemon.SdNotifyWatchdog)
		case !failing:
			failing = true
			n.logger.Warn("health check failed; no watchdog ping (systemd restarts the service if this lasts WatchdogSec)", "err", err)
			n.send(statusLine("unhealthy: " + err.Error()))
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

func (n *Notifier) stopWatchdogLoop() {
	n.mu.Lock()
	stop, done := n.mu.stopWatchdog, n.mu.watchdogDone
	n.mu.stopWatchdog, n.mu.watchdogDone = nil, nil
	n.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}
