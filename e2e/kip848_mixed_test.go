package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestKIP848MixedProtocols: a classic member (cooperative-sticky) and a KIP-848
// member share one group while a producer writes (KIP-848's online migration,
// group.consumer.migration.policy=bidirectional): the classic member starts the
// group alone; the KIP-848 member's join turns it into a consumer group and they
// converge on halves; when the KIP-848 member leaves, the group turns classic and
// the classic member takes everything again. No partition is owned by two members
// at once, and every record is consumed.
func TestKIP848MixedProtocols(t *testing.T) {
	n := testnode.Start(t, kip848NodeArgs...)
	const topic, group, partitions = "mixed", "mixed-workers", 6
	createTopic(t, n.Addr, topic, partitions)
	adm := kadm.NewClient(newClient(t, n.Addr))
	l, o := newLedger(), &owners{owner: map[int32]string{}}

	stopProducing := keepProducing(n.Addr, topic, "m", 300)

	ownsAll := func(who string) {
		t.Helper()
		var last map[int32]string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			o.mu.Lock()
			last = make(map[int32]string, len(o.owner))
			all := len(o.owner) == partitions
			for p, m := range o.owner {
				last[p] = m
				all = all && m == who
			}
			o.mu.Unlock()
			if all {
				return
			}
		}
		t.Fatalf("%s does not own every partition: %v", who, last)
	}

	startTrackedMember(t, n.Addr, topic, group, "classic", l, o, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	ownsAll("classic")

	stopModern := start848Member(t, n.Addr, topic, group, "modern", l, o)
	split := waitConverged(t, adm, group, partitions, "classic", "modern")
	t.Logf("a consumer group of a classic and a KIP-848 member: %v", split)
	if len(split["classic"]) == 0 || len(split["modern"]) == 0 {
		t.Fatalf("the partitions are not shared: %v", split)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		// Consumption goes on: both receive while they share the group.
		if got := l.snapshot(); countBy(got, "modern") > 0 && countBy(got, "classic") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("both members did not receive records")
		}
	}

	stopModern() // the last KIP-848 member leaves: the group turns classic
	ownsAll("classic")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if d := ds[group]; d.Err != nil || d.ProtocolType != "consumer" || len(d.Members) != 1 {
		t.Fatalf("after the KIP-848 member left, DescribeGroups: %+v", d)
	}

	produced, err := stopProducing()
	if err != nil {
		t.Fatal(err)
	}
	waitCount(t, l, "m", int(produced))
	o.mu.Lock()
	if len(o.violations) > 0 {
		t.Errorf("partitions owned twice at once:\n%s", strings.Join(o.violations, "\n"))
	}
	o.mu.Unlock()
	twice := 0
	for _, ds := range l.snapshot() {
		if len(ds) > 1 {
			twice++
		}
	}
	t.Logf("%d records consumed by a classic and a KIP-848 member; %d received more than once", produced, twice)
}

// countBy counts the records member received.
func countBy(got map[string][]delivery, member string) int {
	n := 0
	for _, ds := range got {
		for _, d := range ds {
			if d.member == member {
				n++
			}
		}
	}
	return n
}
