package replication

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// kconn is a follower's connection to a leader, speaking the Kafka protocol with kmsg
// like any client (request header v1, or v2 for a flexible version).
type kconn struct {
	nc   net.Conn
	r    *bufio.Reader // a small answer (a follower's fetch at low rates) takes one read
	corr int32
	buf  []byte
	id   string // client id: "skiff-replica-<broker>"

	// reuse: the caller is done with each answer before its next request, so the
	// answer's bytes are read into body, kept between requests (a fetcher's
	// answers are appended and dropped; a fresh buffer each time costs
	// allocation and GC at the replication rate).
	reuse bool
	body  []byte

	// With SASL: the mechanism, the leader's host, and when to re-authenticate
	// (before the session the leader granted ends, KIP-368; zero: never).
	sasl     sasl.Mechanism
	host     string
	reauthAt time.Time
}

// readBufSize is the buffered reader's size: a fetch answer at low rates, with its
// header, fits in one read.
const readBufSize = 64 << 10

// maxKeptBody bounds the answer buffer a reusing connection keeps between requests.
const maxKeptBody = 8 << 20

// errAnswerCut wraps the error of an answer that ended after it began: the
// request was read, so it is not sent again (BrokerRequest).
var errAnswerCut = errors.New("answer cut short")

// saslTimeout bounds each request of an authentication.
const saslTimeout = 10 * time.Second

// dialLeader connects to a leader's inter-broker listener at addr, with TLS and
// SASL as cfg asks (Config.TLS, Config.SASL).
func dialLeader(ctx context.Context, addr, clientID string, cfg *Config) (*kconn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	if cfg.TLS != nil {
		tc := tls.Client(nc, cfg.TLS(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	c := &kconn{nc: nc, r: bufio.NewReaderSize(nc, readBufSize), id: clientID, sasl: cfg.SASL, host: host}
	if c.sasl != nil {
		if err := c.authenticate(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("SASL authentication with %s: %w", addr, err)
		}
	}
	return c, nil
}

// authenticate runs SaslHandshake v1 and SaslAuthenticate v1 with the
// connection's mechanism, and notes when to do it again.
func (c *kconn) authenticate(ctx context.Context) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = c.sasl.Name()
	resp, err := c.exchange(hs, saslTimeout)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return fmt.Errorf("SaslHandshake %s: %w", c.sasl.Name(), kerr.ErrorForCode(code))
	}
	session, msg, err := c.sasl.Authenticate(ctx, c.host)
	if err != nil {
		return err
	}
	start := time.Now()
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(1)
		req.SASLAuthBytes = msg
		resp, err := c.exchange(req, saslTimeout)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 {
			err := fmt.Errorf("SaslAuthenticate: %w", kerr.ErrorForCode(r.ErrorCode))
			if r.ErrorMessage != nil {
				err = fmt.Errorf("%w: %s", err, *r.ErrorMessage)
			}
			return err
		}
		done, next, err := session.Challenge(r.SASLAuthBytes)
		if err != nil {
			return err
		}
		if done {
			c.reauthAt = time.Time{}
			if life := time.Duration(r.SessionLifetimeMillis) * time.Millisecond; life > 0 {
				// Again at 90% of the session, leaving at least the time this
				// authentication took.
				c.reauthAt = start.Add(life - max(life/10, time.Since(start)))
			}
			return nil
		}
		msg = next
	}
}

// request sends req (its version set) and reads the answer, within timeout,
// re-authenticating first when the SASL session is about to end.
func (c *kconn) request(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	if !c.reauthAt.IsZero() && time.Now().After(c.reauthAt) {
		ctx, cancel := context.WithTimeout(context.Background(), saslTimeout)
		err := c.authenticate(ctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("SASL re-authentication: %w", err)
		}
	}
	return c.exchange(req, timeout)
}

// exchange sends req and reads the answer, within timeout.
func (c *kconn) exchange(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	c.corr++
	b := append(c.buf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(c.corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.id)))
	b = append(b, c.id...)
	if req.IsFlexible() {
		b = append(b, 0) // request header v2: no tagged fields
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.buf = b
	c.nc.SetDeadline(time.Now().Add(timeout))
	if _, err := c.nc.Write(b); err != nil {
		return nil, err
	}
	var hdr [8]byte
	if n, err := io.ReadFull(c.r, hdr[:]); err != nil {
		if n > 0 {
			err = fmt.Errorf("%w: %w", errAnswerCut, err)
		}
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	if corr := int32(binary.BigEndian.Uint32(hdr[4:])); corr != c.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", corr, c.corr)
	}
	if size < 4 || size > 1<<30 {
		return nil, fmt.Errorf("response size %d", size)
	}
	body := c.answerBuf(int(size - 4))
	if _, err := io.ReadFull(c.r, body); err != nil {
		return nil, fmt.Errorf("%w: %w", errAnswerCut, err)
	}
	if req.IsFlexible() {
		// Response header v1: tagged fields after the correlation id (none sent).
		if len(body) == 0 || body[0] != 0 {
			return nil, fmt.Errorf("%s response: unexpected header tags", kmsg.NameForKey(req.Key()))
		}
		body = body[1:]
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// answerBuf returns a buffer of n bytes for an answer: a fresh one unless the
// connection reuses its answers' buffer.
func (c *kconn) answerBuf(n int) []byte {
	if !c.reuse {
		return make([]byte, n) // the caller may keep the answer's bytes
	}
	if cap(c.body) < n {
		c.body = make([]byte, n)
	}
	b := c.body[:n]
	if cap(c.body) > maxKeptBody {
		c.body = nil // a rare large answer: not kept
	}
	return b
}

func (c *kconn) close() { c.nc.Close() }
