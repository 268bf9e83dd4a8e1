package appliance

// The broker's session, the fence and the view. A broker leads partitions only while
// its session lease is certainly alive and its metadata cache has caught up with etcd
// since the session was (re)established or last put in doubt; otherwise the node is
// fenced (replication.Manager.SetFenced): nothing leads here, and waiting produces
// and fetches are answered NOT_LEADER_OR_FOLLOWER. Its view of the cluster (the
// metadata cache) is stale from the moment the session is in doubt until a
// linearizable read of etcd has been caught up with (cluster.Cache.Sync); meanwhile
// Metadata and FindCoordinator wait for it, or name no leaders (viewCurrent), so
// that a node back from a pause does not send clients to leaders that are gone.
// Two loops keep this true: watchClock notices that the process was paused
// (SIGSTOP, a VM or GC pause, a stalled disk) from a jump of the monotonic clock
// between its beats, and sessionLoop fences the node when the session is in doubt,
// brings the view up to date, and lifts the fence once the session is confirmed (or
// registered again) and the metadata has caught up.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"skiff/cluster"
)

// beat is how often watchClock runs.
const beat = 100 * time.Millisecond

// pauseLimit is the longest gap between two beats of watchClock that is not taken
// for a pause of the process: a quarter of the session timeout. A longer pause may
// have outlived the lease (a keep-alive answer read after the pause may be older
// than the lease's expiry), so the session must be confirmed again.
func (n *Node) pauseLimit() time.Duration { return n.cfg.SessionTimeout / 4 }

// sessionValid reports whether the broker's session lease is certainly alive and the
// process has not been paused without noticing yet; the partitions lead only while
// it holds.
func (n *Node) sessionValid() bool {
	s := n.session.Load()
	return s != nil && s.Valid() && !n.clockStalled()
}

// clockStalled reports whether watchClock has not run for longer than pauseLimit:
// the process was paused and requests may run before the loop notices. Until it has,
// nothing leads here.
func (n *Node) clockStalled() bool {
	return time.Since(n.clockBase)-time.Duration(n.lastBeat.Load()) > n.pauseLimit()
}

// selfEpoch is the broker epoch of the current session (0 without one).
func (n *Node) selfEpoch() int64 {
	if s := n.session.Load(); s != nil {
		return s.Epoch()
	}
	return 0
}

// watchClock beats until Close. A gap between two beats longer than pauseLimit means
// the process was paused: the session is put in doubt and the node fenced before the
// beat that ends clockStalled, so no request is served as if nothing had happened.
func (n *Node) watchClock() {
	defer close(n.clockEnd)
	t := time.NewTicker(beat)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-t.C:
		case <-n.stop:
			return
		}
		now := time.Now()
		if gap := now.Sub(last); gap > n.pauseLimit() {
			n.logger.Warn("the process was paused: not leading any partition until the broker session is confirmed and the metadata has caught up",
				"paused_for", gap.Round(time.Millisecond))
			n.view.markStale()
			if s := n.session.Load(); s != nil {
				s.Suspect()
			}
			n.parts.SetFenced(true)
			select {
			case n.paused <- struct{}{}:
			default:
			}
		}
		last = now
		n.lastBeat.Store(int64(now.Sub(n.clockBase)))
	}
}

// sessionLoop keeps the broker registered until Close. Whenever the session is in
// doubt (no keep-alive answer for half the session timeout, the lease gone, or the
// process paused), the cluster may already have moved this broker's partitions, so
// every local partition stops leading until restore has confirmed the session or
// registered the broker again and caught the metadata up; the metadata then says
// which partitions this broker leads.
func (n *Node) sessionLoop(self cluster.Broker) {
	defer close(n.sessionEnd)
	t := time.NewTicker(beat)
	defer t.Stop()
	for {
		for !n.parts.Fenced() {
			select {
			case <-t.C:
			case <-n.paused:
			case <-n.stop:
				return
			}
		}
		n.view.markStale()
		n.parts.SetFenced(true)
		n.status("broker session in doubt: not leading any partition until it is confirmed")
		if !n.restore(self) {
			return
		}
	}
}

// restore first brings the view up to date; then it waits until the session is
// confirmed (a keep-alive sent after the doubt is answered: the session renews
// itself) or, once its lease has lapsed, registers the broker again; then it
// catches the local partitions up with the metadata and lifts the fence. It returns
// false at Close.
func (n *Node) restore(self cluster.Broker) bool {
	registered := false
	for attempt := 0; ; attempt++ {
		pause := beat
		sess := n.session.Load()
		switch {
		case n.view.stale.Load():
			if _, err := n.syncView(); err != nil {
				n.logger.Debug("catching up with the cluster metadata failed", "err", err)
				break
			}
			n.view.markCurrent()
			continue
		case sess.Valid():
			if err := n.catchUp(); err != nil {
				n.logger.Warn("catching up with the cluster metadata failed", "err", err)
				break
			}
			if !n.sessionValid() || n.view.stale.Load() {
				break // in doubt again meanwhile
			}
			n.parts.SetFenced(false)
			n.view.notify()
			if registered {
				n.status("broker session restored")
			} else {
				n.status("broker session confirmed")
			}
			return true
		case sess.Lapsed():
			n.status("broker session lost: registering the broker again")
			sess.Abandon() // the lease is gone or going; a revoke could only wait
			// The same run, with the same storage: its ISR memberships stay valid.
			again := self
			again.Epoch = sess.Epoch()
			ctx, cancel := context.WithTimeout(context.Background(), n.etcdAttempt())
			next, err := n.store.RegisterBroker(ctx, again, n.cfg.SessionTimeout)
			cancel()
			if err != nil {
				n.logger.Warn("registering the broker again failed", "attempt", attempt+1, "err", err)
				pause = time.Duration(min(attempt+1, 10)) * 200 * time.Millisecond
				break
			}
			n.session.Store(next)
			registered = true
			continue
		}
		select {
		case <-time.After(pause):
		case <-n.stop:
			return false
		}
	}
}

// etcdAttempt bounds one etcd request of restore. A request that a member which led
// etcd before a pause took on, and dropped when it learnt it no longer leads, is only
// given up after etcd's request timeout (seconds): trying again soon is quicker.
func (n *Node) etcdAttempt() time.Duration { return max(time.Second, n.cfg.SessionTimeout/3) }

// syncView waits until the metadata cache has everything etcd has committed now.
func (n *Node) syncView() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), n.etcdAttempt())
	defer cancel()
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return n.cache.Sync(ctx)
}

// catchUp brings the view up to date and waits until the local partitions have
// applied it.
func (n *Node) catchUp() error {
	rev, err := n.syncView()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.etcdAttempt())
	defer cancel()
	return n.parts.WaitApplied(ctx, rev)
}

// view records whether the node's metadata cache is known to be current.
type view struct {
	stale atomic.Bool
	mu    sync.Mutex
	moved chan struct{} // closed and replaced when the view becomes current, or the fence is lifted
}

func newView() *view { return &view{moved: make(chan struct{})} }

func (v *view) markStale() { v.stale.Store(true) }

func (v *view) markCurrent() {
	if v.stale.Swap(false) {
		v.notify()
	}
}

// notify wakes viewCurrent's waiters.
func (v *view) notify() {
	v.mu.Lock()
	defer v.mu.Unlock()
	close(v.moved)
	v.moved = make(chan struct{})
}

// viewFresh reports whether the view is current (caught up with etcd since the
// session was last in doubt), whether or not the fence has been lifted yet
// (kafkaapi.Config.ViewFresh).
func (n *Node) viewFresh() bool { return !n.view.stale.Load() && !n.clockStalled() }

// viewCurrent waits until the node is restored (its view current and its
// partitions not fenced), or ctx ends, and reports whether its view of the cluster is
// current (kafkaapi.Config.ViewCurrent). Waiting for the fence too keeps Metadata
// from naming no leader for the partitions this node is about to lead again once its
// session is confirmed. A pause that watchClock has not noticed yet makes the view
// stale too.
func (n *Node) viewCurrent(ctx context.Context) bool {
	for {
		n.view.mu.Lock()
		moved := n.view.moved
		n.view.mu.Unlock()
		current := !n.view.stale.Load() && !n.clockStalled()
		if current && !n.parts.Fenced() {
			return true
		}
		select {
		case <-moved:
		case <-time.After(beat): // watchClock marks a pause within a beat
		case <-ctx.Done():
			return current
		}
	}
}
