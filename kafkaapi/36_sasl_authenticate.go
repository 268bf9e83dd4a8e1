package kafkaapi

// SaslAuthenticate, key 36, versions 0..2.
//
// Behaviour: carries the messages of the exchange SaslHandshake v1 began. A
// failed exchange (wrong password, unknown user, malformed message) answers
// SASL_AUTHENTICATION_FAILED after a delay that grows with repeated failures
// from the client's address (auth.FailureDelays), then closes the connection.
// Success makes the exchange's principal the connection's; v1+ answers
// session_lifetime_ms, connections.max.reauth.ms (0: the session does not
// expire), before which the client re-authenticates (KIP-368). Without a
// handshake the answer is ILLEGAL_SASL_STATE (and the connection is closed on
// a SASL listener). Served before authentication.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api[*kmsg.SASLAuthenticateRequest]{
		min: 0, max: 2,
		handle:     (*Server).handleSaslAuthenticate,
		beforeAuth: true,
	})
}

func (s *Server) handleSaslAuthenticate(c *conn, _ *RequestHeader, req *kmsg.SASLAuthenticateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	fail := func(code *kerr.Error, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code.Code, &msg
		return resp
	}
	if !c.listener.Protocol.SASL() {
		return fail(illegalSASLState, "this listener does not use SASL")
	}
	x := c.sasl.exchange
	if x == nil || c.sasl.raw {
		c.closeAfterResponse = true
		return fail(illegalSASLState, "SaslAuthenticate without SaslHandshake v1")
	}
	answer, done, err := c.saslStep(req.SASLAuthBytes)
	if err != nil {
		c.closeAfterResponse = true
		return fail(kerr.SaslAuthenticationFailed, "Authentication failed during authentication due to invalid credentials with SASL mechanism "+x.Mechanism())
	}
	resp.SASLAuthBytes = answer
	if done && s.cfg.ReauthMax > 0 {
		resp.SessionLifetimeMillis = s.cfg.ReauthMax.Milliseconds()
	}
	return resp
}
