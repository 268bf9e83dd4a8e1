package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"skiff/internal/syncbuf"
	"skiff/internal/testnode"
)

// TestKcatBalancedConsumer: kcat's balanced consumer (-G, librdkafka's consumer
// group) reads a topic to its end and commits, so a second run of the group reads
// nothing; then two kcat processes in one group share the partitions, every new
// record going to exactly one of them, and they commit what they read.
func TestKcatBalancedConsumer(t *testing.T) {
	n := testnode.Start(t, groupNodeArgs...)
	const topic = "kcat-queue"
	createTopic(t, n.Addr, topic, 4)
	produceValues(t, n.Addr, topic, "k", 1000)
	adm := kadm.NewClient(newClient(t, n.Addr))

	out := runKcat(t, nil, "-b", n.Addr, "-G", "kcat-once", "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", topic)
	got := strings.Fields(string(out))
	slices.Sort(got)
	if len(got) != 1000 || len(slices.Compact(got)) != 1000 {
		t.Fatalf("kcat -G read %d records (%d distinct), want 1000 once each", len(got), len(slices.Compact(got)))
	}
	waitCommitted(t, adm, "kcat-once", topic, 1000)
	if again := runKcat(t, nil, "-b", n.Addr, "-G", "kcat-once", "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", topic); len(again) != 0 {
		t.Fatalf("the group committed everything, yet a second run read %d bytes", len(again))
	}

	// Two kcat members of one group share the partitions.
	outs := make([]*lineSink, 2)
	var cmds []*exec.Cmd
	for i := range outs {
		outs[i] = &lineSink{}
		cmd := exec.Command(kcat(t), "-b", n.Addr, "-G", "kcat-pair", "-X", "auto.offset.reset=earliest",
			"-X", fmt.Sprintf("client.id=kcat-%d", i), "-X", "session.timeout.ms=6000", "-u", "-q", "-f", "%s\n", topic)
		cmd.Stdout = outs[i]
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				t.Logf("kcat-%d stderr: %s", i, stderr.String())
			}
		})
	}
	shares := waitGroup(t, adm, "kcat-pair", 4, "kcat-0", "kcat-1")
	if len(shares["kcat-0"])+len(shares["kcat-1"]) != 4 {
		t.Fatalf("the two kcat members share %v, want all 4 partitions", shares)
	}
	t.Logf("partitions: %v", shares)
	produceValues(t, n.Addr, topic, "m", 2000)
	want := 3000 // the 1000 older records too: the group has no commits yet
	for deadline := time.Now().Add(60 * time.Second); outs[0].len()+outs[1].len() < want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the two kcat members read %d and %d records, want %d together", outs[0].len(), outs[1].len(), want)
		}
	}
	all := append(outs[0].lines(), outs[1].lines()...)
	slices.Sort(all)
	if len(all) != want || len(slices.Compact(all)) != want {
		t.Fatalf("read %d records, %d distinct; want %d once each", len(all), len(slices.Compact(all)), want)
	}
	if outs[0].len() == 0 || outs[1].len() == 0 {
		t.Fatalf("one member read everything: %d and %d", outs[0].len(), outs[1].len())
	}
	for _, cmd := range cmds {
		cmd.Process.Signal(syscall.SIGTERM) // kcat leaves the group and commits
	}
	for _, cmd := range cmds {
		cmd.Wait()
	}
	waitCommitted(t, adm, "kcat-pair", topic, int64(want))
}

// waitCommitted waits until group's committed offsets of topic add up to want.
func waitCommitted(t *testing.T, adm *kadm.Client, group, topic string, want int64) {
	t.Helper()
	var sum int64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		os, err := adm.FetchOffsets(ctx, group)
		cancel()
		sum = 0
		if err == nil {
			for _, o := range os.Sorted() {
				if o.Topic == topic && o.At > 0 {
					sum += o.At
				}
			}
			if sum == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s committed offsets adding up to %d, want %d (%v)", group, sum, want, err)
		}
	}
}

// lineSink collects the lines written to it (a process's stdout).
type lineSink struct{ syncbuf.Buffer }

func (s *lineSink) lines() []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func (s *lineSink) len() int { return len(s.lines()) }
