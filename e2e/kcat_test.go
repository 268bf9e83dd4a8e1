package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"skiff/internal/testnode"
)

// kcat returns the path of kcat (Debian package kcat, librdkafka); `make test`
// installs it, so a missing kcat fails the test rather than skipping it.
func kcat(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: install Debian's kcat package (make test does)")
	}
	return p
}

func runKcat(t *testing.T, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(kcat(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestKcatRoundTrip: kcat -L lists the broker, -P produces 10,000 lines (auto-creating
// the topic), -C -e reads them back byte for byte; also with the idempotent producer
// and lz4 compression.
func TestKcatRoundTrip(t *testing.T) {
	n := testnode.Start(t)
	var in bytes.Buffer
	for i := range 10_000 {
		fmt.Fprintf(&in, "line %05d: %s\n", i, strings.Repeat("x", i%200))
	}
	file := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(file, in.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"plain", nil},
		{"idempotent-lz4", []string{"-X", "enable.idempotence=true", "-z", "lz4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "kcat-" + tc.name
			args := append([]string{"-b", n.Addr, "-P", "-t", topic, "-l", file}, tc.extra...)
			runKcat(t, nil, args...)
			out := runKcat(t, nil, "-b", n.Addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
			if !bytes.Equal(out, in.Bytes()) {
				t.Fatalf("consumed %d bytes, produced %d: not identical", len(out), in.Len())
			}
			meta := string(runKcat(t, nil, "-b", n.Addr, "-L", "-t", topic))
			for _, want := range []string{"broker 1 at " + n.Addr, `topic "` + topic + `" with 1 partitions`, "leader 1, replicas: 1, isrs: 1"} {
				if !strings.Contains(meta, want) {
					t.Fatalf("kcat -L output lacks %q:\n%s", want, meta)
				}
			}
			// -Q (ListOffsets by timestamp, librdkafka's newest version it shares
			// with the node): a time before every record is the first offset.
			q := string(runKcat(t, nil, "-b", n.Addr, "-Q", "-t", topic+":0:1"))
			if !strings.Contains(q, topic+" [0] offset 0") {
				t.Fatalf("kcat -Q output %q, want offset 0", q)
			}
		})
	}
}
