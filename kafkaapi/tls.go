package kafkaapi

// TLS on SSL and SASL_SSL listeners: the handshake, the principal of a client
// certificate, and telling a client that speaks the wrong protocol.

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
)

// handshakeTLS runs the TLS handshake of a new connection on a TLS listener,
// within socket-read-timeout (or connections-max-idle if shorter), and names the
// principal of a verified client certificate. It logs a failure and reports
// false; the connection is then closed.
func (c *conn) handshakeTLS() bool {
	cfg := &c.srv.cfg
	tc := tls.Server(c.nc, c.listener.TLS)
	ctx, cancel := context.WithTimeout(c.ctx, min(cfg.ReadTimeout, cfg.IdleTimeout))
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		var rh tls.RecordHeaderError
		switch {
		case c.srv.closing():
		case errors.Is(err, io.EOF):
			// Closed before a word: a TCP health check (the watchdog's own
			// CheckAlive, a load balancer), not worth a warning.
			c.logger.Debug("connection closed before the TLS handshake")
		case errors.As(err, &rh):
			c.refuse("plaintext_on_tls", "closing connection: the client does not speak TLS on a TLS listener (is its security.protocol PLAINTEXT or SASL_PLAINTEXT?)")
		default:
			c.refuse("tls_handshake", "closing connection: TLS handshake failed", "err", err)
		}
		return false
	}
	c.mu.Lock()
	c.nc = tc
	c.mu.Unlock()
	if st := tc.ConnectionState(); len(st.VerifiedChains) > 0 && c.listener.Protocol == SSL {
		p, err := c.srv.cfg.SSLPrincipal.Principal(st.PeerCertificates[0])
		if err != nil {
			c.refuse("tls_principal", "closing connection: the client certificate names no principal (tls-principal-mapping-rules)", "err", err)
			return false
		}
		c.principal = p
	}
	c.logger.Debug("TLS connection", "principal", c.principal.String(), "version", tls.VersionName(tc.ConnectionState().Version))
	return true
}

// looksLikeTLS reports whether the first bytes of a request frame are a TLS
// handshake record (content type 22, version 3.x): a TLS client on a listener
// without TLS. As a Kafka size prefix they would ask for over 350 MB.
func looksLikeTLS(head []byte) bool {
	return len(head) >= 3 && head[0] == 0x16 && head[1] == 0x03 && head[2] <= 0x04
}
