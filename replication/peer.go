package replication

// Requests from this broker to another one over the inter-broker listener, with the
// TLS and SASL of follower connections: the transaction coordinator's
// WriteTxnMarkers towards partition leaders.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxIdlePeerConns bounds the idle connections kept per broker.
const maxIdlePeerConns = 4

// peers keeps idle connections to other brokers for BrokerRequest.
type peers struct {
	mu     sync.Mutex
	idle   map[int32][]*kconn
	closed bool
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
	c, err := m.takePeer(ctx, id, addr)
	if err != nil {
		return nil, fmt.Errorf("connect to broker %d at %s: %w", id, addr, err)
	}
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Now()) })
	resp, err := c.request(req, timeout)
	if !stop() || err != nil {
		c.close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("%s to broker %d: %w", kmsg.NameForKey(req.Key()), id, err)
	}
	m.putPeer(id, c)
	return resp, nil
}

func (m *Manager) takePeer(ctx context.Context, id int32, addr string) (*kconn, error) {
	m.peers.mu.Lock()
	if m.peers.closed {
		m.peers.mu.Unlock()
		return nil, errManagerClosed
	}
	if cs := m.peers.idle[id]; len(cs) > 0 {
		c := cs[len(cs)-1]
		m.peers.idle[id] = cs[:len(cs)-1]
		m.peers.mu.Unlock()
		return c, nil
	}
	m.peers.mu.Unlock()
	return dialLeader(ctx, addr, fmt.Sprintf("skiff-broker-%d", m.cfg.BrokerID), &m.cfg)
}

func (m *Manager) putPeer(id int32, c *kconn) {
	m.peers.mu.Lock()
	defer m.peers.mu.Unlock()
	if m.peers.closed || len(m.peers.idle[id]) >= maxIdlePeerConns {
		c.close()
		return
	}
	if m.peers.idle == nil {
		m.peers.idle = make(map[int32][]*kconn)
	}
	m.peers.idle[id] = append(m.peers.idle[id], c)
}

func (m *Manager) closePeers() {
	m.peers.mu.Lock()
	defer m.peers.mu.Unlock()
	m.peers.closed = true
	for id, cs := range m.peers.idle {
		for _, c := range cs {
			c.close()
		}
		delete(m.peers.idle, id)
	}
}
