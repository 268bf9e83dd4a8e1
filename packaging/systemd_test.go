package main

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// These tests install the packages in a booted Debian bookworm (systemd-nspawn)
// and check the unit, the maintainer scripts and sd_notify against real systemd.
// They run in parallel, one container each.

// TestDebUnderSystemd: apt install; the unit is enabled but not started; start
// returns once READY=1 came (the status is already the ready one); produce and
// consume; JSON logs in the journal; SIGSTOP starves the watchdog and systemd
// restarts skiff; stop ends with Result=success; dpkg -r stops the service and
// keeps configuration and data; dpkg -P removes both.
func TestDebUnderSystemd(t *testing.T) {
	t.Parallel()
	requireContainers(t)
	old, _, _ := testPackages(t)
	c := bootContainer(t, "skiff-deb")
	copyFile(t, old.Deb, filepath.Join(c.root, "root", filepath.Base(old.Deb)))

	start := time.Now()
	c.sh("cd /root && apt install -y ./" + filepath.Base(old.Deb))
	checkInstalled(t, c)
	startService(t, c)
	if got := produceConsume(t, c, "greetings", "hello from systemd"); !strings.Contains(got, "hello from systemd") {
		t.Fatalf("consumed %q", got)
	}
	t.Logf("from apt install to the first consumed message: %s", time.Since(start).Round(10*time.Millisecond))
	checkJSONLogs(t, c)
	watchdogRestart(t, c)
	if got := consume(t, c, "greetings"); !strings.Contains(got, "hello from systemd") {
		t.Errorf("after the watchdog restart the topic holds %q", got)
	}
	stopService(t, c)

	c.run("systemctl", "start", "skiff")
	c.run("dpkg", "-r", "skiff")
	checkNoSkiffProcess(t, c)
	c.sh("test ! -e /usr/bin/skiff && test ! -e /lib/systemd/system/skiff.service")
	c.sh("test -f /etc/skiff/skiff.yaml && test -f /var/lib/skiff/node.json && test -d /var/lib/skiff/topics")
	c.run("dpkg", "-P", "skiff")
	c.sh("test ! -e /etc/skiff && test ! -e /var/lib/skiff")
}

// TestRPMUnderSystemd: the same with rpm -i and rpm -e. RPM has no purge: an erase
// stops the service and keeps the data in /var/lib/skiff.
func TestRPMUnderSystemd(t *testing.T) {
	t.Parallel()
	requireContainers(t)
	old, _, _ := testPackages(t)
	c := bootContainer(t, "skiff-rpm")
	copyFile(t, old.RPM, filepath.Join(c.root, "root", filepath.Base(old.RPM)))

	// Debian's rpm refuses to install unless told it is meant (--force-debian), and
	// its database knows nothing of dpkg's packages (--nodeps; the package
	// requires nothing but /bin/sh for its scriptlets).
	c.run("rpm", "-i", "--force-debian", "--nodeps", "/root/"+filepath.Base(old.RPM))
	checkInstalled(t, c)
	startService(t, c)
	if got := produceConsume(t, c, "greetings", "hello from rpm"); !strings.Contains(got, "hello from rpm") {
		t.Fatalf("consumed %q", got)
	}
	watchdogRestart(t, c)
	stopService(t, c)

	c.run("systemctl", "start", "skiff")
	c.run("rpm", "-e", "--nodeps", "skiff")
	checkNoSkiffProcess(t, c)
	c.sh("test ! -e /usr/bin/skiff && test ! -e /usr/lib/systemd/system/skiff.service")
	c.sh("test -f /var/lib/skiff/node.json")
	if out, _ := c.exec("systemctl", "is-enabled", "skiff"); strings.TrimSpace(out) == "enabled" {
		t.Errorf("skiff is still enabled after rpm -e")
	}
}

// TestDebUpgradeUnderSystemd: with an edited /etc/skiff/skiff.yaml and a running
// service, installing a newer .deb whose packaged skiff.yaml changed keeps the edit
// (--force-confdef --force-confold, as an unattended upgrade would), restarts the
// service on the new binary, and keeps the data.
func TestDebUpgradeUnderSystemd(t *testing.T) {
	t.Parallel()
	requireContainers(t)
	old, new, _ := testPackages(t)
	c := bootContainer(t, "skiff-upgrade")
	copyFile(t, old.Deb, filepath.Join(c.root, "root", filepath.Base(old.Deb)))
	newDeb := filepath.Join(c.root, "root", filepath.Base(new.Deb))
	repackWithChangedConfig(t, new.Deb, newDeb)

	c.run("dpkg", "-i", "/root/"+filepath.Base(old.Deb))
	c.sh(`sed -i 's/^#num-partitions: 1$/num-partitions: 3/' /etc/skiff/skiff.yaml && grep -qx 'num-partitions: 3' /etc/skiff/skiff.yaml`)
	startService(t, c)
	produceConsume(t, c, "before-upgrade", "kept across the upgrade")
	before := c.show("skiff", "MainPID")

	c.run("dpkg", "-i", "--force-confdef", "--force-confold", "/root/"+filepath.Base(new.Deb))
	c.sh("grep -qx 'num-partitions: 3' /etc/skiff/skiff.yaml")
	c.sh("grep -q 'changed in " + newVersion + "' /etc/skiff/skiff.yaml.dpkg-dist")
	after := c.show("skiff", "MainPID", "ActiveState", "SubState", "StatusText")
	if after["MainPID"] == before["MainPID"] || after["ActiveState"] != "active" || after["SubState"] != "running" || !strings.HasPrefix(after["StatusText"], "ready: ") {
		t.Fatalf("after the upgrade (MainPID was %s): %v", before["MainPID"], after)
	}
	if exe := strings.TrimSpace(c.run("readlink", "/proc/"+after["MainPID"]+"/exe")); exe != "/usr/bin/skiff" {
		t.Errorf("the service runs %q, not the new /usr/bin/skiff", exe)
	}
	if v := strings.TrimSpace(c.run("skiff", "version")); v != "skiff "+newVersion {
		t.Errorf("skiff version after the upgrade: %q", v)
	}
	if got := consume(t, c, "before-upgrade"); !strings.Contains(got, "kept across the upgrade") {
		t.Errorf("after the upgrade the topic holds %q", got)
	}
	// The kept edit is in force: a topic created without a count gets 3 partitions.
	c.run("skiff", "topic", "create", "after-upgrade")
	if d := c.run("skiff", "topic", "describe", "after-upgrade"); !regexp.MustCompile(`partitions:\s+3\n`).MatchString(d) {
		t.Errorf("the edited num-partitions is not in force:\n%s", d)
	}
}

// checkInstalled: the user, the data folder and the enabled, not yet started, unit.
func checkInstalled(t *testing.T, c *container) {
	t.Helper()
	c.sh("getent passwd skiff")
	if got := strings.TrimSpace(c.run("stat", "-c", "%U:%G %a", "/var/lib/skiff")); got != "skiff:skiff 750" {
		t.Errorf("/var/lib/skiff is %q, want skiff:skiff 750", got)
	}
	if got, _ := c.exec("systemctl", "is-enabled", "skiff"); strings.TrimSpace(got) != "enabled" {
		t.Errorf("systemctl is-enabled skiff: %q", got)
	}
	if got, _ := c.exec("systemctl", "is-active", "skiff"); strings.TrimSpace(got) != "inactive" {
		t.Errorf("a fresh install started the service (is-active: %q): the user edits the configuration first", got)
	}
}

// startService: `systemctl start` returns only once READY=1 came, so right after it
// the unit is active and its status is the one sent with READY=1.
func startService(t *testing.T, c *container) {
	t.Helper()
	c.run("systemctl", "start", "skiff")
	p := c.show("skiff", "ActiveState", "SubState", "StatusText", "MainPID")
	if p["ActiveState"] != "active" || p["SubState"] != "running" {
		t.Fatalf("right after systemctl start: %v", p)
	}
	if !strings.HasPrefix(p["StatusText"], "ready: Kafka on ") || !strings.Contains(p["StatusText"], "data in /var/lib/skiff") {
		t.Errorf("right after systemctl start the status is %q, want the ready status", p["StatusText"])
	}
	if user := strings.TrimSpace(c.run("stat", "-c", "%U", "/proc/"+p["MainPID"])); user != "skiff" {
		t.Errorf("skiff runs as %q, want skiff", user)
	}
}

func produceConsume(t *testing.T, c *container, topic, line string) string {
	t.Helper()
	c.run("skiff", "topic", "create", topic, "--if-not-exists")
	c.sh(fmt.Sprintf("echo '%s' | skiff produce -t %s", line, topic))
	return consume(t, c, topic)
}

func consume(t *testing.T, c *container, topic string) string {
	t.Helper()
	return c.run("skiff", "consume", "-t", topic, "--from-beginning", "--exit-at-end")
}

// checkJSONLogs: under journald (JOURNAL_STREAM) skiff logs JSON.
func checkJSONLogs(t *testing.T, c *container) {
	t.Helper()
	out := c.run("journalctl", "-u", "skiff", "-o", "cat", "--no-pager")
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "skiff is ready") {
			continue
		}
		var rec struct {
			Msg   string `json:"msg"`
			Level string `json:"level"`
			Kafka string `json:"kafka"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Msg != "skiff is ready" || rec.Level != "INFO" || rec.Kafka == "" {
			t.Errorf("the journal's ready line is not slog JSON (%v): %s", err, line)
		}
		return
	}
	t.Errorf("no \"skiff is ready\" line in the journal:\n%s", out)
}

// watchdogRestart stops the skiff process (SIGSTOP: every goroutine, the watchdog
// loop too) and waits for systemd to notice the missing WATCHDOG=1, kill it and
// start a new one that becomes ready.
func watchdogRestart(t *testing.T, c *container) {
	t.Helper()
	before := c.show("skiff", "MainPID", "NRestarts")
	c.sh("kill -STOP " + before["MainPID"])
	stopped := time.Now()
	waitFor(t, 3*time.Minute, "systemd's watchdog to restart skiff", func() (bool, string) {
		p := c.show("skiff", "MainPID", "NRestarts", "ActiveState", "SubState", "StatusText")
		return p["NRestarts"] != before["NRestarts"] && p["MainPID"] != before["MainPID"] && p["MainPID"] != "0" &&
			p["ActiveState"] == "active" && p["SubState"] == "running" && strings.HasPrefix(p["StatusText"], "ready: "), fmt.Sprint(p)
	})
	t.Logf("watchdog: SIGSTOP to a new ready process in %s", time.Since(stopped).Round(100*time.Millisecond))
	if j := c.run("journalctl", "-u", "skiff", "--no-pager"); !strings.Contains(j, "Watchdog timeout") {
		t.Errorf("the journal does not show a watchdog timeout:\n%s", tail([]byte(j), 30))
	}
}

// stopService: systemctl stop ends with Result=success.
func stopService(t *testing.T, c *container) {
	t.Helper()
	c.run("systemctl", "stop", "skiff")
	if p := c.show("skiff", "Result", "ActiveState"); p["Result"] != "success" || p["ActiveState"] != "inactive" {
		t.Errorf("after systemctl stop: %v", p)
	}
}

func checkNoSkiffProcess(t *testing.T, c *container) {
	t.Helper()
	out := c.sh(`for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = skiff ] && echo "$p"; done; true`)
	if strings.TrimSpace(out) != "" {
		t.Errorf("skiff still runs after removal: %s", out)
	}
}

// repackWithChangedConfig copies the .deb at src to dst with one comment line added
// to the packaged skiff.yaml, as a release that changes the shipped configuration.
func repackWithChangedConfig(t *testing.T, src, dst string) {
	t.Helper()
	dir := t.TempDir()
	command(t, "dpkg-deb", "--raw-extract", src, dir)
	conf := filepath.Join(dir, "etc/skiff/skiff.yaml")
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, []byte("# The packaged default changed in "+newVersion+".\n")...)
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum(b)
	md5sums := filepath.Join(dir, "DEBIAN/md5sums")
	sums, err := os.ReadFile(md5sums)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^[0-9a-f]{32}  etc/skiff/skiff.yaml$`)
	if !re.Match(sums) {
		t.Fatalf("md5sums has no line for etc/skiff/skiff.yaml:\n%s", sums)
	}
	sums = re.ReplaceAll(sums, []byte(hex.EncodeToString(sum[:])+"  etc/skiff/skiff.yaml"))
	if err := os.WriteFile(md5sums, sums, 0o644); err != nil {
		t.Fatal(err)
	}
	command(t, "dpkg-deb", "-Zgzip", "-z1", "--root-owner-group", "--build", dir, dst)
}
