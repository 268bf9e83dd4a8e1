package cluster

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/embedetcd"
	"skiff/internal/freeport"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := freeport.Pick("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// TestCacheSurvivesQuorumLoss: a two-member cluster loses a member. The
// cache keeps serving its last snapshot, its require-leader watch ends, and
// once quorum is back it lists again and follows new writes.
func TestCacheSurvivesQuorumLoss(t *testing.T) {
	ctx := testCtx(t)
	a, b, restartB := startPair(t, ctx)
	defer a.Close()

	s := New(a.Client(), quiet)
	rec := newRecorder()
	c, err := StartCache(ctx, a.Client(), slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rev, err := s.CreateTopic(ctx, Topic{Name: "before", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	watchEnded := func() bool {
		for _, r := range rec.all() {
			if r.Message == "metadata watch ended; listing again" {
				return true
			}
		}
		return false
	}
	took := waitFor(t, 15*time.Second, "watch ends without a leader", watchEnded)
	t.Logf("watch ended %v after quorum loss", took)
	if _, ok := c.Topic("before"); !ok {
		t.Fatal("cache lost its snapshot without quorum")
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := a.Healthy(short); err == nil {
		t.Fatal("member healthy without quorum")
	}

	b = restartB() // same data and addresses: quorum is back
	defer b.Close()
	rev, err = s.CreateTopic(ctx, Topic{Name: "after", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Topic("after"); !ok {
		t.Fatal("topic created after recovery missing")
	}
	if _, ok := c.Topic("before"); !ok {
		t.Fatal("topic created before quorum loss missing")
	}
}

// startPair starts a two-member etcd cluster (a loses quorum when b stops) and
// returns a function that starts b again with the same data and addresses.
func startPair(t *testing.T, ctx context.Context) (a, b *embedetcd.Member, restartB func() *embedetcd.Member) {
	t.Helper()
	cfgs := []embedetcd.Config{
		{Name: "a", Dir: filepath.Join(t.TempDir(), "a"), ClientAddr: freeAddr(t), PeerAddr: freeAddr(t), Logger: quiet},
		{Name: "b", Dir: filepath.Join(t.TempDir(), "b"), ClientAddr: freeAddr(t), PeerAddr: freeAddr(t), Logger: quiet},
	}
	initial := "a=http://" + cfgs[0].PeerAddr + ",b=http://" + cfgs[1].PeerAddr
	cfgs[0].InitialCluster, cfgs[1].InitialCluster = initial, initial
	start := func(cfg embedetcd.Config) <-chan *embedetcd.Member {
		ch := make(chan *embedetcd.Member, 1)
		go func() {
			m, err := embedetcd.Start(ctx, cfg)
			if err != nil {
				t.Error(err)
			}
			ch <- m
		}()
		return ch
	}
	chA, chB := start(cfgs[0]), start(cfgs[1])
	a, b = <-chA, <-chB
	if a == nil || b == nil {
		for _, m := range []*embedetcd.Member{a, b} {
			if m != nil {
				m.Close()
			}
		}
		t.FailNow()
	}
	return a, b, func() *embedetcd.Member {
		m := <-start(cfgs[1])
		if m == nil {
			t.FailNow()
		}
		return m
	}
}

// TestControllerCloseWithoutQuorum: a broker waiting for the controllership stops
// while etcd has no quorum. etcd's Campaign resigns with the client's own context
// then, which waits for quorum; Close must return anyway (a node stopping last in
// its cluster hung in Close).
func TestControllerCloseWithoutQuorum(t *testing.T) {
	ctx := testCtx(t)
	a, b, _ := startPair(t, ctx)
	defer a.Close()
	s := New(a.Client(), quiet)
	cache := startCache(t, a.Client())
	candidate := func(id int32) *Controller {
		sess, err := s.RegisterBroker(ctx, Broker{ID: id, Host: "h", Port: 9092}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sess.Abandon)
		return StartController(s, cache, ControllerConfig{BrokerID: id, Session: func() *Session { return sess }, Logger: quiet})
	}
	first := candidate(1)
	defer first.Close()
	waitFor(t, 15*time.Second, "broker 1 elected", first.Active)
	second := candidate(2)
	waitFor(t, 15*time.Second, "broker 2 campaigning", func() bool {
		resp, err := a.Client().Get(ctx, prefixController, clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 2
	})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		second.Close()
		close(closed)
	}()
	took := waitFor(t, 3*closeWait, "the waiting candidate's Close returns", func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	})
	t.Logf("Close returned %v after the call, without quorum", took)
	if second.Active() {
		t.Fatal("broker 2 became controller without quorum")
	}
}
