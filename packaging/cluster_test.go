package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestClusterUnderSystemd follows the README: three machines (containers on one
// private network segment) install the .deb; node1 starts as it is, node2 and node3
// get `join: node1:9093` in /etc/skiff/skiff.yaml and start. A topic with three
// replicas then takes a message on node1 that node3 reads.
func TestClusterUnderSystemd(t *testing.T) {
	t.Parallel()
	requireContainers(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip (iproute2) is needed to wire the containers together")
	}
	old, _, _ := testPackages(t)

	// The segment: a bridge in a network namespace of this test's own, one veth
	// pair per container, addresses that exist only inside these namespaces.
	hub := fmt.Sprintf("skiff-pkgtest-%d", os.Getpid())
	command(t, "ip", "netns", "add", hub)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", hub).Run() })
	command(t, "ip", "-n", hub, "link", "add", "br0", "type", "bridge")
	command(t, "ip", "-n", hub, "link", "set", "br0", "up")

	hosts := "127.0.0.1\tlocalhost\n"
	for i := 1; i <= 3; i++ {
		hosts += fmt.Sprintf("10.77.0.%d\tnode%d\n", i, i)
	}
	nodes := make([]*container, 3)
	for i := range nodes {
		n := i + 1
		c := bootContainerWithHosts(t, fmt.Sprintf("node%d", n), hosts)
		nodes[i] = c
		veth := fmt.Sprintf("vh%d", n)
		command(t, "ip", "-n", hub, "link", "add", veth, "type", "veth", "peer", "name", "eth1", "netns", strconv.Itoa(c.pid))
		command(t, "ip", "-n", hub, "link", "set", veth, "master", "br0", "up")
		command(t, "nsenter", "-t", strconv.Itoa(c.pid), "-n", "ip", "addr", "add", fmt.Sprintf("10.77.0.%d/24", n), "dev", "eth1")
		command(t, "nsenter", "-t", strconv.Itoa(c.pid), "-n", "ip", "link", "set", "eth1", "up")
		copyFile(t, old.Deb, filepath.Join(c.root, "root", filepath.Base(old.Deb)))
		c.sh("cd /root && apt install -y ./" + filepath.Base(old.Deb))
	}

	nodes[0].run("systemctl", "start", "skiff")
	for _, c := range nodes[1:] {
		c.sh(`sed -i 's/^#join: ""$/join: node1:9093/' /etc/skiff/skiff.yaml && grep -qx 'join: node1:9093' /etc/skiff/skiff.yaml`)
		c.run("systemctl", "start", "skiff")
		if p := c.show("skiff", "ActiveState", "StatusText"); p["ActiveState"] != "active" || !strings.HasPrefix(p["StatusText"], "ready: ") {
			t.Fatalf("%s after systemctl start: %v", c.name, p)
		}
	}

	nodes[2].run("skiff", "topic", "create", "replicated", "--partitions", "3", "--replication-factor", "3")
	if d := nodes[2].run("skiff", "topic", "describe", "replicated"); !regexp.MustCompile(`replication factor:\s+3\n`).MatchString(d) {
		t.Errorf("describe on node3:\n%s", d)
	}
	nodes[0].sh("echo 'written on node1' | skiff produce -t replicated")
	if got := consume(t, nodes[2], "replicated"); !strings.Contains(got, "written on node1") {
		t.Errorf("node3 consumed %q", got)
	}
}
