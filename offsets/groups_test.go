package offsets

import (
	"errors"
	"strings"
	"testing"
)

// TestGroupShard: offsets and group metadata of two partitions and of groups whose
// names are prefixes of each other stay apart; a batch lands with its applied
// offset; everything survives a reopen; deletes remove exactly what they name.
func TestGroupShard(t *testing.T) {
	dir := t.TempDir()
	d := openT(t, dir, Options{})
	s0, s1 := d.GroupShard(0), d.GroupShard(1)
	if a, err := s0.Applied(); err != nil || a != 0 {
		t.Fatalf("applied of a new shard = %d, %v", a, err)
	}
	b := s0.NewBatch()
	b.SetOffset(GroupOffset{Group: "g", Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: 2, Metadata: "m", CommitTimestamp: 10, WrittenAt: 11})
	b.SetOffset(GroupOffset{Group: "g", Topic: "t", Partition: 1, Offset: 6, LeaderEpoch: -1, CommitTimestamp: 12, WrittenAt: 13})
	b.SetOffset(GroupOffset{Group: "g", Topic: "tt", Partition: 0, Offset: 7, LeaderEpoch: -1})
	b.SetOffset(GroupOffset{Group: "gg", Topic: "t", Partition: 0, Offset: 8, LeaderEpoch: -1})
	b.SetGroup("g", []byte("meta-g"), 99)
	if err := b.Commit(42); err != nil {
		t.Fatal(err)
	}
	b = s1.NewBatch()
	b.SetOffset(GroupOffset{Group: "g", Topic: "t", Partition: 0, Offset: 100})
	if err := b.Commit(1); err != nil {
		t.Fatal(err)
	}
	d.Close()

	d = openT(t, dir, Options{})
	defer d.Close()
	s0, s1 = d.GroupShard(0), d.GroupShard(1)
	if a, err := s0.Applied(); err != nil || a != 42 {
		t.Fatalf("applied = %d, %v", a, err)
	}
	o, ok, err := s0.Offset("g", "t", 0)
	if err != nil || !ok || o.Offset != 5 || o.LeaderEpoch != 2 || o.Metadata != "m" || o.CommitTimestamp != 10 || o.WrittenAt != 11 {
		t.Fatalf("offset g/t/0 = %+v %v %v", o, ok, err)
	}
	var got []string
	collect := func(o GroupOffset) error {
		got = append(got, strings.Join([]string{o.Group, o.Topic, string(rune('0' + o.Partition))}, "/"))
		return nil
	}
	if err := s0.GroupOffsets("g", collect); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "g/t/0 g/t/1 g/tt/0" {
		t.Fatalf("offsets of g: %v", got)
	}
	got = nil
	if err := s0.Offsets(collect); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("offsets of shard 0: %v", got)
	}
	got = nil
	if err := s1.Offsets(collect); err != nil || len(got) != 1 {
		t.Fatalf("offsets of shard 1: %v %v", got, err)
	}
	var groups []string
	if err := s0.Groups(func(g string, v []byte, at int64) error {
		if string(v) != "meta-g" || at != 99 {
			t.Errorf("group %s value %q at %d", g, v, at)
		}
		groups = append(groups, g)
		return nil
	}); err != nil || len(groups) != 1 || groups[0] != "g" {
		t.Fatalf("groups %v %v", groups, err)
	}

	b = s0.NewBatch()
	b.DeleteOffset("g", "t", 0)
	b.DeleteGroup("g")
	if err := b.Commit(43); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s0.Offset("g", "t", 0); ok {
		t.Fatal("deleted offset still there")
	}
	if _, ok, _ := s0.Offset("g", "t", 1); !ok {
		t.Fatal("a delete removed another offset")
	}
	groups = nil
	s0.Groups(func(g string, _ []byte, _ int64) error { groups = append(groups, g); return nil })
	if len(groups) != 0 {
		t.Fatalf("deleted group metadata still there: %v", groups)
	}

	stop := errors.New("stop")
	if err := s0.Offsets(func(GroupOffset) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("callback error: %v", err)
	}
	b = s0.NewBatch()
	b.SetOffset(GroupOffset{Group: strings.Repeat("x", 40000), Topic: "t"})
	if err := b.Commit(44); !errors.Is(err, ErrGroupKey) {
		t.Fatalf("oversized group name: %v", err)
	}
	if a, _ := s0.Applied(); a != 43 {
		t.Fatalf("a refused batch moved applied to %d", a)
	}
}
