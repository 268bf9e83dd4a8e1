package main

// End-to-end tests of skiff group and skiff offsets against a real broker (see
// client_e2e_test.go): a fresh `skiff serve` without the initial rebalance delay,
// or the cluster SKIFF_TEST_BROKERS names.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

func groupBrokers(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("SKIFF_TEST_BROKERS"); b != "" {
		return b
	}
	return testnode.Start(t, "--group-initial-rebalance-delay", "0s").Addr
}

// TestGroupAndOffsetsCommands: a group consumes part of a topic; group list and
// describe show it with its lag; its offsets are snapshotted, the group deleted and
// restored from the snapshot, and a consumer of the group then resumes exactly where
// it was. A snapshot with one flipped byte is refused without writing anything;
// restore and delete refuse a group with active members; reset-offsets moves the
// committed offsets.
func TestGroupAndOffsetsCommands(t *testing.T) {
	b := groupBrokers(t)
	topic := uniqueTopic("grp")
	group := topic + "-g"
	skiffOK(t, nil, "topic", "create", topic, "-p", "3", "-b", b)
	produceNumbered(t, b, topic, 3, 10)
	first := lines(skiffOK(t, nil, "consume", "-t", topic, "-g", group, "--from-beginning", "-n", "10", "-b", b))
	if len(first) != 10 {
		t.Fatalf("first consumer printed %d records", len(first))
	}

	listed := skiffOK(t, nil, "group", "list", "-b", b)
	if !slices.Contains(strings.Split(listed, "\n"), group) {
		t.Fatalf("group list lacks %s:\n%s", group, listed)
	}
	if st := skiffOK(t, nil, "group", "list", "--state", "-b", b); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(group) + ` +Empty +consumer +0$`).MatchString(st) {
		t.Fatalf("group list --state:\n%s", st)
	}
	desc := skiffOK(t, nil, "group", "describe", group, "-b", b)
	mustContain(t, "describe", desc, "group:        "+group, "state:        Empty", "members:      0",
		"TOPIC", "COMMITTED  LOG-END  LAG")
	lag := 0
	for _, m := range regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(topic)+` +\d+ +(\d+|-) +10 +(\d+)`).FindAllStringSubmatch(desc, -1) {
		n := 0
		for _, c := range m[2] {
			n = n*10 + int(c-'0')
		}
		lag += n
	}
	if lag != 20 {
		t.Fatalf("describe shows a total lag of %d, want 20:\n%s", lag, desc)
	}
	mustContain(t, "describe of a missing group", skiffErr(t, nil, "group", "describe", group+"-none", "-b", b), "does not exist")

	dir := t.TempDir()
	snap := filepath.Join(dir, "offsets.snap")
	out := skiffOK(t, nil, "offsets", "snapshot", "--out", snap, "--group", regexp.QuoteMeta(group), "-b", b)
	mustContain(t, "snapshot", out, "of 1 group to "+snap)
	before := committedOffsets(t, b, group)

	// A flipped byte: refused, nothing restored.
	good, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0x04
	badFile := filepath.Join(dir, "bad.snap")
	if err := os.WriteFile(badFile, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "restore of a damaged file", skiffErr(t, nil, "offsets", "restore", badFile, "-b", b), "is damaged at byte", "nothing was restored")

	mustContain(t, "delete", skiffOK(t, nil, "group", "delete", group, "-b", b), "deleted group "+group)
	if got := committedOffsets(t, b, group); len(got) != 0 {
		t.Fatalf("offsets after delete: %v", got)
	}
	mustContain(t, "delete again", skiffErr(t, nil, "group", "delete", group, "-b", b), "does not exist")
	skiffOK(t, nil, "group", "delete", group, "--if-exists", "-b", b)

	dry := skiffOK(t, nil, "offsets", "restore", snap, "--dry-run", "-b", b)
	mustContain(t, "dry run", dry, "GROUP", "OLD", "NEW", "dry run: would commit")
	if got := committedOffsets(t, b, group); len(got) != 0 {
		t.Fatalf("a dry run committed %v", got)
	}
	mustContain(t, "restore", skiffOK(t, nil, "offsets", "restore", snap, "-b", b), "restored", "of 1 group (")
	if got := committedOffsets(t, b, group); !mapsEqual(got, before) {
		t.Fatalf("restored %v, snapshot had %v", got, before)
	}
	// --from-beginning applies to the partitions the group has no commit for.
	rest := lines(skiffOK(t, nil, "consume", "-t", topic, "-g", group, "--from-beginning", "-e", "-b", b))
	all := append(append([]string(nil), first...), rest...)
	slices.Sort(all)
	if len(rest) != 20 || len(slices.Compact(all)) != 30 {
		t.Fatalf("after the restore the group read %d records (%q); want exactly the 20 it had not read", len(rest), rest)
	}

	// A group with an active member is refused.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close() // the client joins the group as it starts
	waitFor(t, "the member to join", func() bool {
		return strings.Contains(skiffOK(t, nil, "group", "describe", group, "-b", b), "members:      1")
	})
	mustContain(t, "restore into an active group", skiffErr(t, nil, "offsets", "restore", snap, "-b", b), "active members", group)
	mustContain(t, "delete an active group", skiffErr(t, nil, "group", "delete", group, "-b", b), "has active members")
	mustContain(t, "reset an active group", skiffErr(t, nil, "group", "reset-offsets", group, "-t", topic, "--to-earliest", "-b", b), "active members")
	cl.Close()

	// reset-offsets, once the group is empty.
	waitFor(t, "the member to leave", func() bool {
		return strings.Contains(skiffOK(t, nil, "group", "describe", group, "-b", b), "members:      0")
	})
	out = skiffOK(t, nil, "group", "reset-offsets", group, "-t", topic, "--to-offset", "4", "--dry-run", "-b", b)
	mustContain(t, "reset dry run", out, "TOPIC", "OLD", "NEW", "dry run: nothing committed")
	if got := committedOffsets(t, b, group); got[topic+"/0"] != 10 {
		t.Fatalf("a dry run reset the offsets: %v", got)
	}
	skiffOK(t, nil, "group", "reset-offsets", group, "-t", topic, "--to-offset", "4", "-b", b)
	for p, o := range committedOffsets(t, b, group) {
		if o != 4 {
			t.Fatalf("after --to-offset 4: %s at %d", p, o)
		}
	}
	skiffOK(t, nil, "group", "reset-offsets", group, "-t", topic, "--to-latest", "-b", b)
	for p, o := range committedOffsets(t, b, group) {
		if o != 10 {
			t.Fatalf("after --to-latest: %s at %d", p, o)
		}
	}
	skiffOK(t, nil, "group", "reset-offsets", group, "-t", topic, "--to-datetime", "2000-01-01T00:00:00Z", "-b", b)
	for p, o := range committedOffsets(t, b, group) {
		if o != 0 {
			t.Fatalf("after --to-datetime in the past: %s at %d", p, o)
		}
	}
	mustContain(t, "two modes", skiffErr(t, nil, "group", "reset-offsets", group, "-t", topic, "--to-earliest", "--to-latest", "-b", b), "exactly one of")
}

// committedOffsets returns group's committed offsets as "topic/partition" -> offset.
func committedOffsets(t *testing.T, b, group string) map[string]int64 {
	t.Helper()
	adm := newTestAdmin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int64)
	for _, r := range rs.Sorted() {
		if r.Err == nil && r.At >= 0 {
			out[r.Topic+"/"+string(rune('0'+r.Partition))] = r.At
		}
	}
	return out
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
