package appliance

import (
	"context"
	"time"

	"skiff/cluster"
)

// sessionValid reports whether the broker's session lease is certainly alive; the
// partitions lead only while it is.
func (n *Node) sessionValid() bool {
	s := n.session.Load()
	return s != nil && s.Valid()
}

// selfEpoch is the broker epoch of the current session (0 without one).
func (n *Node) selfEpoch() int64 {
	if s := n.session.Load(); s != nil {
		return s.Epoch()
	}
	return 0
}

// sessionLoop keeps the broker registered until Close. When the session ends (etcd
// unreachable for longer than the session timeout, or this process paused that
// long), the cluster may already have moved this broker's partitions, so every local
// partition stops leading until a new session exists; the metadata then says which
// partitions this broker leads.
func (n *Node) sessionLoop(self cluster.Broker) {
	defer close(n.sessionEnd)
	check := time.NewTicker(n.cfg.SessionTimeout / 4)
	defer check.Stop()
	for {
		sess := n.session.Load()
	wait:
		for {
			select {
			case <-sess.Done():
				break wait
			case <-check.C:
				// A keep-alive stream can stay silent after an etcd leader change
				// while the lease expires: do not wait for it to say so.
				if sess.Lapsed() {
					break wait
				}
			case <-n.stop:
				return
			}
		}
		n.parts.SetFenced(true)
		n.status("broker session lost: not leading any partition until it is back")
		sess.Abandon() // the lease is gone or going; a revoke could only wait
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.SessionTimeout)
			next, err := n.store.RegisterBroker(ctx, self, n.cfg.SessionTimeout)
			cancel()
			if err == nil {
				n.session.Store(next)
				n.parts.SetFenced(false)
				n.status("broker session restored")
				break
			}
			n.logger.Warn("registering the broker again failed", "attempt", attempt+1, "err", err)
			select {
			case <-time.After(time.Duration(min(attempt+1, 10)) * 200 * time.Millisecond):
			case <-n.stop:
				return
			}
		}
	}
}
