// Package netlab builds small networks of network namespaces for tests (as root):
// one namespace per host, each with a veth into a bridge in a hub namespace, and
// addresses in 10.77.0.0/24 that exist only inside these namespaces. Links can be cut
// and healed to partition hosts. Everything is deleted by Close.
package netlab

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Lab is a hub bridge with hosts attached.
type Lab struct {
	t      testing.TB
	prefix string // namespace name prefix, unique per lab
	hub    string
	hosts  []*Host
}

// Host is one network namespace with one address.
type Host struct {
	lab  *Lab
	NS   string // namespace name, for `ip netns exec`
	IP   string // its address
	peer string // its veth end in the hub
}

// Available reports why network namespaces cannot be used here, or "".
func Available() string {
	if os.Geteuid() != 0 {
		return "network namespaces need root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "the ip command (iproute2) is missing"
	}
	return ""
}

// New creates a lab with n hosts at 10.77.0.1 .. 10.77.0.n; t.Cleanup deletes it.
func New(t testing.TB, n int) *Lab {
	t.Helper()
	l := &Lab{t: t, prefix: fmt.Sprintf("sk%d", os.Getpid()%100000)}
	l.hub = l.prefix + "-hub"
	t.Cleanup(l.Close)
	l.ip("netns", "add", l.hub)
	l.ip("-n", l.hub, "link", "add", "br0", "type", "bridge")
	l.ip("-n", l.hub, "link", "set", "br0", "up")
	for i := 1; i <= n; i++ {
		h := &Host{lab: l, NS: fmt.Sprintf("%s-n%d", l.prefix, i), IP: fmt.Sprintf("10.77.0.%d", i), peer: fmt.Sprintf("v%d", i)}
		l.ip("netns", "add", h.NS)
		l.ip("-n", h.NS, "link", "add", "eth0", "type", "veth", "peer", "name", h.peer, "netns", l.hub)
		l.ip("-n", l.hub, "link", "set", h.peer, "master", "br0")
		l.ip("-n", l.hub, "link", "set", h.peer, "up")
		l.ip("-n", h.NS, "link", "set", "lo", "up")
		l.ip("-n", h.NS, "addr", "add", h.IP+"/24", "dev", "eth0")
		l.ip("-n", h.NS, "link", "set", "eth0", "up")
		l.hosts = append(l.hosts, h)
	}
	return l
}

func (l *Lab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// Host returns host i (1-based).
func (l *Lab) Host(i int) *Host { return l.hosts[i-1] }

// Cut disconnects h from the bridge: it can reach nobody, nobody can reach it.
func (h *Host) Cut() { h.lab.ip("-n", h.lab.hub, "link", "set", h.peer, "down") }

// Heal reconnects h.
func (h *Host) Heal() { h.lab.ip("-n", h.lab.hub, "link", "set", h.peer, "up") }

// Command returns a command that runs inside h's namespace.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}

// DialContext dials from inside h's namespace: the socket is created on an OS thread
// that has entered the namespace, and belongs to it for its whole life. The thread is
// thrown away afterwards (the goroutine exits while locked to it).
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		f, err := os.Open("/var/run/netns/" + h.NS)
		if err != nil {
			ch <- result{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{nil, fmt.Errorf("enter namespace %s: %w", h.NS, err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// Close deletes every namespace of the lab (and with them their links).
func (l *Lab) Close() {
	for _, h := range l.hosts {
		exec.Command("ip", "netns", "del", h.NS).Run()
	}
	exec.Command("ip", "netns", "del", l.hub).Run()
}
