package kafkaapi

// SaslHandshake, key 17, versions 0..1.
//
// Behaviour: on a SASL listener, chooses the mechanism of the authentication
// that follows (SaslAuthenticate for v1; bare token frames for v0, as Kafka's
// first SASL clients and kafka-python 2.0 send them) and lists the mechanisms
// offered (sasl-mechanisms). A mechanism not offered answers
// UNSUPPORTED_SASL_MECHANISM and closes the connection. After authentication a
// v1 handshake with the same mechanism starts a re-authentication (KIP-368).
// A handshake in the middle of an exchange, a v0 re-authentication or a change
// of mechanism answers ILLEGAL_SASL_STATE and closes the connection; on a
// listener without SASL the answer is ILLEGAL_SASL_STATE, as in Kafka. Served
// before authentication.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api[*kmsg.SASLHandshakeRequest]{
		min: 0, max: 1,
		handle:     (*Server).handleSaslHandshake,
		beforeAuth: true,
	})
}

func (s *Server) handleSaslHandshake(c *conn, _ *RequestHeader, req *kmsg.SASLHandshakeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = s.cfg.SASLMechanisms
	st := &c.sasl
	switch {
	case !c.listener.Protocol.SASL():
		resp.ErrorCode = illegalSASLState.Code
		return resp
	case !s.offersMechanism(req.Mechanism):
		c.logger.Info("closing connection: SASL mechanism not offered (sasl-mechanisms)", "mechanism", req.Mechanism)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.closeAfterResponse = true
		return resp
	case st.exchange != nil, st.authenticated && (req.Version == 0 || req.Mechanism != st.mechanism):
		c.logger.Info("closing connection: SaslHandshake out of order", "mechanism", req.Mechanism, "version", req.Version)
		resp.ErrorCode = illegalSASLState.Code
		c.closeAfterResponse = true
		return resp
	}
	x, err := s.sasl.Start(req.Mechanism)
	if err != nil { // an offered mechanism auth does not serve: refused by the settings
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.closeAfterResponse = true
		return resp
	}
	st.exchange, st.raw = x, req.Version == 0
	return resp
}
