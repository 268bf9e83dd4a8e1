package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The systemd tests boot a Debian bookworm root filesystem with systemd-nspawn
// and drive real systemd, dpkg and rpm inside it. The root filesystem is built once
// with debootstrap and cached in a folder these tests own; each scenario boots its
// own copy (cp -a, about 2 s) and deletes it afterwards.
const (
	cacheDir   = "/var/cache/skiff-tests"
	rootfsName = "rootfs-bookworm"
	// rootfsRecipe is the debootstrap command line; a cache built by another
	// recipe is rebuilt. rpm is there to install the .rpm inside a booted system.
	rootfsRecipe = "debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,rpm bookworm"
	debianMirror = "http://deb.debian.org/debian"
)

// requireContainers skips the test where containers cannot be booted (not root, no
// systemd-nspawn or debootstrap), saying why; under CI (CI set) it fails instead,
// since CI runs as root with `make test` having installed them.
func requireContainers(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Getuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range []string{"systemd-nspawn", "debootstrap", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("booting a systemd container needs %s (scripts/test-deps.sh installs the packages, as root)", strings.Join(missing, ", "))
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// bookwormRoot returns the cached root filesystem, building it first if needed.
// An exclusive flock serialises builders: parallel test processes wait for the
// first one instead of racing it.
func bookwormRoot(t *testing.T) string {
	t.Helper()
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(cacheDir, rootfsName)
	done := root + ".done"
	lock, err := os.OpenFile(root+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if b, err := os.ReadFile(done); err == nil && string(b) == rootfsRecipe+"\n" {
		return root
	}
	// Absent, half-built or of another recipe: build it anew.
	os.Remove(done)
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	tmp := root + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	t.Logf("building the bookworm root filesystem in %s (once; takes a few minutes)", root)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	args := append(strings.Fields(rootfsRecipe)[1:], tmp, debianMirror)
	if out, err := exec.CommandContext(ctx, "debootstrap", args...).CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		t.Fatalf("debootstrap: %v\n%s", err, tail(out, 40))
	}
	if err := os.Rename(tmp, root); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(done, []byte(rootfsRecipe+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("root filesystem built in %s", time.Since(start).Round(time.Second))
	return root
}

// container is one booted copy of the root filesystem.
type container struct {
	t       *testing.T
	name    string
	root    string // the copy, as the host sees it
	nspawn  *exec.Cmd
	exited  chan struct{}
	console *bytes.Buffer // nspawn's output: the container's console
	pid     int           // the container's systemd (PID 1 inside), as the host sees it
}

// bootContainer copies the cached root filesystem and boots it with its own
// network namespace (--private-network: only a loopback, so skiff listens on its
// default ports without meeting anything on the host). Cleanup powers it off,
// kills it if it does not stop, and deletes the copy, also when the test failed.
func bootContainer(t *testing.T, name string) *container {
	t.Helper()
	return bootContainerWithHosts(t, name, "127.0.0.1\tlocalhost\n127.0.1.1\t"+name+"\n")
}

// bootContainerWithHosts is bootContainer with the given /etc/hosts.
func bootContainerWithHosts(t *testing.T, name, hosts string) *container {
	t.Helper()
	requireContainers(t)
	base := bookwormRoot(t)
	scratch, err := os.MkdirTemp(cacheDir, "run-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	c := &container{t: t, name: name, root: filepath.Join(scratch, name), exited: make(chan struct{}), console: &bytes.Buffer{}}
	t.Cleanup(func() {
		c.stop()
		if err := os.RemoveAll(scratch); err != nil {
			t.Errorf("remove the container's root: %v", err)
		}
	})
	if out, err := exec.Command("cp", "-a", base, c.root).CombinedOutput(); err != nil {
		t.Fatalf("copy the root filesystem: %v\n%s", err, out)
	}
	// The host name resolves, as on an installed Debian system: skiff advertises it.
	writeFile(t, filepath.Join(c.root, "etc/hostname"), name+"\n")
	writeFile(t, filepath.Join(c.root, "etc/hosts"), hosts)

	c.nspawn = exec.Command("systemd-nspawn", "--register=no", "--keep-unit", "--console=read-only",
		"--private-network", "--machine="+name, "-D", c.root, "--boot")
	c.nspawn.Stdout, c.nspawn.Stderr = c.console, c.console
	c.nspawn.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0")
	if err := c.nspawn.Start(); err != nil {
		t.Fatalf("systemd-nspawn: %v", err)
	}
	go func() { c.nspawn.Wait(); close(c.exited) }()

	// PID 1 inside is nspawn's child whose comm is systemd.
	waitFor(t, 60*time.Second, "the container's systemd to start", func() (bool, string) {
		select {
		case <-c.exited:
			t.Fatalf("systemd-nspawn exited: %v\n%s", c.nspawn.ProcessState, c.console)
		default:
		}
		c.pid = childNamed(c.nspawn.Process.Pid, "systemd")
		return c.pid != 0, "no systemd child of nspawn yet"
	})
	waitFor(t, 120*time.Second, "the container to finish booting", func() (bool, string) {
		out, _ := c.exec("systemctl", "is-system-running", "--wait")
		state := strings.TrimSpace(out)
		return state == "running" || state == "degraded", "system state " + state
	})
	return c
}

// childNamed returns the pid of a child of parent whose comm is name, or 0.
func childNamed(parent int, name string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		fields := strings.Fields(s[close+1:])
		if len(fields) < 2 || s[open+1:close] != name {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == parent {
			return pid
		}
	}
	return 0
}

// exec runs a command inside the container (every namespace of its PID 1) with a
// clean environment and returns its combined output.
func (c *container) exec(args ...string) (string, error) {
	full := append([]string{"-t", strconv.Itoa(c.pid), "-a", "--", "/usr/bin/env", "-i",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8",
		"DEBIAN_FRONTEND=noninteractive", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nsenter", full...).CombinedOutput()
	return string(out), err
}

// run is exec that fails the test when the command fails.
func (c *container) run(args ...string) string {
	c.t.Helper()
	out, err := c.exec(args...)
	if err != nil {
		c.t.Fatalf("in %s: %s: %v\n%s", c.name, strings.Join(args, " "), err, out)
	}
	return out
}

// sh runs a shell script inside the container and fails the test when it fails.
func (c *container) sh(script string) string {
	c.t.Helper()
	return c.run("sh", "-ec", script)
}

// show returns properties of a unit from `systemctl show`.
func (c *container) show(unit string, props ...string) map[string]string {
	c.t.Helper()
	args := []string{"systemctl", "show", unit}
	for _, p := range props {
		args = append(args, "-p", p)
	}
	out := c.run(args...)
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			m[k] = v
		}
	}
	return m
}

// dumpOnFailure logs what a failing scenario needs to be understood.
func (c *container) dumpOnFailure() {
	if !c.t.Failed() || c.pid == 0 {
		return
	}
	status, _ := c.exec("systemctl", "status", "--no-pager", "-l", "skiff")
	journal, _ := c.exec("journalctl", "--no-pager", "-n", "80", "-u", "skiff")
	c.t.Logf("in %s: systemctl status skiff:\n%s\njournal of skiff:\n%s", c.name, status, journal)
}

// stop powers the container off (SIGTERM to nspawn), kills it after 60 s.
func (c *container) stop() {
	if c.nspawn == nil || c.nspawn.Process == nil {
		return
	}
	c.dumpOnFailure()
	select {
	case <-c.exited:
		return
	default:
	}
	c.nspawn.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(60 * time.Second):
		c.t.Errorf("container %s did not power off within 60s; killing it", c.name)
		c.nspawn.Process.Kill()
		<-c.exited
	}
}

// waitFor polls cond every 200 ms until it holds, failing the test with cond's last
// explanation after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: %s", timeout, what, why)
		}
		<-tick.C
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
