package replication

// Requests from this broker to another one over the inter-broker listener, with the
// TLS and SASL of follower connections: the transaction coordinator's
// WriteTxnMarkers towards partition leaders, a leader's AddPartitionsToTxn to a
// transaction coordinator, share-partition state changes.
//
// A broker closes a connection idle for its connections.max.idle.ms, so an idle
// connection is reused only within Config.PeerMaxIdle, and a request whose reused
// connection turns out closed before it answered is sent once more on a new
// one. Every request sent here must bear being applied twice (a broker may have
// read it before closing): markers, notices, verification and implicit adds to
// a transaction, and share-partition state resets and deletions all do.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxIdlePeerConns bounds the idle connections kept per broker.
const maxIdlePeerConns = 4

// peers keeps idle connections to other brokers for BrokerRequest.
type peers struct {
	mu     sync.Mutex
	idle   map[int32][]idlePeer // oldest first
	closed bool
}

// idlePeer is a pooled connection and when it was put back.
type idlePeer struct {
	c  *kconn
	at time.Time
}

// errManagerClosed: BrokerRequest after Close.
var errManagerClosed = errors.New("replication: manager closed")

// BrokerRequest sends req (at the version the caller set, flexible or not) to broker id
// and returns its answer. It fails when ctx ends (the request is then abandoned
// and its connection closed) or the broker cannot be reached.
func (m *Manager) BrokerRequest(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	addr, ok := m.cfg.BrokerAddr(id)
	if !ok {
		return nil, fmt.Errorf("broker %d has no known address", id)
	}
	resp, reused, err := m.brokerRequest(ctx, id, addr, req, false)
	if err != nil && reused && closedBeforeAnswer(err) && ctx.Err() == nil {
		// The pooled connection was closed by the broker (its idle timeout, a
		// restart) while it sat here: once more on a new one.
		resp, _, err = m.brokerRequest(ctx, id, addr, req, true)
	}
	return resp, err
}

// brokerRequest is one try of BrokerRequest, on a pooled connection unless
// fresh; reused reports whether it was on a pooled one.
func (m *Manager) brokerRequest(ctx context.Context, id int32, addr string, req kmsg.Request, fresh bool) (resp kmsg.Response, reused bool, err error) {
	c, reused, err := m.takePeer(ctx, id, addr, fresh)
	if err != nil {
		return nil, false, fmt.Errorf("connect to broker %d at %s: %w", id, addr, err)
	}
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Now()) })
	resp, err = c.request(req, timeout)
	if !stop() || err != nil {
		c.close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, reused, fmt.Errorf("%s to broker %d: %w", kmsg.NameForKey(req.Key()), id, err)
	}
	m.putPeer(id, c)
	return resp, reused, nil
}

// closedBeforeAnswer reports whether a request's error shows its connection
// closed by the other end before any of the answer came.
func closedBeforeAnswer(err error) bool {
	if errors.Is(err, errAnswerCut) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// takePeer returns a pooled connection to broker id idle for at most
// PeerMaxIdle (reused true), else, or if fresh, a new one.
func (m *Manager) takePeer(ctx context.Context, id int32, addr string, fresh bool) (c *kconn, reused bool, err error) {
	m.peers.mu.Lock()
	if m.peers.closed {
		m.peers.mu.Unlock()
		return nil, false, errManagerClosed
	}
	cs := m.peers.idle[id]
	n := 0 // the stale ones, first
	for n < len(cs) && time.Since(cs[n].at) > m.cfg.PeerMaxIdle {
		n++
	}
	stale := cs[:n:n]
	cs = cs[n:]
	if !fresh && len(cs) > 0 {
		c = cs[len(cs)-1].c
		cs = cs[:len(cs)-1]
	}
	if n > 0 || c != nil {
		m.peers.idle[id] = cs
	}
	m.peers.mu.Unlock()
	for _, p := range stale {
		p.c.close()
	}
	if c != nil {
		return c, true, nil
	}
	c, err = dialLeader(ctx, addr, fmt.Sprintf("skiff-broker-%d", m.cfg.BrokerID), &m.cfg)
	return c, false, err
}

func (m *Manager) putPeer(id int32, c *kconn) {
	m.peers.mu.Lock()
	defer m.peers.mu.Unlock()
	if m.peers.closed || len(m.peers.idle[id]) >= maxIdlePeerConns {
		c.close()
		return
	}
	if m.peers.idle == nil {
		m.peers.idle = make(map[int32][]idlePeer)
	}
	m.peers.idle[id] = append(m.peers.idle[id], idlePeer{c, time.Now()})
}

func (m *Manager) closePeers() {
	m.peers.mu.Lock()
	defer m.peers.mu.Unlock()
	m.peers.closed = true
	for id, cs := range m.peers.idle {
		for _, p := range cs {
			p.c.close()
		}
		delete(m.peers.idle, id)
	}
}
