package replication

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// idlePeerServer is a broker that answers ApiVersions v0 and, like kafkaapi,
// closes a connection silent for idle (0: never).
type idlePeerServer struct {
	ln       net.Listener
	idle     time.Duration
	accepts  atomic.Int32
	closed   atomic.Int32 // connections ended, by either side
	requests atomic.Int32
	drop     atomic.Bool // close each connection on its next request, unanswered
}

func startIdlePeer(t *testing.T, idle time.Duration) *idlePeerServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &idlePeerServer{ln: ln, idle: idle}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepts.Add(1)
			go s.serve(nc)
		}
	}()
	return s
}

func (s *idlePeerServer) serve(nc net.Conn) {
	defer s.closed.Add(1)
	defer nc.Close()
	r := bufio.NewReader(nc)
	for {
		if s.idle > 0 {
			nc.SetReadDeadline(time.Now().Add(s.idle))
		}
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return // idle, or closed by the client
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		s.requests.Add(1)
		if s.drop.Load() {
			return
		}
		resp := kmsg.NewPtrApiVersionsResponse()       // v0: header v0, no tags
		b := append([]byte{0, 0, 0, 0}, frame[4:8]...) // correlation id
		b = resp.AppendTo(b)
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		if _, err := nc.Write(b); err != nil {
			return
		}
	}
}

func newPeerManager(t *testing.T, addr string, maxIdle time.Duration) *Manager {
	m, err := NewManager(Config{Dir: t.TempDir(), PeerMaxIdle: maxIdle,
		BrokerAddr: func(int32) (string, bool) { return addr, true }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func apiVersions(ctx context.Context, m *Manager) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	_, err := m.BrokerRequest(ctx, 1, req)
	return err
}

// TestBrokerRequestPeerClosedIdle: a pooled connection the peer closed for
// idleness costs the caller nothing, the request going once more on a new
// connection; a request the peer drops on that one too fails, tried only twice.
func TestBrokerRequestPeerClosedIdle(t *testing.T) {
	s := startIdlePeer(t, 50*time.Millisecond)
	m := newPeerManager(t, s.ln.Addr().String(), time.Hour) // the age bound out of the way
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := apiVersions(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the peer to close the idle connection", func() bool { return s.closed.Load() == 1 })
	if err := apiVersions(ctx, m); err != nil {
		t.Fatalf("request after the peer closed the pooled connection: %v", err)
	}
	if got := s.accepts.Load(); got != 2 {
		t.Errorf("%d connections accepted, want 2", got)
	}

	// A peer that reads the request and closes: not retried without end.
	s.drop.Store(true)
	before := s.requests.Load()
	err := apiVersions(ctx, m)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("request to a peer dropping it: %v, want EOF", err)
	}
	if got := s.requests.Load() - before; got != 2 {
		t.Errorf("dropped request sent %d times, want 2 (pooled, then new)", got)
	}
}

// TestBrokerRequestMaxIdle: a pooled connection idle longer than PeerMaxIdle is
// closed unused and a new one dialed, though the peer still has it open.
func TestBrokerRequestMaxIdle(t *testing.T) {
	s := startIdlePeer(t, 0)
	m := newPeerManager(t, s.ln.Addr().String(), time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := apiVersions(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := apiVersions(ctx, m); err != nil { // within the bound: reused
		t.Fatal(err)
	}
	if got := s.accepts.Load(); got != 1 {
		t.Fatalf("%d connections accepted, want 1", got)
	}
	m.peers.mu.Lock()
	m.peers.idle[1][0].at = time.Now().Add(-2 * time.Minute)
	m.peers.mu.Unlock()
	if err := apiVersions(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := s.accepts.Load(); got != 2 {
		t.Errorf("%d connections accepted, want 2", got)
	}
	if got := s.requests.Load(); got != 3 {
		t.Errorf("%d requests served, want 3 (none sent on the old connection)", got)
	}
	waitFor(t, "the old connection closed", func() bool { return s.closed.Load() == 1 })
}
