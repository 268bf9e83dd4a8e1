package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// node is one `skiff serve` process on loopback with its own ports.
type node struct {
	bin, data            string
	kafka, http          string
	etcdClient, etcdPeer string
	extra                []string // more serve flags
	cmd                  *exec.Cmd
	exited               chan error
}

// portBase, when set (-port-base), is the first of the 100 loopback ports the
// nodes may use, so that two runs given different bases cannot collide;
// freePort hands them out in turn, wrapping around and skipping any in use.
// Otherwise the kernel picks free ports.
var portBase, portsUsed int

func freePort() (string, error) {
	addr, tried := "127.0.0.1:0", 0
	for portBase > 0 {
		if tried++; tried > 100 {
			return "", fmt.Errorf("ports %d..%d all in use", portBase, portBase+99)
		}
		addr = fmt.Sprintf("127.0.0.1:%d", portBase+portsUsed%100)
		portsUsed++
		l, err := net.Listen("tcp", addr)
		if err == nil {
			l.Close()
			return addr, nil
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func newNode(bin, data string) (*node, error) {
	n := &node{bin: bin, data: data}
	for _, p := range []*string{&n.kafka, &n.http, &n.etcdClient, &n.etcdPeer} {
		a, err := freePort()
		if err != nil {
			return nil, err
		}
		*p = a
	}
	return n, nil
}

// start runs the node and returns how long it took to answer /readyz with 200.
func (n *node) start(ctx context.Context) (time.Duration, error) {
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(n.data), "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	args := []string{"serve", "--data-dir", n.data, "--listen", n.kafka, "--http", n.http,
		"--etcd-client", n.etcdClient, "--etcd-peer", n.etcdPeer, "--log-format", "json", "--pprof"}
	n.cmd = exec.Command(n.bin, append(args, n.extra...)...)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	began := time.Now()
	if err := n.cmd.Start(); err != nil {
		return 0, err
	}
	n.exited = make(chan error, 1)
	go func() { n.exited <- n.cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-n.exited:
			return 0, fmt.Errorf("skiff serve exited before it was ready: %v (log: %s)", err, logf.Name())
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
		}
		if resp, err := http.Get("http://" + n.http + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(began), nil
			}
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not a wait for a condition
	}
	return 0, errors.New("not ready within 10 minutes")
}

// stop sends sig and returns how long the process took to exit.
func (n *node) stop(sig syscall.Signal) (time.Duration, error) {
	began := time.Now()
	if err := n.cmd.Process.Signal(sig); err != nil {
		return 0, err
	}
	select {
	case <-n.exited:
		return time.Since(began), nil
	case <-time.After(5 * time.Minute):
		_ = n.cmd.Process.Kill()
		return 0, errors.New("did not exit within 5 minutes")
	}
}

// procStat is what /proc says of the node's process.
type procStat struct {
	cpuTicks int64 // utime + stime, in clock ticks (USER_HZ, 100 on Linux)
	rssKB    int64
	threads  int64
	fds      int
}

const ticksPerSecond = 100

func (n *node) stat() (procStat, error) {
	pid := n.cmd.Process.Pid
	var st procStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stt, _ := strconv.ParseInt(f[12], 10, 64)
	st.cpuTicks = ut + stt
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(string(s), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSuffix(strings.TrimSpace(v), " kB")
		switch k {
		case "VmRSS":
			st.rssKB, _ = strconv.ParseInt(v, 10, 64)
		case "Threads":
			st.threads, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return st, err
	}
	st.fds = len(fds)
	return st, nil
}
