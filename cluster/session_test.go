package cluster

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		<-tick.C
	}
	return time.Since(start)
}

func TestBrokerSessionCloseUnregisters(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	c := startCache(t, m.Client())
	s := New(m.Client(), quiet)
	b := Broker{ID: 3, Host: "kafka-3.example", Port: 9092, Rack: "r1", Listeners: []Endpoint{
		{Listener: "SASL_SSL", Host: "kafka-3.example", Port: 9092}, {Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9095}}}
	sess, err := s.RegisterBroker(ctx, b, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !brokerEqual(sess.Broker(), b) || sess.Lease() == 0 {
		t.Fatalf("session %+v lease %x", sess.Broker(), sess.Lease())
	}
	waitFor(t, 5*time.Second, "cache sees broker", func() bool {
		got, ok := c.Broker(3)
		return ok && got.Epoch > 0 && brokerEqual(withoutEpoch(got), b)
	})
	if bs := c.Brokers(); len(bs) != 1 || !brokerEqual(withoutEpoch(bs[0]), b) {
		t.Fatalf("Brokers() = %v", bs)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Revoking deletes the key at once, well before the 5 s TTL.
	if n := countKeys(t, m.Client(), brokerKey(3)); n != 0 {
		t.Fatal("broker key left after Close")
	}
	select {
	case <-sess.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	if _, err := s.RegisterBroker(ctx, Broker{ID: 1, Port: 9092}, time.Second); !errors.Is(err, ErrInvalidBroker) {
		t.Fatalf("no host: %v", err)
	}
}

func TestBrokerLeaseExpiry(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	c := startCache(t, m.Client())
	// The broker's own client: closing it stops keep-alives without a revoke,
	// as if the broker process had died.
	bc := newClient(t, m)
	sess, err := New(bc, quiet).RegisterBroker(ctx, Broker{ID: 1, Host: "h", Port: 9092}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "cache sees broker", func() bool { _, ok := c.Broker(1); return ok })
	// Still registered well after the TTL: keep-alives work.
	rev, err := m.Client().Put(ctx, "/elsewhere", "x")
	if err != nil {
		t.Fatal(err)
	}
	keepAlive := time.NewTimer(2500 * time.Millisecond)
	<-keepAlive.C // let 2.5 TTLs pass; the check below is what matters
	if _, ok := c.Broker(1); !ok || c.WaitRevision(ctx, rev.Header.Revision) != nil {
		t.Fatal("broker lost its registration while alive")
	}

	bc.Close()
	took := waitFor(t, 10*time.Second, "broker key expires", func() bool { _, ok := c.Broker(1); return !ok })
	t.Logf("broker gone %v after its client stopped (TTL 1 s)", took)
	if n := countKeys(t, m.Client(), brokerKey(1)); n != 0 {
		t.Fatal("broker key still in etcd")
	}
	select {
	case <-sess.Done():
	case <-ctx.Done():
		t.Fatal("session Done not closed")
	}
	sess.Close() // the client is gone: the revoke fails, and that is fine here
}

func TestBrokerIDInUse(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	b := Broker{ID: 2, Host: "h", Port: 9092}
	first, err := s.RegisterBroker(ctx, b, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := s.RegisterBroker(short, b, 10*time.Second); !errors.Is(err, ErrBrokerIDInUse) {
		t.Fatalf("duplicate id: %v", err)
	}
	// A registration waiting for the id gets it once the holder goes away.
	type result struct {
		s   *Session
		err error
	}
	done := make(chan result, 1)
	go func() {
		s2, err := s.RegisterBroker(ctx, b, 10*time.Second)
		done <- result{s2, err}
	}()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("waiting registration: %v", r.err)
	}
	defer r.s.Close()
	resp, err := m.Client().Get(ctx, brokerKey(2))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != int64(r.s.Lease()) {
		t.Fatalf("broker key %v under lease %x: %v", resp.Kvs, r.s.Lease(), err)
	}
	// Only the leases of live sessions are left: the refused attempt's
	// lease was revoked.
	leases, err := m.Client().Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Leases) != 1 {
		t.Fatalf("%d leases, want 1", len(leases.Leases))
	}
}

// TestBrokerRestartTakesOverItsOwnRegistration: a broker restarting on its own data
// directory (same DataDirID) replaces its previous run's registration at once, while
// a broker with another data directory and the same id still has to wait.
func TestBrokerRestartTakesOverItsOwnRegistration(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	b := Broker{ID: 4, Host: "h", Port: 9092, DataDirID: "dir-a"}
	// The previous run: its lease would live 60 s more had it crashed.
	prev, err := s.RegisterBroker(ctx, b, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer prev.Close()
	other := b
	other.DataDirID = "dir-b"
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := s.RegisterBroker(short, other, 10*time.Second); !errors.Is(err, ErrBrokerIDInUse) {
		t.Fatalf("another data directory with the same id: %v", err)
	}
	quick, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	next, err := s.RegisterBroker(quick, b, 60*time.Second)
	if err != nil {
		t.Fatalf("restart of the same broker: %v", err)
	}
	defer next.Close()
	resp, err := m.Client().Get(ctx, brokerKey(4))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != int64(next.Lease()) {
		t.Fatalf("broker key not held by the new session: %v %v", err, resp.Kvs)
	}
}

// TestSessionSuspect: a suspected session is not valid until a keep-alive sent after
// Suspect is answered, which the session sends itself; it has not lapsed meanwhile.
// Once etcd no longer has the lease, Renew says so and the session has lapsed.
func TestSessionSuspect(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	sess, err := s.RegisterBroker(ctx, Broker{ID: 5, Host: "h", Port: 9092}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if !sess.Valid() {
		t.Fatal("a new session is not valid")
	}
	sess.Suspect()
	if sess.Valid() || sess.Lapsed() {
		t.Fatalf("suspected session: valid %v, lapsed %v; want neither", sess.Valid(), sess.Lapsed())
	}
	took := waitFor(t, 3*time.Second, "the suspected session confirmed", sess.Valid)
	t.Logf("confirmed %v after Suspect", took)

	if _, err := m.Client().Revoke(ctx, sess.Lease()); err != nil {
		t.Fatal(err)
	}
	if err := sess.Renew(ctx); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("Renew of a revoked lease: %v", err)
	}
	if sess.Valid() || !sess.Lapsed() {
		t.Fatalf("revoked session: valid %v, lapsed %v; want lapsed only", sess.Valid(), sess.Lapsed())
	}
}

// TestSessionRevokedRegistersAgain: a session whose lease someone else revokes (an
// etcd member that led before a pause does that) lapses at once, well before its next
// keep-alive; the broker registers again under the same broker epoch, which the
// cache reports.
func TestSessionRevokedRegistersAgain(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	c := startCache(t, m.Client())
	s := New(m.Client(), quiet)
	b := Broker{ID: 6, Host: "h", Port: 9092, DataDirID: "dir"}
	sess, err := s.RegisterBroker(ctx, b, 6*time.Second) // keep-alives every 2 s
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	epoch := sess.Epoch()
	waitFor(t, 5*time.Second, "cache sees broker", func() bool { got, ok := c.Broker(6); return ok && got.Epoch == epoch })
	if _, err := m.Client().Revoke(ctx, sess.Lease()); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, time.Second, "the revoked session lapsed", sess.Lapsed)
	t.Logf("lapsed %v after the revoke", took)
	waitFor(t, 5*time.Second, "cache sees the departure", func() bool {
		d, ok := c.Snapshot().departed[6]
		return ok && d.b.Epoch == epoch && !d.b.Leaving
	})

	b.Epoch = epoch
	again, err := s.RegisterBroker(ctx, b, 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.Epoch() != epoch {
		t.Fatalf("registered again under epoch %d, want %d", again.Epoch(), epoch)
	}
	waitFor(t, 5*time.Second, "cache sees the new registration", func() bool {
		got, ok := c.Broker(6)
		return ok && got.Epoch == epoch && c.Revision() > 0 && countKeys(t, m.Client(), brokerKey(6)) == 1
	})
	resp, err := m.Client().Get(ctx, brokerKey(6))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != int64(again.Lease()) || resp.Kvs[0].CreateRevision == epoch {
		t.Fatalf("broker key %v: %v", resp.Kvs, err)
	}
	if _, ok := c.Snapshot().departed[6]; ok {
		t.Fatal("the cache still lists the broker as departed after it registered again")
	}
	// A clean Close marks the registration as leaving before it ends it.
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "cache sees the broker leave", func() bool {
		d, ok := c.Snapshot().departed[6]
		return ok && d.b.Leaving
	})
}

// withoutEpoch drops the broker epoch the cache adds, to compare with what was registered.
func withoutEpoch(b Broker) Broker { b.Epoch = 0; return b }

func TestBrokerAddress(t *testing.T) {
	b := Broker{ID: 1, Host: "internal", Port: 9093, Listeners: []Endpoint{
		{Listener: "SASL_SSL", Host: "kafka.example", Port: 9092}, {Listener: "PLAINTEXT", Host: "internal", Port: 9093}}}
	if h, p, ok := b.Address("SASL_SSL"); !ok || h != "kafka.example" || p != 9092 {
		t.Errorf("SASL_SSL: %s:%d %v", h, p, ok)
	}
	if _, _, ok := b.Address("SSL"); ok {
		t.Error("a listener the broker does not have has an address")
	}
	old := Broker{ID: 2, Host: "h", Port: 9092}
	if h, p, ok := old.Address("ANY"); !ok || h != "h" || p != 9092 {
		t.Errorf("registration without listeners: %s:%d %v", h, p, ok)
	}
}

// TestSessionRenewFailuresLoggedOnce: a session whose renewals keep failing (here
// its lease was revoked; a node cut off fails them the same way) logs the first
// failure and the rest at debug level, however long it goes on.
func TestSessionRenewFailuresLoggedOnce(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	rec := newRecorder()
	s := New(m.Client(), slog.New(rec))
	sess, err := s.RegisterBroker(ctx, Broker{ID: 8, Host: "h", Port: 9092}, time.Second) // a renewal every 1/3 s
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := m.Client().Revoke(ctx, sess.Lease()); err != nil {
		t.Fatal(err)
	}
	failures := func() (info, debug int) {
		for _, r := range rec.all() {
			if r.Message != "renewing the broker session failed" {
				continue
			}
			switch r.Level {
			case slog.LevelInfo:
				info++
			case slog.LevelDebug:
				debug++
			default:
				t.Errorf("failed renewal at %v", r.Level)
			}
		}
		return info, debug
	}
	waitFor(t, 10*time.Second, "five failed renewals", func() bool { info, debug := failures(); return info+debug >= 5 })
	if info, debug := failures(); info != 1 {
		t.Errorf("%d failed renewals at info, %d at debug: want the first only at info", info, debug)
	}
}

// TestNewPartitionsInSyncWithRegisteredAgain: a broker that registered again
// in the same run keeps its first registration's epoch in its value (its key's
// create revision is new). A partition created on it must be stamped with that
// epoch, the one the controller reads, or its ISR looks restarted from birth
// and the controller shrinks it to the leader with a new leader epoch.
func TestNewPartitionsInSyncWithRegisteredAgain(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	c := startCache(t, m.Client())
	s := New(m.Client(), quiet)
	// Epoch 1: a registration again under its run's first epoch, older than
	// any key (etcd's first write is revision 2).
	b := Broker{ID: 7, Host: "h", Port: 9092, DataDirID: "dir", Epoch: 1}
	sess, err := s.RegisterBroker(ctx, b, 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	waitFor(t, 5*time.Second, "cache sees broker", func() bool { got, ok := c.Broker(7); return ok && got.Epoch == 1 })
	if resp, err := m.Client().Get(ctx, brokerKey(7)); err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision == 1 {
		t.Fatalf("broker key %v: %v (its create revision must differ from the epoch for this test)", resp.Kvs, err)
	}
	if _, err := s.CreateTopic(ctx, Topic{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: oneReplica(1, 7)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreatePartitions(ctx, "t", 2, func(Topic) ([][]int32, error) { return [][]int32{{7}}, nil }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "cache sees both partitions", func() bool {
		_, ok := c.Partition("t", 1)
		return ok
	})
	snap := c.Snapshot()
	for p := range int32(2) {
		st, _ := snap.Partition("t", p)
		if st.EpochOf(7) != 1 || !snap.inSync(st, 7) {
			t.Errorf("partition %d: ISR %v stamped with broker epochs %v, want 1 (in sync: %v)", p, st.ISR, st.ISREpochs, snap.inSync(st, 7))
		}
	}
}
