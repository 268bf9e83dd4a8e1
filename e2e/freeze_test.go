package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// A frozen node (a long GC or VM pause, a stalled disk, SIGSTOP) that comes back must
// cost the cluster no more availability than the freeze itself: three nodes with their
// default settings (6 s broker sessions), a topic of 6 partitions with RF 3 and
// min.insync.replicas 2, an idempotent acks=all producer at 2,000 records/s with a 30 s
// delivery timeout, and each node frozen in turn.
const (
	freezeFor   = 10 * time.Second // how long each node is frozen
	freezeEvery = 15 * time.Second // from one node's freeze to the next one's
	// freezeMaxAckGap is the longest a partition may go without an acknowledged record.
	// A producer cannot do better than the freeze for the partitions the frozen node
	// led: its request to that node stays in flight on an open connection, and an
	// idempotent producer sends a partition's next batch only after it is answered.
	freezeMaxAckGap = freezeFor + time.Second
)

// SKIFF_FREEZE_TRACE names a directory for the franz-go producer's debug log and the
// nodes' logs, for reading a run's timeline.
var freezeTrace = os.Getenv("SKIFF_FREEZE_TRACE")

func TestFaultFreezeFranz(t *testing.T) {
	cfg := workloadConfig{rate: 2000, deliveryTimeout: 30 * time.Second}
	if freezeTrace != "" {
		f, err := os.Create(filepath.Join(freezeTrace, "client.log"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cfg.franzOpts = append(cfg.franzOpts, kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelDebug, func() string { return time.Now().Format("15:04:05.000000 ") })))
	}
	freezeEach(t, cfg)
}

func TestFaultFreezeLibrdkafka(t *testing.T) {
	freezeEach(t, workloadConfig{rate: 2000, deliveryTimeout: 30 * time.Second, librdkafka: true})
}

// freezeEach freezes every node in turn for freezeFor while the workload runs, then
// checks the history: nothing acknowledged lost, no record failed, and no partition
// without an acknowledgement for longer than freezeMaxAckGap.
func freezeEach(t *testing.T, cfg workloadConfig) {
	nodes := setUpFaultTopicOf(t, testnode.StartCluster(t, 3), 6)
	if freezeTrace != "" {
		t.Cleanup(func() {
			for _, n := range nodes {
				os.WriteFile(filepath.Join(freezeTrace, "node-"+strconv.Itoa(int(n.ID))+".log"), []byte(n.Logs()), 0o644)
			}
		})
	}
	w := startWorkloadWith(t, nodes, cfg)
	w.progress(2000, 30*time.Second)
	for i, n := range nodes {
		w.note("SIGSTOP broker %d, leader of partitions %v", n.ID, ledBy(t, anyRunning(nodes, n), n.ID))
		if err := n.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(freezeFor) // the fault lasts this long
		if err := n.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		w.note("SIGCONT broker %d", n.ID)
		if i < len(nodes)-1 {
			time.Sleep(freezeEvery - freezeFor) // the pace of the faults
		}
	}
	waitFullISR(t, nodes)
	w.note("every ISR complete")
	w.progress(2000, 30*time.Second)
	res := w.finish(nodes[0].Addr)
	if res.failed > 0 {
		t.Errorf("%d records failed", res.failed)
	}
	if res.longest.d > freezeMaxAckGap {
		t.Errorf("partition %d went %v without an acknowledged record from %s (at most %v allowed)",
			res.longest.partition, res.longest.d.Round(time.Millisecond), w.since(res.longest.from), freezeMaxAckGap)
	}
}

// ledBy lists the partitions of the fault topic that the metadata of node n names
// broker id as leader of.
func ledBy(t *testing.T, n *testnode.Node, id int32) []int32 {
	t.Helper()
	md, err := metadata(t, n.Addr, faultTopic)
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for _, p := range md.Topics[faultTopic].Partitions.Sorted() {
		if p.Leader == id {
			out = append(out, p.Partition)
		}
	}
	return out
}
