package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// startMembers starts a cluster of count members in this process and returns them
// with their resolved configs (to restart them).
func startMembers(t *testing.T, count int) ([]*Member, []Config) {
	t.Helper()
	cfgs := make([]Config, count)
	var initial []string
	for i := range cfgs {
		c := testConfig(t, nil)
		c.Name = fmt.Sprintf("m%d", i+1)
		var err error
		if c, err = c.withDefaults(); err != nil {
			t.Fatal(err)
		}
		cfgs[i] = c
		initial = append(initial, c.Name+"=http://"+c.AdvertisePeerAddr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		i   int
		m   *Member
		err error
	}
	results := make(chan result, count)
	for i := range cfgs {
		cfgs[i].InitialCluster = strings.Join(initial, ",")
		go func() {
			m, err := Start(ctx, cfgs[i])
			results <- result{i, m, err}
		}()
	}
	members := make([]*Member, count)
	var errs []error
	for range count {
		r := <-results
		members[r.i] = r.m
		errs = append(errs, r.err)
	}
	for _, m := range members {
		if m != nil {
			t.Cleanup(func() { m.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("start %d members: %v", count, err)
	}
	return members, cfgs
}

// TestMemberRemoved: a member removed from its cluster reports ErrRemoved on Err
// (whether it applied its own removal or was refused by its peers first).
func TestMemberRemoved(t *testing.T) {
	ms, _ := startMembers(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// ErrMemberNotFound: an attempt that got no answer was applied after all (the
	// member's Err below proves the removal either way).
	if err := RemoveMember(ctx, ms[0].Client(), ms[2].ID()); err != nil && !errors.Is(err, ErrMemberNotFound) {
		t.Fatal(err)
	}
	if err := RemoveMember(ctx, ms[0].Client(), 0x1234); !errors.Is(err, ErrMemberNotFound) {
		t.Fatalf("removing an unknown member: %v, want ErrMemberNotFound", err)
	}
	t0 := time.Now()
	select {
	case err := <-ms[2].Err():
		if !errors.Is(err, ErrRemoved) || !errors.Is(err, ErrStopped) {
			t.Fatalf("removed member reports %v, want ErrRemoved and ErrStopped", err)
		}
		t.Logf("removed member stopped %v after MemberRemove", time.Since(t0))
	case <-ctx.Done():
		t.Fatal("removed member still running")
	}
	if err := ms[0].Healthy(ctx); err != nil {
		t.Fatalf("the two members left: %v", err)
	}
}

// TestRemovedAsksPeers: a stopped member that did not see its own removal learns it
// from the other members.
func TestRemovedAsksPeers(t *testing.T) {
	ms, _ := startMembers(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ms[2].Close(); err != nil {
		t.Fatal(err)
	}
	if wasRemoved(ms[2].etcd, nil, ms[2].logger, ms[2].closing) {
		t.Fatal("reports removed before it was")
	}
	// ErrMemberNotFound: an attempt that got no answer was applied after all
	// (wasRemoved below proves the removal either way).
	if err := RemoveMember(ctx, ms[0].Client(), ms[2].ID()); err != nil && !errors.Is(err, ErrMemberNotFound) {
		t.Fatal(err)
	}
	if !wasRemoved(ms[2].etcd, nil, ms[2].logger, ms[2].closing) {
		t.Fatal("does not learn from its peers that it was removed")
	}
}

// TestForceNewCluster: with two of three members gone for good, the survivor restarts
// as a one-member cluster on its data, and a new member joins it.
func TestForceNewCluster(t *testing.T) {
	ms, cfgs := startMembers(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := ms[0].Client().Put(ctx, "kept", "yes"); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := cfgs[0]
	cfg.ForceNewCluster = true
	survivor, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer survivor.Close()
	resp, err := survivor.Client().Get(ctx, "kept")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "yes" {
		t.Fatalf("data after force-new-cluster: %v %v", resp, err)
	}
	list, err := survivor.Client().MemberList(ctx)
	if err != nil || len(list.Members) != 1 || list.Members[0].ID != survivor.ID() {
		t.Fatalf("members after force-new-cluster: %v %v", list, err)
	}

	joiner := testConfig(t, nil)
	joiner.Name = "m4"
	if joiner, err = joiner.Resolve(); err != nil {
		t.Fatal(err)
	}
	id, initial, err := AddMember(ctx, survivor.Client(), nil, joiner.Name, "http://"+joiner.AdvertisePeerAddr, survivor.logger)
	if err != nil {
		t.Fatal(err)
	}
	joiner.InitialCluster, joiner.ClusterState = initial, ClusterStateExisting
	m4, err := Start(ctx, joiner)
	if err != nil {
		t.Fatal(err)
	}
	defer m4.Close()
	if err := Promote(ctx, survivor.Client(), id); err != nil {
		t.Fatal(err)
	}
	if err := m4.WaitVoting(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, err := m4.Client().Get(ctx, "kept"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("data on the new member: %v %v", resp, err)
	}
}
