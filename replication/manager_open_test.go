package replication

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"skiff/internal/batchtest"
)

// TestApplyManyPartitions opens, closes and reopens more partitions than
// openers, which Apply opens and applies (and Close closes) side by side:
// every one is served, leads in the epoch it was given, and keeps its records.
func TestApplyManyPartitions(t *testing.T) {
	const topics, each = 3, 40 // 120 > openers
	dir := t.TempDir()
	specs := func(epoch int32) []TopicSpec {
		var ts []TopicSpec
		for i := range topics {
			s := spec(fmt.Sprintf("t%d", i), byte(i+1), each)
			for j := range s.Partitions {
				s.Partitions[j].LeaderEpoch = epoch
			}
			ts = append(ts, s)
		}
		return ts
	}
	m, db := newManager(t, dir)
	if err := m.Apply(1, specs(0)); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Partitions()); n != topics*each {
		t.Fatalf("%d partitions served, want %d", n, topics*each)
	}
	for i, p := range m.Partitions() {
		for range i % 3 {
			if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, "x"), 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]int64{}
	for _, p := range m.Partitions() {
		want[PartitionKey(p.Topic, p.ID)] = p.LogEndOffset()
	}
	closeAll(t, m, db)

	// Restarted, every partition leads in a new epoch (a checkpoint saved each).
	m, db = newManager(t, dir)
	defer closeAll(t, m, db)
	if err := m.Apply(2, specs(1)); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Partitions()); n != topics*each {
		t.Fatalf("after reopening: %d partitions served, want %d", n, topics*each)
	}
	if n := len(m.replicatedPartitions()); n != 0 {
		t.Errorf("%d partitions with other replicas, want none", n)
	}
	// Partitions with other replicas are the ones the ISR loop visits.
	two := specs(1)
	two[0].Partitions[3].Replicas = []int32{0, 1}
	if err := m.Apply(3, two); err != nil {
		t.Fatal(err)
	}
	if r := m.replicatedPartitions(); len(r) != 1 || r[0] != m.Partition(two[0].Name, 3) {
		t.Errorf("partitions with other replicas: %v, want %s-3", r, two[0].Name)
	}
	for _, p := range m.Partitions() {
		key := PartitionKey(p.Topic, p.ID)
		if !p.IsLeader() || p.LeaderEpoch() != 1 || p.LogEndOffset() != want[key] {
			t.Errorf("%s: leader %v, epoch %d, log end %d (want leader, 1, %d)", key, p.IsLeader(), p.LeaderEpoch(), p.LogEndOffset(), want[key])
		}
		if err := m.Offline(p.Topic, p.ID); err != nil {
			t.Errorf("%s offline: %v", key, err)
		}
	}
}

// TestApplyTouchesOnlyChanges: a metadata change applies itself only to the
// partitions whose state or config it changed (creating topic after topic made
// every Apply visit every partition), and a stray folder is still removed.
func TestApplyTouchesOnlyChanges(t *testing.T) {
	dir := t.TempDir()
	m, db := newManager(t, dir)
	defer closeAll(t, m, db)
	a := spec("a", 1, 4)
	if err := m.Apply(1, []TopicSpec{a}); err != nil {
		t.Fatal(err)
	}
	configs := func() map[int32]*PartitionConfig {
		out := map[int32]*PartitionConfig{}
		for i := range int32(4) {
			out[i] = m.Partition("a", i).cfg.Load()
		}
		return out
	}
	before := configs()
	if err := m.Apply(2, []TopicSpec{a, spec("b", 2, 2)}); err != nil {
		t.Fatal(err)
	}
	if m.Partition("b", 1) == nil {
		t.Fatal("b-1 not opened")
	}
	if after := configs(); !maps.Equal(before, after) {
		t.Fatal("adding topic b applied the config of topic a's partitions again")
	}

	// A change of one partition's state reaches that partition only.
	a.Partitions[2].LeaderEpoch = 5
	if err := m.Apply(3, []TopicSpec{a, spec("b", 2, 2)}); err != nil {
		t.Fatal(err)
	}
	if e := m.Partition("a", 2).LeaderEpoch(); e != 5 {
		t.Fatalf("a-2 leader epoch %d, want 5", e)
	}
	after := configs()
	for i := range int32(4) {
		if (after[i] != before[i]) != (i == 2) {
			t.Errorf("a-%d: config applied again %v, want %v", i, after[i] != before[i], i == 2)
		}
	}

	// A config change reaches every partition of the topic.
	a.Config.MaxMessageBytes = 1000
	if err := m.Apply(4, []TopicSpec{a, spec("b", 2, 2)}); err != nil {
		t.Fatal(err)
	}
	for i := range int32(4) {
		if got := m.Partition("a", i).cfg.Load().MaxMessageBytes; got != 1000 {
			t.Errorf("a-%d: max message bytes %d, want 1000", i, got)
		}
	}

	// Deleting topic b removes its folders, and a stray one with them.
	stray := filepath.Join(dir, "topics", "gone-0")
	if err := os.MkdirAll(stray, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(5, []TopicSpec{a}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{stray, filepath.Join(dir, "topics", "b-0")} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after b was deleted: %v, want it gone", d, err)
		}
	}
}
