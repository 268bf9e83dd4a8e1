package client

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"skiff/internal/offsetsnap"
)

// TestWriteGroupDescription prints an empty group with one committed offset:
// the header, no member table, and a lag row with "-" where nothing is known.
func TestWriteGroupDescription(t *testing.T) {
	l := kadm.DescribedGroupLag{
		Group:       "orders",
		State:       "Empty",
		Coordinator: kadm.BrokerDetail{NodeID: 1, Host: "localhost", Port: 9092},
		Lag: kadm.GroupLag{"orders": {
			0: {Topic: "orders", Partition: 0, Commit: kadm.Offset{At: 120}, End: kadm.ListedOffset{Offset: 130}, Lag: 10},
			1: {Topic: "orders", Partition: 1, Commit: kadm.Offset{At: -1}, End: kadm.ListedOffset{Offset: 5}, Lag: -1},
		}},
	}
	var b bytes.Buffer
	if err := WriteGroupDescription(&b, l); err != nil {
		t.Fatal(err)
	}
	want := `group:        orders
state:        Empty
protocol:     none (offsets only)
coordinator:  1 (localhost:9092)
members:      0

TOPIC   PARTITION  COMMITTED  LOG-END  LAG  MEMBER
orders  0          120        130      10   -
orders  1          -          5        -    -
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	if err := WriteGroupDescription(&b, kadm.DescribedGroupLag{Group: "g", State: "Empty"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "\nno committed offsets and no assigned partitions\n") {
		t.Errorf("group without offsets:\n%s", b.String())
	}
}

func TestOffsetsByGroup(t *testing.T) {
	snap := &offsetsnap.Snapshot{Offsets: []offsetsnap.Offset{
		{Group: "b", Topic: "t", Partition: 1, Offset: 7, LeaderEpoch: 2, Metadata: "m"},
		{Group: "a", Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1},
		{Group: "b", Topic: "u", Partition: 0, Offset: 9, LeaderEpoch: -1},
		{Group: "skip", Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1},
	}}
	byGroup := OffsetsByGroup(snap, regexp.MustCompile("^(?:a|b)$"))
	if got := strings.Join(byGroup.Groups(), ","); got != "a,b" {
		t.Fatalf("groups = %s; want a,b", got)
	}
	o, ok := byGroup["b"].Lookup("t", 1)
	if !ok || o.At != 7 || o.LeaderEpoch != 2 || o.Metadata != "m" {
		t.Errorf("b t/1 = %+v, %v; want offset 7, epoch 2, metadata m", o, ok)
	}
	if n := len(byGroup["b"].Sorted()); n != 2 {
		t.Errorf("group b has %d offsets; want 2", n)
	}
	if all := OffsetsByGroup(snap, nil); len(all) != 3 {
		t.Errorf("no filter kept %d groups; want 3", len(all))
	}
}
