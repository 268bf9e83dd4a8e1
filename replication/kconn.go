package replication

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kconn is a follower's connection to a leader, speaking the Kafka protocol with kmsg
// like any client (request header v1; only non-flexible versions are used).
type kconn struct {
	nc   net.Conn
	corr int32
	buf  []byte
	id   string // client id: "skiff-replica-<broker>"
}

// dialLeader connects to a leader's inter-broker listener at addr, with TLS when
// tlsConfig is set (see Config.TLS).
func dialLeader(ctx context.Context, addr, clientID string, tlsConfig func(host string) *tls.Config) (*kconn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		host, _, _ := net.SplitHostPort(addr)
		tc := tls.Client(nc, tlsConfig(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	return &kconn{nc: nc, id: clientID}, nil
}

// request sends req (its version set) and reads the answer, within timeout.
func (c *kconn) request(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	c.corr++
	b := append(c.buf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(c.corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.id)))
	b = append(b, c.id...)
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.buf = b
	c.nc.SetDeadline(time.Now().Add(timeout))
	if _, err := c.nc.Write(b); err != nil {
		return nil, err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	if corr := int32(binary.BigEndian.Uint32(hdr[4:])); corr != c.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", corr, c.corr)
	}
	if size < 4 || size > 1<<30 {
		return nil, fmt.Errorf("response size %d", size)
	}
	body := make([]byte, size-4) // records are kept by the caller: a fresh buffer
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

func (c *kconn) close() { c.nc.Close() }
