package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Session is a broker's registration: /skiff/brokers/<id> written under an
// etcd lease that the session keeps alive. If keep-alives stop reaching etcd
// for the lease's TTL, etcd deletes the key and the cluster considers the
// broker gone; Done reports that.
type Session struct {
	s      *concurrency.Session
	client *clientv3.Client // the session's own lessor; see sessionClient
	broker Broker
	ttl    time.Duration
	logger *slog.Logger
	// validUntil (Unix nanoseconds) is when the lease may have expired at the
	// earliest, as far as this process can tell: the last keep-alive answer plus
	// half the TTL (the other half covers the answer's trip and clock rate).
	validUntil atomic.Int64
	// lastAnswer (Unix nanoseconds) is the last keep-alive answer: the lease expires
	// at etcd a whole TTL after it at the latest.
	lastAnswer atomic.Int64
	// suspect is set by Suspect (the process was paused): until a keep-alive sent
	// after it is answered, answers that may have waited out the pause are not trusted.
	suspect   atomic.Bool
	expired   atomic.Bool   // etcd said the lease is gone
	renew     chan struct{} // wakes renewLoop (Suspect)
	stopWatch context.CancelFunc
	epoch     int64 // the broker epoch of this registration

	closeOnce sync.Once
	closeErr  error
}

// RegisterBroker registers b under a new lease of the given TTL (rounded up
// to whole seconds; etcd raises TTLs below its minimum, 1 s with Skiff's
// default election timeout) and keeps the lease alive until Session.Close.
// b.Epoch is 0 for the first registration of a broker's run, and the epoch of
// its previous session when a running broker registers again (Broker.Epoch).
//
// If the key is held by another lease with the same Broker.DataDirID (the
// previous run of this broker, whose lease has not expired yet), that lease is
// revoked and the key taken over. If it is held by another broker with the
// same id, RegisterBroker waits for that key to go away until ctx is done,
// then fails with ErrBrokerIDInUse. Cancelling ctx never ends a session
// that was returned.
func (s *Store) RegisterBroker(ctx context.Context, b Broker, ttl time.Duration) (*Session, error) {
	if b.ID < 0 || b.Host == "" || b.Port <= 0 || b.Port > math.MaxUint16 {
		return nil, fmt.Errorf("%w: id %d at %s:%d", ErrInvalidBroker, b.ID, b.Host, b.Port)
	}
	secs := int64(math.Ceil(ttl.Seconds()))
	if secs < 1 {
		secs = 1
	}
	lease, err := s.client.Grant(ctx, secs)
	if err != nil {
		return nil, fmt.Errorf("cluster: grant lease for broker %d: %w", b.ID, err)
	}
	client := sessionClient(s.client)
	// The session's own context is the client's: keep-alives outlive ctx.
	cs, err := concurrency.NewSession(client, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(secs)))
	if err != nil {
		client.Close()
		return nil, errors.Join(fmt.Errorf("cluster: keep lease of broker %d alive: %w", b.ID, err), s.revoke(lease.ID))
	}
	sess := &Session{s: cs, client: client, broker: b, ttl: time.Duration(secs) * time.Second, logger: s.logger, renew: make(chan struct{}, 1)}
	sess.answered(time.Now())
	wctx, stop := context.WithCancel(client.Ctx())
	sess.stopWatch = stop
	answers, err := client.KeepAlive(wctx, lease.ID)
	if err != nil {
		stop()
		return nil, errors.Join(fmt.Errorf("cluster: watch keep-alives of broker %d: %w", b.ID, err), sess.Close())
	}
	go sess.watchKeepAlives(answers)
	go sess.renewLoop(wctx)
	created, err := s.putBroker(ctx, b, lease.ID)
	if err != nil {
		return nil, errors.Join(err, sess.Close())
	}
	sess.epoch = cmp.Or(b.Epoch, created)
	go sess.watchKey(wctx, created)
	s.logger.Info("registered broker", "broker_id", b.ID, "host", b.Host, "port", b.Port,
		"rack", b.Rack, "lease", fmt.Sprintf("%x", int64(lease.ID)), "ttl_s", secs)
	return sess, nil
}

// sessionClient returns a client that shares c's connection, reads, writes and
// watches, but has a lessor of its own, so that a session's keep-alives travel on
// a stream of their own. An etcd member forwards the keep-alives of one stream to
// the etcd leader one at a time, and one sent towards a leader that was just cut
// off holds the stream up for etcd's request timeout (5 s plus two election
// timeouts), longer than a broker session lives: a broker that registers again
// after losing its session must not queue behind it. Closing the returned client
// closes only its lessor.
func sessionClient(c *clientv3.Client) *clientv3.Client {
	v := clientv3.NewCtxClient(c.Ctx(), clientv3.WithZapLogger(c.GetLogger()))
	v.KV, v.Watcher, v.Lease = c.KV, sharedWatcher{c.Watcher}, clientv3.NewLease(c)
	return v
}

// sharedWatcher is a Watcher that a session client's Close leaves open.
type sharedWatcher struct{ clientv3.Watcher }

func (sharedWatcher) Close() error { return nil }

func (s *Store) revoke(id clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(s.client.Ctx(), 5*time.Second)
	defer cancel()
	if _, err := s.client.Revoke(ctx, id); err != nil {
		return fmt.Errorf("cluster: revoke lease %x: %w", int64(id), err)
	}
	return nil
}

// putBroker creates the broker key under lease, waiting while another lease
// holds it, and returns its create revision.
func (s *Store) putBroker(ctx context.Context, b Broker, lease clientv3.LeaseID) (int64, error) {
	key := brokerKey(b.ID)
	for {
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, encodeBroker(b), clientv3.WithLease(lease))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: register broker %d: %w", b.ID, err)
		}
		if resp.Succeeded {
			return resp.Header.Revision, nil // the key's create revision: a new run's broker epoch
		}
		held := resp.Responses[0].GetResponseRange().Kvs
		if len(held) == 0 {
			continue
		}
		holder := held[0].Lease
		if prev, err := decodeBroker(key, held[0].Value); err == nil && b.DataDirID != "" && prev.DataDirID == b.DataDirID {
			s.logger.Info("replacing the registration of this broker's previous run", "broker_id", b.ID, "lease", fmt.Sprintf("%x", holder))
			if _, err := s.client.Revoke(ctx, clientv3.LeaseID(holder)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return 0, fmt.Errorf("cluster: revoke the previous session of broker %d: %w", b.ID, err)
			}
			continue
		}
		s.logger.Warn("broker id held by another session; waiting for it to expire",
			"broker_id", b.ID, "lease", fmt.Sprintf("%x", holder))
		if err := s.waitDeleted(ctx, key, resp.Header.Revision); err != nil {
			return 0, fmt.Errorf("%w: broker %d, lease %x: %w", ErrBrokerIDInUse, b.ID, holder, err)
		}
	}
}

// waitDeleted waits until key is deleted after revision rev, or ctx ends.
func (s *Store) waitDeleted(ctx context.Context, key string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range s.client.Watch(wctx, key, clientv3.WithRev(rev+1), clientv3.WithFilterPut()) {
		if wr.CompactRevision != 0 {
			return nil // history gone: let the caller look again
		}
		if err := wr.Err(); err != nil {
			return err
		}
		if len(wr.Events) > 0 {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("watch ended")
}

// watchKeepAlives moves validUntil with every keep-alive answer (the session's
// lessor shares one keep-alive stream between this and concurrency.Session).
func (s *Session) watchKeepAlives(answers <-chan *clientv3.LeaseKeepAliveResponse) {
	for a := range answers {
		if a.TTL <= 0 {
			s.expire()
			continue
		}
		if !s.suspect.Load() {
			s.answered(time.Now())
		}
	}
	s.validUntil.Store(0)
}

// watchKey ends the session as soon as its broker key, created at revision
// created, is deleted (until ctx ends): the lease is gone, whether it expired or
// was revoked. An etcd member that led before its process was paused revokes, as
// it resumes, the leases it saw expire by its stale clock, live ones included
// (etcd's own guard against that, ensureLeadership, is skipped while its raft loop
// ticks, and it ticks at once on resuming); keep-alive answers would tell only a
// renewal later.
func (s *Session) watchKey(ctx context.Context, created int64) {
	key := brokerKey(s.broker.ID)
	for wr := range s.client.Watch(ctx, key, clientv3.WithRev(created+1), clientv3.WithFilterPut()) {
		if wr.Err() != nil || wr.CompactRevision != 0 {
			return // the keep-alives still tell
		}
		if len(wr.Events) > 0 {
			s.expire()
			return
		}
	}
}

// answered records a keep-alive answer to a request sent at or before sent.
func (s *Session) answered(sent time.Time) {
	raise(&s.lastAnswer, sent.UnixNano())
	raise(&s.validUntil, sent.Add(s.ttl/2).UnixNano())
}

// raise moves v up to x, never down.
func raise(v *atomic.Int64, x int64) {
	for old := v.Load(); x > old && !v.CompareAndSwap(old, x); old = v.Load() {
	}
}

func (s *Session) expire() {
	s.expired.Store(true)
	s.validUntil.Store(0)
}

// renewLoop sends a keep-alive of its own whenever the session's keep-alive stream
// has gone unanswered for a third of the TTL (about one missed renewal), or Suspect
// asks for one, until ctx ends. Each goes on a new stream: a stream whose renewal was
// forwarded to an etcd leader that froze or was cut off is held up for etcd's request
// timeout (5 s plus two election timeouts), as long as a default session lives, while
// a new stream reaches whichever member leads now. Without this, every broker would
// lose its session whenever the etcd leader's node freezes.
//
// Of a run of failed renewals (a node cut off fails one every third of the TTL
// for as long as the cut lasts) the first is logged, the rest at debug level, and
// a renewal that ends the run says how many failed.
func (s *Session) renewLoop(ctx context.Context) {
	t := time.NewTicker(s.ttl / 6)
	defer t.Stop()
	failed := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !s.suspect.Load() && time.Since(time.Unix(0, s.lastAnswer.Load())) < s.ttl/3 {
				s.renewedAfter(&failed) // the keep-alive stream is answered again
				continue
			}
		case <-s.renew:
		}
		rctx, cancel := context.WithTimeout(ctx, s.ttl/3)
		err := s.Renew(rctx)
		cancel()
		switch {
		case ctx.Err() != nil: // the session is ending
		case err != nil:
			// The session lapses if this goes on; the next tick tries again.
			level := slog.LevelInfo
			if failed > 0 {
				level = slog.LevelDebug
			}
			failed++
			s.logger.Log(ctx, level, "renewing the broker session failed", "broker_id", s.broker.ID, "attempt", failed, "err", err)
		default:
			s.renewedAfter(&failed)
		}
	}
}

// renewedAfter ends a run of *failed renewals, saying how long it was.
func (s *Session) renewedAfter(failed *int) {
	if *failed > 0 {
		s.logger.Info("renewed the broker session", "broker_id", s.broker.ID, "failed_attempts", *failed)
		*failed = 0
	}
}

// ErrSessionExpired is returned by Renew when etcd no longer has the session's lease.
var ErrSessionExpired = errors.New("cluster: broker session expired")

// Renew sends one keep-alive for the session's lease on a stream of its own and,
// if etcd still has the lease, extends the session's validity from the moment the
// keep-alive was sent. It fails with ErrSessionExpired if the lease is gone;
// cancelling ctx abandons the keep-alive.
func (s *Session) Renew(ctx context.Context) error {
	sent := time.Now()
	resp, err := s.client.KeepAliveOnce(ctx, s.s.Lease())
	if errors.Is(err, rpctypes.ErrLeaseNotFound) || err == nil && resp.TTL <= 0 {
		s.expire()
		return fmt.Errorf("%w: broker %d, lease %x", ErrSessionExpired, s.broker.ID, int64(s.s.Lease()))
	}
	if err != nil {
		return fmt.Errorf("cluster: renew the session of broker %d: %w", s.broker.ID, err)
	}
	s.answered(sent)
	s.suspect.Store(false)
	return nil
}

// Suspect makes the session invalid until a keep-alive sent from now on is answered
// (one is sent at once): for a process that finds it was paused, since an answer that
// arrived during the pause may be older than the lease's expiry.
func (s *Session) Suspect() {
	s.suspect.Store(true)
	s.validUntil.Store(0)
	select {
	case s.renew <- struct{}{}:
	default:
	}
}

// Valid reports whether the lease is certainly still alive: a broker must not act
// as leader once this is false, since the cluster may already have moved its
// partitions (for instance after the process was paused longer than the TTL).
func (s *Session) Valid() bool {
	select {
	case <-s.s.Done():
		return false
	default:
	}
	return !s.suspect.Load() && !s.expired.Load() && time.Now().UnixNano() < s.validUntil.Load()
}

// Epoch returns the broker epoch of this registration (Broker.Epoch).
func (s *Session) Epoch() int64 { return s.epoch }

// Lapsed reports whether the lease has expired at etcd, as far as this process can
// tell: etcd said so, or no keep-alive answer has arrived for a whole TTL, even if
// the keep-alive stream has not said so (a stream stuck behind an etcd leader
// change). The broker should register again.
func (s *Session) Lapsed() bool {
	select {
	case <-s.s.Done():
		return true
	default:
	}
	return s.expired.Load() || time.Now().UnixNano() > s.lastAnswer.Load()+int64(s.ttl)
}

// Broker returns the registered broker.
func (s *Session) Broker() Broker { return s.broker }

// Lease returns the session's lease, for keys that must vanish with the
// broker (such as a controller election candidacy).
func (s *Session) Lease() clientv3.LeaseID { return s.s.Lease() }

// Done is closed when the session ends: its lease expired or could no
// longer be kept alive (the broker is then unregistered, or soon will be),
// or Close was called.
func (s *Session) Done() <-chan struct{} { return s.s.Done() }

// Abandon stops keeping the lease alive without revoking it (the key then expires
// within the TTL): for a broker stopping while etcd has no quorum, where a revoke
// would only wait for its timeout. Close after Abandon does nothing.
func (s *Session) Abandon() {
	s.closeOnce.Do(func() {
		s.stopWatch()
		s.validUntil.Store(0)
		s.s.Orphan()
		s.client.Close() // ends its keep-alive stream, wherever it is stuck
	})
}

// markLeaving sets Broker.Leaving in the broker key, if it is still this session's
// (best effort, for a second at most: the revoke that follows deletes the key
// anyway).
func (s *Session) markLeaving() {
	ctx, cancel := context.WithTimeout(s.client.Ctx(), time.Second)
	defer cancel()
	key, b := brokerKey(s.broker.ID), s.broker
	b.Epoch, b.Leaving = s.epoch, true
	lease := s.s.Lease()
	_, _ = s.client.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue(key), "=", lease)).
		Then(clientv3.OpPut(key, encodeBroker(b), clientv3.WithLease(lease))).Commit()
}

// Close revokes the lease, which deletes the broker key at once. It is
// idempotent.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.stopWatch()
		s.validUntil.Store(0)
		s.markLeaving()
		if err := s.s.Close(); err != nil {
			s.closeErr = fmt.Errorf("cluster: close session of broker %d: %w", s.broker.ID, err)
		}
		s.client.Close()
	})
	return s.closeErr
}
