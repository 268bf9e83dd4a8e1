// Package testnode runs real `skiff serve` processes for tests: the binary is built
// once per test process from this module, and every node gets its own data
// directory. Its Kafka and HTTP ports are chosen by the kernel (port 0) and read
// from the node's "skiff is ready" log line, so they cannot race; its etcd ports,
// which other nodes must know before it starts, are picked by freeport below the
// kernel's ephemeral range.
package testnode

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"skiff/internal/freeport"
	"skiff/internal/netlab"
	"skiff/internal/syncbuf"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the path of a skiff binary built from this module
// (CGO_ENABLED=0, as the product is always built), building it on first use.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "skiff-testbin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "skiff")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/skiff")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/skiff: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Node is one running `skiff serve` process.
type Node struct {
	// DataDir is the node's data directory; it survives Kill and Stop.
	DataDir string
	// Addr is the Kafka address (of the first listener), HTTPAddr the HTTP
	// address, of the current run.
	Addr, HTTPAddr string
	// Listeners are the addresses of the Kafka listeners by name (--listeners),
	// of the current run.
	Listeners map[string]string
	// EtcdClient and EtcdPeer are the embedded etcd member's addresses; they stay
	// the same across restarts (the peer address is part of etcd's membership).
	EtcdClient, EtcdPeer string
	// ID is the broker id, read from the ready line.
	ID int32
	// Args are extra serve arguments, kept across restarts.
	Args []string
	// Host, when set, is the network namespace the node runs in (NewIn); its
	// addresses are Host.IP with the default ports.
	Host *netlab.Host

	t    testing.TB
	cmd  *exec.Cmd
	logs *syncbuf.Buffer
	done chan struct{} // closed when the process has exited
	err  error         // exit error, valid after done
}

// Start runs a node with a fresh data directory and waits until it is ready. Extra
// args are passed to `skiff serve`. The node is stopped when the test ends.
func Start(t testing.TB, args ...string) *Node {
	t.Helper()
	n := New(t, args...)
	n.Restart()
	return n
}

// New prepares a node (data directory, etcd ports) without starting it; Restart
// starts it. The node is stopped when the test ends.
func New(t testing.TB, args ...string) *Node {
	t.Helper()
	n := &Node{DataDir: filepath.Join(t.TempDir(), "data"), Args: args, t: t,
		EtcdClient: freeAddr(t), EtcdPeer: freeAddr(t)}
	t.Cleanup(func() {
		if n.Running() {
			n.Stop()
		}
		if t.Failed() {
			t.Logf("logs of node %s:\n%s", n.DataDir, n.Logs())
		}
	})
	return n
}

// NewIn prepares a node that runs inside the network namespace of host, listening on
// host.IP with the default ports.
func NewIn(t testing.TB, host *netlab.Host, args ...string) *Node {
	t.Helper()
	n := New(t, args...)
	n.Host = host
	n.EtcdClient, n.EtcdPeer = host.IP+":9093", host.IP+":9094"
	return n
}

// freeAddr returns a loopback address with a port that was free a moment ago, below
// the kernel's ephemeral range (freeport): a joining node binds its etcd ports
// seconds after they were chosen.
func freeAddr(t testing.TB) string {
	t.Helper()
	port, err := freeport.Pick("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// StartCluster starts n nodes: the first bootstraps, the others join it one by one.
// Extra args go to every node.
func StartCluster(t testing.TB, count int, args ...string) []*Node {
	t.Helper()
	nodes := []*Node{Start(t, args...)}
	for i := 1; i < count; i++ {
		nodes = append(nodes, Start(t, append([]string{"--join", nodes[0].EtcdClient}, args...)...))
	}
	// Every node must know every broker before a test creates a topic through it, or
	// the topic could be placed on fewer brokers than the test means.
	for _, n := range nodes {
		n.WaitLiveBrokers(count)
	}
	return nodes
}

// StartSecureCluster starts count nodes of a cluster formed with --secure: the
// first bootstraps it and prints a join token, with which the second joins; each
// further one joins with a token that `skiff cluster join-token` makes through
// the first node's HTTP port, authenticated by its certificate. Extra args go to
// every node.
func StartSecureCluster(t testing.TB, count int, args ...string) []*Node {
	t.Helper()
	first := Start(t, append([]string{"--bootstrap", "--secure"}, args...)...)
	nodes := []*Node{first}
	for i := 1; i < count; i++ {
		token := first.PrintedJoinToken()
		if i > 1 {
			token = NewJoinToken(t, first)
		}
		nodes = append(nodes, Start(t, append([]string{"--join", first.HTTPAddr, "--join-token", token}, args...)...))
	}
	for _, n := range nodes {
		n.WaitLiveBrokers(count)
	}
	return nodes
}

// PrintedJoinToken is the join token the node printed when it formed a secure
// cluster.
func (n *Node) PrintedJoinToken() string {
	n.t.Helper()
	for _, line := range strings.Split(n.Logs(), "\n") {
		if tok := strings.TrimSpace(line); strings.HasPrefix(tok, "skiff1.") {
			return tok
		}
	}
	n.t.Fatalf("node %d printed no join token; logs:\n%s", n.ID, n.Logs())
	return ""
}

// NewJoinToken makes a join token with `skiff cluster join-token` through n's
// HTTP port, authenticated by n's certificate. Extra args go to the command.
func NewJoinToken(t testing.TB, n *Node, args ...string) string {
	t.Helper()
	out, errOut, err := Run(t, 30*time.Second, append([]string{"cluster", "join-token", "--http", n.HTTPAddr, "--data-dir", n.DataDir}, args...)...)
	if err != nil {
		t.Fatalf("skiff cluster join-token: %v\n%s", err, errOut)
	}
	return strings.TrimSpace(out)
}

// Secure reports whether the node's data directory holds the material of a
// cluster formed with --secure.
func (n *Node) Secure() bool {
	_, err := os.Stat(filepath.Join(n.DataDir, "secure", "ca.pem"))
	return err == nil
}

// AdminGet GETs path of the node's admin API: over HTTPS with the node's own
// certificate when it is secure. It returns the status and body.
func (n *Node) AdminGet(path string) (int, []byte, error) {
	client, scheme := http.DefaultClient, "http://"
	if n.Secure() {
		c, err := n.HTTPSClient()
		if err != nil {
			return 0, nil, err
		}
		client, scheme = c, "https://"
	}
	resp, err := client.Get(scheme + n.HTTPAddr + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// HTTPSClient trusts the CA of a secure node and presents its certificate.
func (n *Node) HTTPSClient() (*http.Client, error) {
	dir := filepath.Join(n.DataDir, "secure")
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "node.pem"), filepath.Join(dir, "node-key.pem"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}, nil
}

// WaitLiveBrokers waits until the node's admin API lists count live brokers.
func (n *Node) WaitLiveBrokers(count int) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var st struct {
			Brokers []struct{ Live bool } `json:"brokers"`
		}
		live := 0
		if _, body, err := n.AdminGet("/v1/cluster"); err == nil && json.Unmarshal(body, &st) == nil {
			for _, b := range st.Brokers {
				if b.Live {
					live++
				}
			}
		}
		if live == count {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("node %d lists %d live brokers, want %d", n.ID, live, count)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
}

// Restart starts the node again on its data directory (after Kill or Stop) and
// waits until it is ready. The Kafka port stays the same, so clients reconnect;
// the other ports are new.
func (n *Node) Restart() {
	n.t.Helper()
	listen, httpAddr := "127.0.0.1:0", "127.0.0.1:0"
	if n.Addr != "" {
		listen = n.Addr
	}
	if n.Host != nil {
		listen, httpAddr = n.Host.IP+":9092", n.Host.IP+":9644"
	}
	args := append([]string{"serve",
		"--data-dir", n.DataDir,
		"--listen", listen,
		"--etcd-client", n.EtcdClient,
		"--etcd-peer", n.EtcdPeer,
		"--http", httpAddr,
		"--log-format", "json",
	}, n.Args...)
	n.cmd = exec.Command(Binary(n.t), args...)
	if n.Host != nil {
		n.cmd = n.Host.Command(Binary(n.t), args...)
	}
	n.cmd.Env = cleanEnv()
	if n.logs == nil {
		n.logs = &syncbuf.Buffer{}
	}
	pr, pw := io.Pipe()
	n.cmd.Stderr = pw
	n.cmd.Stdout = n.logs
	if err := n.cmd.Start(); err != nil {
		n.t.Fatalf("start skiff serve: %v", err)
	}
	n.done = make(chan struct{})
	go func() {
		n.err = n.cmd.Wait()
		pw.Close()
		close(n.done)
	}()
	type readyLine struct {
		Msg, Kafka, HTTP, Listeners string
		NodeID                      int32 `json:"node_id"`
	}
	ready := make(chan readyLine, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			n.logs.Write(append(line, '\n'))
			var rec readyLine
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "skiff is ready" {
				select {
				case ready <- rec:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case r := <-ready:
		n.Addr, n.HTTPAddr, n.ID = r.Kafka, r.HTTP, r.NodeID
		n.Listeners = map[string]string{}
		for _, l := range strings.Split(r.Listeners, ",") {
			if name, addr, ok := strings.Cut(l, "://"); ok {
				n.Listeners[name] = addr
			}
		}
	case <-n.done:
		n.t.Fatalf("skiff serve exited before it was ready (%v); logs:\n%s", n.err, n.Logs())
	case <-time.After(60 * time.Second):
		n.Kill()
		n.t.Fatalf("skiff serve not ready within 60 s; logs:\n%s", n.Logs())
	}
}

// cleanEnv drops SKIFF_* variables of the calling environment, which would
// override the test's flags.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKIFF_") {
			env = append(env, kv)
		}
	}
	return env
}

// Running reports whether the process has not exited.
func (n *Node) Running() bool {
	if n.done == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Kill ends the process with SIGKILL (a crash: nothing is flushed or closed) and
// waits for it to exit.
func (n *Node) Kill() {
	n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
}

// Stop sends SIGTERM and waits for a clean exit, failing the test if the process
// does not exit within 30 s or exits with an error.
func (n *Node) Stop() {
	n.t.Helper()
	n.Signal(syscall.SIGCONT) // a paused process cannot act on SIGTERM
	if err := n.Signal(syscall.SIGTERM); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Wait(ctx); err != nil {
		n.t.Errorf("skiff serve did not stop cleanly: %v", err)
	}
}

// Signal sends sig to the process.
func (n *Node) Signal(sig os.Signal) error { return n.cmd.Process.Signal(sig) }

// Wait waits for the process to exit and returns its exit error.
func (n *Node) Wait(ctx context.Context) error {
	select {
	case <-n.done:
		return n.err
	case <-ctx.Done():
		// SIGQUIT makes the Go runtime print every goroutine's stack into the logs.
		n.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-n.done:
		case <-time.After(5 * time.Second):
			n.Kill()
		}
		return fmt.Errorf("process still running (goroutine stacks are in its logs): %w", ctx.Err())
	}
}

// PID is the process id of the current run.
func (n *Node) PID() int { return n.cmd.Process.Pid }

// Logs returns everything the node logged so far (all runs).
func (n *Node) Logs() string {
	if n.logs == nil { // never started (ServeExpectExit only)
		return ""
	}
	return n.logs.String()
}

// WipeStorage deletes the node's partition data and Pebble database (topics/ and
// meta/) while it is stopped, keeping its identity (node.json) and its etcd member:
// a broker whose disks were replaced.
func (n *Node) WipeStorage(t testing.TB) {
	t.Helper()
	if n.Running() {
		t.Fatal("WipeStorage of a running node")
	}
	for _, d := range []string{"topics", "meta"} {
		if err := os.RemoveAll(filepath.Join(n.DataDir, d)); err != nil {
			t.Fatal(err)
		}
	}
}

// Run runs the skiff binary with args (a client command such as `cluster status`)
// and returns its stdout, stderr and exit error. The process is killed after timeout.
func Run(t testing.TB, timeout time.Duration, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(t), args...)
	cmd.Env = cleanEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("skiff %s still running after %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), timeout, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), err
}

// ServeExpectExit runs `skiff serve` on the node's data directory and etcd ports
// with args (instead of the node's Args), for a start that must fail. It returns the
// process's output (stdout and stderr) once it exits, how long it ran and its exit
// error; a process still running after timeout is killed and fails the test. The
// node must not be running.
func (n *Node) ServeExpectExit(timeout time.Duration, args ...string) (output string, took time.Duration, err error) {
	n.t.Helper()
	args = append([]string{"serve",
		"--data-dir", n.DataDir,
		"--listen", "127.0.0.1:0",
		"--etcd-client", n.EtcdClient,
		"--etcd-peer", n.EtcdPeer,
		"--http", "127.0.0.1:0",
		"--log-format", "json",
	}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(n.t), args...)
	cmd.Env = cleanEnv()
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	took = time.Since(start)
	if ctx.Err() != nil {
		n.t.Fatalf("skiff %s still running after %v; output:\n%s", strings.Join(args, " "), timeout, out.String())
	}
	return out.String(), took, err
}
