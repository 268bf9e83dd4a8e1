package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestConcurrentJoins: two members joining one running member at the same moment are
// both admitted: etcd takes one learner at a time and drops a membership change made
// while another is pending; AddMember and Promote wait their turn.
func TestConcurrentJoins(t *testing.T) {
	first, err := Start(context.Background(), testConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	join := func(name string) (*Member, error) {
		cfg := testConfig(t, nil)
		cfg.Name = name
		if cfg, err = cfg.Resolve(); err != nil {
			return nil, err
		}
		id, initial, err := AddMember(ctx, first.Client(), nil, name, "http://"+cfg.AdvertisePeerAddr, first.logger)
		if err != nil {
			return nil, err
		}
		cfg.InitialCluster, cfg.ClusterState = initial, ClusterStateExisting
		m, err := Start(ctx, cfg)
		if err != nil {
			return nil, err
		}
		if err := Promote(ctx, first.Client(), id); err != nil {
			return m, err
		}
		return m, m.WaitVoting(ctx)
	}
	type result struct {
		m   *Member
		err error
	}
	results := make(chan result, 2)
	for i := range 2 {
		go func() {
			m, err := join(fmt.Sprintf("j%d", i))
			results <- result{m, err}
		}()
	}
	var errs []error
	for range 2 {
		r := <-results
		if r.m != nil {
			defer r.m.Close()
		}
		errs = append(errs, r.err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	list, err := first.Client().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Members) != 3 {
		t.Fatalf("%d members, want 3", len(list.Members))
	}
	for _, m := range list.Members {
		if m.IsLearner {
			t.Errorf("member %s is still a learner", m.Name)
		}
	}
}

// TestAddMemberKnownToAll: when AddMember returns, every running member lists the new
// member in its own view of the membership, which is what the new member asks its
// peers for as it starts (a peer that had not applied the addition yet would make
// it refuse to start: "member count is unequal").
func TestAddMemberKnownToAll(t *testing.T) {
	ms, _ := startMembers(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	peer, err := bindAddr("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := AddMember(ctx, ms[0].Client(), nil, "learner", "http://"+peer, ms[0].logger)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		list, err := m.Client().MemberList(ctx, clientv3.WithSerializable())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(list.Members, func(x *etcdserverpb.Member) bool { return x.ID == id }) {
			t.Errorf("member %s does not list the new member %x yet", m.Name(), id)
		}
	}
	if err := RemoveMember(ctx, ms[0].Client(), id); err != nil {
		t.Fatal(err)
	}
}
