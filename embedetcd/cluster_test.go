package embedetcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// startPair starts a two-member cluster a, b in this process.
func startPair(t *testing.T) (a, b *Member) {
	t.Helper()
	ca, cb := testConfig(t, nil), testConfig(t, nil)
	ca.Name, cb.Name = "a", "b"
	for _, c := range []*Config{&ca, &cb} {
		var err error
		if c.ClientAddr, err = bindAddr(c.ClientAddr); err != nil {
			t.Fatal(err)
		}
		if c.PeerAddr, err = bindAddr(c.PeerAddr); err != nil {
			t.Fatal(err)
		}
	}
	initial := "a=http://" + ca.PeerAddr + ",b=http://" + cb.PeerAddr
	ca.InitialCluster, cb.InitialCluster = initial, initial

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		m   *Member
		err error
	}
	rb := make(chan result, 1)
	go func() {
		m, err := Start(ctx, cb)
		rb <- result{m, err}
	}()
	a, errA := Start(ctx, ca)
	r := <-rb
	if errA != nil || r.err != nil {
		if a != nil {
			a.Close()
		}
		if r.m != nil {
			r.m.Close()
		}
		t.Fatalf("start pair: %v, %v", errA, r.err)
	}
	return a, r.m
}

func TestHealthyNeedsQuorum(t *testing.T) {
	a, b := startPair(t)
	ctx := context.Background()
	if err := a.Healthy(ctx); err != nil {
		t.Fatalf("a: %v", err)
	}
	if err := b.Healthy(ctx); err != nil {
		t.Fatalf("b: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// One of two members: no quorum. Healthy must say so, within its bound.
	t0 := time.Now()
	err := a.Healthy(ctx)
	if err == nil {
		t.Fatal("a is healthy without quorum")
	}
	if took := time.Since(t0); took > HealthTimeout+time.Second {
		t.Fatalf("Healthy took %v", took)
	}
	t.Logf("without quorum: %v", err)
	t1 := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("closed without quorum in %v", time.Since(t1))
}

func TestErrWhenRemoved(t *testing.T) {
	a, b := startPair(t)
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list, err := a.Client().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var id uint64
	for _, mem := range list.Members {
		if mem.Name == "b" {
			id = mem.ID
		}
	}
	if id == 0 {
		t.Fatalf("b not in member list %v", list.Members)
	}
	// etcd refuses reconfiguration until the members have been connected for
	// a while ("unhealthy cluster"); retry until then.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := a.Client().MemberRemove(ctx, id)
		if err == nil {
			break
		}
		if !errors.Is(err, rpctypes.ErrUnhealthy) {
			t.Fatal(err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("MemberRemove: %v", err)
		}
	}
	select {
	case err := <-b.Err():
		if !errors.Is(err, ErrStopped) {
			t.Fatalf("b.Err: %v, want ErrStopped", err)
		}
	case <-ctx.Done():
		t.Fatal("removed member reported no failure")
	}
	if err := a.Healthy(ctx); err != nil {
		t.Fatalf("a after removing b: %v", err)
	}
	select {
	case err := <-a.Err():
		t.Fatalf("a.Err: %v", err)
	default:
	}
}
