package e2e

import (
	"context"
	cryptorand "crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// TestReassignCancel: skiff topic reassign --cancel PLAN.json stops a move in
// progress (held back by a throttle of 1 KB/s), as kafka-reassign-partitions.sh
// --cancel does: the partition is back on its replica from before, nothing is in
// progress, and the throttle is cleared; --cancel-all stops a move started again.
func TestReassignCancel(t *testing.T) {
	nodes := testnode.StartCluster(t, 2)
	addr := nodes[0].Addr
	const topic = "cancel-move"
	skiffCLI(t, "topic", "create", topic, "-p", "1", "--replication-factor", "1", "-b", addr)
	var from int32 = -1
	poll(t, 30*time.Second, "a leader for "+topic, func() bool {
		if ps := leadersOf(t, addr, topic); len(ps) == 1 && ps[0].Leader >= 0 {
			from = ps[0].Leader
			return true
		}
		return false
	})
	to := nodes[0].ID
	if to == from {
		to = nodes[1].ID
	}
	// 1 MiB to copy: at 1 KB/s the move cannot end during the test.
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for range 100 {
		value := make([]byte, 10<<10)
		cryptorand.Read(value)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, fmt.Appendf(nil, `{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%d]}]}`, topic, to), 0o644); err != nil {
		t.Fatal(err)
	}
	back := func(what string) {
		t.Helper()
		poll(t, 30*time.Second, what+": the partition back on node "+fmt.Sprint(from), func() bool {
			ps := leadersOf(t, addr, topic)
			return len(ps) == 1 && slices.Equal(ps[0].Replicas, []int32{from}) && ps[0].Leader == from
		})
		if out := skiffCLI(t, "topic", "reassign", "--list", "-b", addr); !strings.Contains(out, "no reassignment in progress") {
			t.Fatalf("%s: --list says\n%s", what, out)
		}
	}
	move := func() {
		t.Helper()
		skiffCLI(t, "topic", "reassign", plan, "--throttle", "1000", "-b", addr)
		if out := skiffCLI(t, "topic", "reassign", "--list", "-b", addr); !strings.Contains(out, fmt.Sprintf("%s/0: replicas", topic)) {
			t.Fatalf("the throttled move is not in progress:\n%s", out)
		}
	}

	move()
	out := skiffCLI(t, "topic", "reassign", "--cancel", plan, "-b", addr)
	for _, want := range []string{fmt.Sprintf("%s/0: cancelled, back to %d", topic, from), "throttle cleared"} {
		if !strings.Contains(out, want) {
			t.Fatalf("--cancel printed\n%s\nwant %q", out, want)
		}
	}
	back("--cancel")
	tcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
	if err != nil || len(tcs) != 1 {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	for _, c := range tcs[0].Configs {
		if strings.Contains(c.Key, "throttled.replicas") && c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s=%v left after --cancel", c.Key, c.MaybeValue())
		}
	}
	if out := skiffCLI(t, "topic", "reassign", "--cancel", plan, "-b", addr); !strings.Contains(out, topic+"/0: no reassignment in progress") {
		t.Errorf("--cancel with nothing in progress printed\n%s", out)
	}

	move()
	if out := skiffCLI(t, "topic", "reassign", "--cancel-all", "-b", addr); !strings.Contains(out, fmt.Sprintf("%s/0: cancelled, back to %d", topic, from)) {
		t.Fatalf("--cancel-all printed\n%s", out)
	}
	back("--cancel-all")
}
