package kafkaapi

// SASL on SASL_PLAINTEXT and SASL_SSL listeners: the state of a connection's
// authentication, the requests served before it, the raw token exchange of
// SaslHandshake v0 clients, failures (delayed, answered, closed) and KIP-368
// session expiry. The mechanisms themselves are package auth's.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/auth"
)

// saslMaxReceive bounds a request frame on a SASL connection that has not
// authenticated yet (Kafka's sasl.server.max.receive.size, 512 KiB there; the
// PLAIN and SCRAM messages Skiff takes are far smaller), so an unauthenticated
// client cannot make the node read or hold a large frame.
const saslMaxReceive = 64 << 10

// saslState is a connection's SASL authentication; only its loop uses it.
type saslState struct {
	// exchange is the authentication in progress, begun by SaslHandshake (nil:
	// none). While it is set, only the keys served before authentication are.
	exchange *auth.Exchange
	// raw: the exchange began with SaslHandshake v0, whose tokens come as bare
	// size-prefixed frames instead of SaslAuthenticate requests.
	raw bool
	// authenticated: the client has authenticated once (c.principal is its
	// principal); mechanism is the one it used.
	authenticated bool
	mechanism     string
	// expires is when the session ends (connections.max.reauth.ms after the last
	// authentication; zero: never). Afterwards only re-authentication is served.
	expires time.Time
}

// admitSASL decides whether a request of key a may be served on the connection:
// on a SASL listener, only the keys served before authentication are until the
// client has authenticated, while it re-authenticates and once its session has
// expired (the connection is then closed, as Kafka does).
func (c *conn) admitSASL(a *apiKey) error {
	if !c.listener.Protocol.SASL() || a.beforeAuth {
		return nil
	}
	st := &c.sasl
	switch {
	case !st.authenticated || st.exchange != nil:
		c.refuse("sasl_unauthenticated", "closing connection: request before SASL authentication", "api", a.name)
		return errRefused
	case !st.expires.IsZero() && time.Now().After(st.expires):
		c.logger.Info("closing connection: the SASL session expired without re-authentication (connections-max-reauth)",
			"principal", c.principal.String(), "api", a.name)
		return errRefused
	}
	return nil
}

// frameLimit is the largest request frame the connection may send now.
func (c *conn) frameLimit() int32 {
	if c.listener.Protocol.SASL() && !c.sasl.authenticated {
		return min(c.srv.cfg.MaxRequestBytes, saslMaxReceive)
	}
	return c.srv.cfg.MaxRequestBytes
}

// saslStep runs the exchange's next step. On success it returns the answer
// for the client and, once the exchange is done, makes its principal the
// connection's. A failure has been counted, logged and delayed (see
// saslFailed); the connection must then be closed.
func (c *conn) saslStep(token []byte) (answer []byte, done bool, err error) {
	x := c.sasl.exchange
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	answer, done, err = x.Step(ctx, token)
	cancel()
	if err == nil && done {
		err = c.saslSucceeded(x)
	}
	if err != nil {
		c.saslFailed(x, err)
		return nil, false, err
	}
	return answer, done, nil
}

// saslSucceeded makes an exchange's principal the connection's and starts its
// session. A re-authentication must keep the principal.
func (c *conn) saslSucceeded(x *auth.Exchange) error {
	p := x.Principal()
	if c.sasl.authenticated && p != c.principal {
		return fmt.Errorf("%w: re-authentication as %s, not %s", auth.ErrAuthenticationFailed, p, c.principal)
	}
	st := &c.sasl
	st.exchange, st.raw, st.authenticated, st.mechanism = nil, false, true, x.Mechanism()
	st.expires = time.Time{}
	if d := c.srv.cfg.ReauthMax; d > 0 {
		st.expires = time.Now().Add(d)
	}
	c.principal = p
	c.srv.metrics.authentications.WithLabelValues(x.Mechanism(), "success").Inc()
	c.logger.Debug("SASL authentication", "principal", p.String(), "mechanism", x.Mechanism())
	return nil
}

// saslFailed counts and logs a failed exchange and waits before the failure is
// answered: longer with each failure from the client's address (failed logins
// only: a good login is never delayed), at most auth.MaxFailureDelay, less if
// the server shuts down.
func (c *conn) saslFailed(x *auth.Exchange, err error) {
	c.sasl.exchange = nil
	c.srv.metrics.authentications.WithLabelValues(x.Mechanism(), "failure").Inc()
	if !errors.Is(err, auth.ErrAuthenticationFailed) { // the credentials could not be read
		c.logger.Warn("closing connection: SASL credentials could not be read", "mechanism", x.Mechanism(), "err", err)
		return
	}
	c.refuse("sasl_authentication", "closing connection: SASL authentication failed",
		"mechanism", x.Mechanism(), "user", x.User(), "err", err)
	t := time.NewTimer(c.srv.delays.Failed(c.host))
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.ctx.Done():
	}
}

// rawSASL runs the exchange begun by a SaslHandshake v0: each client token is a
// bare frame (INT32 size, bytes) and so is each answer, until the exchange is
// done (PLAIN's answer is an empty frame). There is no way to answer a
// failure: the connection is closed (errRefused), as Kafka does.
func (c *conn) rawSASL() error {
	for c.sasl.exchange != nil {
		token, err := c.readToken()
		if err != nil {
			c.sasl.exchange = nil
			return err
		}
		answer, _, err := c.saslStep(token)
		c.releaseFrame()
		if err != nil {
			return errRefused
		}
		b := binary.BigEndian.AppendUint32(getBuf(responseBufSize)[:0], uint32(len(answer)))
		b = append(b, answer...)
		err = c.write(b)
		putBuf(b)
		if err != nil {
			return err
		}
	}
	return nil
}

// readToken reads one bare SASL token frame, within the request read timeouts,
// taking its size from the memory budget like a request frame (released by
// releaseFrame).
func (c *conn) readToken() ([]byte, error) {
	cfg := &c.srv.cfg
	if !c.armRead(min(cfg.ReadTimeout, cfg.IdleTimeout)) {
		return nil, errRefused
	}
	var head [4]byte
	if _, err := io.ReadFull(c.nc, head[:]); err != nil {
		c.logReadErr("read SASL token", err, true)
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(head[:]))
	if size <= 0 || size > saslMaxReceive {
		c.refuse("request_size", "closing connection: SASL token size out of range", "size", size, "max", saslMaxReceive)
		return nil, errRefused
	}
	if err := c.srv.budget.acquire(c.ctx, int64(size)); err != nil {
		return nil, err
	}
	c.held = int64(size)
	c.frame = getBuf(int(size))
	if _, err := io.ReadFull(c.nc, c.frame); err != nil {
		c.logReadErr("read SASL token", err, true)
		return nil, err
	}
	return c.frame, nil
}

// offersMechanism reports whether SASL listeners offer mechanism.
func (s *Server) offersMechanism(mechanism string) bool {
	return slices.Contains(s.cfg.SASLMechanisms, mechanism)
}

// illegalSASLState is the answer to a SASL request where there is no SASL to
// speak of (a listener without SASL) or out of order.
var illegalSASLState = kerr.IllegalSaslState
