package embedetcd

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

func TestQuorumWithout(t *testing.T) {
	for _, tc := range []struct {
		voters, answering int
		want              string // "": allowed
	}{
		{0, 0, "etcd member m1 is the last voting member: removing it would leave no cluster"},
		{1, 1, ""},
		{1, 0, "removing etcd member m1 would leave 1 voting members of which 0 answer, fewer than the 1 a quorum needs"},
		{2, 2, ""},
		{2, 1, "would leave 2 voting members of which 1 answer, fewer than the 2 a quorum needs"},
		{3, 2, ""},
		{4, 2, "would leave 4 voting members of which 2 answer, fewer than the 3 a quorum needs"},
		{4, 3, ""},
	} {
		err := QuorumWithout("m1", tc.voters, tc.answering)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d voters, %d answering: refused (%v), want allowed", tc.voters, tc.answering, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%d voters, %d answering: %v, want %q", tc.voters, tc.answering, err, tc.want)
		}
	}
}

func TestMemberName(t *testing.T) {
	if got := MemberName(12); got != "skiff-12" {
		t.Fatalf("MemberName(12) = %q", got)
	}
}

// TestStatusesAndCheckRemove: with one of three members down, its status says so,
// removing another voter is refused (one of the two left answers) and removing the
// down one is not. A learner or a member that never started needs no call.
func TestStatusesAndCheckRemove(t *testing.T) {
	ms, _ := startMembers(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := ms[0].Client()
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	member := func(m *Member) *etcdserverpb.Member {
		for _, pm := range list.Members {
			if pm.ID == m.ID() {
				return pm
			}
		}
		t.Fatalf("member %s not listed", m.Name())
		return nil
	}

	leaders := 0
	for _, h := range Statuses(ctx, cli, list.Members) {
		if !h.Healthy || h.Error != "" {
			t.Errorf("member %s: healthy %v, error %q", h.Member.Name, h.Healthy, h.Error)
		}
		if h.Leader {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("%d members are named leader, want 1", leaders)
	}

	if err := ms[2].Close(); err != nil {
		t.Fatal(err)
	}
	if hs := Statuses(ctx, cli, []*etcdserverpb.Member{member(ms[2])}); hs[0].Healthy || !strings.HasPrefix(hs[0].Error, "no answer within 1s") {
		t.Errorf("stopped member: %+v", hs[0])
	}
	if err := CheckRemove(ctx, cli, list.Members, member(ms[1])); err == nil ||
		!strings.Contains(err.Error(), "removing etcd member m2 would leave 2 voting members of which 1 answer") {
		t.Errorf("removing a live voter while another is down: %v", err)
	}
	if err := CheckRemove(ctx, cli, list.Members, member(ms[2])); err != nil {
		t.Errorf("removing the down voter: %v", err)
	}

	// Neither needs a client: nothing is asked.
	joining := &etcdserverpb.Member{ID: 7, Name: "joining", IsLearner: true}
	if hs := Statuses(ctx, nil, []*etcdserverpb.Member{joining}); hs[0].Healthy || !strings.HasPrefix(hs[0].Error, "not started yet") {
		t.Errorf("member without client URLs: %+v", hs[0])
	}
	if err := CheckRemove(ctx, nil, list.Members, joining); err != nil {
		t.Errorf("removing a learner: %v", err)
	}
}
