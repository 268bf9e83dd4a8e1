package appliance

// The security of the Kafka listeners: TLS material (internal/tlsconf) and the
// principal of client certificates. docs/security.md describes the model.

import (
	"crypto/tls"
	"errors"
	"fmt"

	"skiff/auth"
	"skiff/internal/tlsconf"
	"skiff/kafkaapi"
)

// validateSecurity checks the listener and TLS settings together.
func (c Config) validateSecurity() []error {
	var errs []error
	specs, _, err := c.listeners()
	if err != nil {
		return []error{err}
	}
	needTLS := false
	for _, l := range specs {
		needTLS = needTLS || l.protocol.TLS()
	}
	if needTLS && (c.TLSCert == "" || c.TLSKey == "") {
		errs = append(errs, errors.New("tls-cert and tls-key: a listener with TLS (SSL, SASL_SSL) needs this node's certificate and key"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("tls-cert and tls-key go together: the certificate and its private key"))
	}
	if _, err := auth.ParseSSLPrincipalMappingRules(c.TLSPrincipalMappingRules); err != nil {
		errs = append(errs, fmt.Errorf("tls-principal-mapping-rules: %w", err))
	}
	return errs
}

// loadTLS reads the TLS files when the node has any (nil without).
func (n *Node) loadTLS() error {
	c := n.cfg
	if c.TLSCert == "" && c.TLSClientCA == "" {
		return nil
	}
	l, err := tlsconf.New(tlsconf.Files{Cert: c.TLSCert, Key: c.TLSKey, CA: c.TLSClientCA}, 0, n.logger)
	if err != nil {
		return err
	}
	n.tls = l
	return nil
}

// kafkaListener is the kafkaapi listener of spec: SSL listeners require a client
// certificate signed by tls-client-ca when there is one (mutual TLS, the
// certificate names the principal); SASL_SSL listeners verify one if the client
// gives it (SASL names the principal).
func (n *Node) kafkaListener(spec listenerSpec) kafkaapi.Listener {
	l := kafkaapi.Listener{Name: spec.name, Protocol: spec.protocol}
	switch spec.protocol {
	case kafkaapi.SSL:
		l.TLS = n.tls.ServerConfig(tls.RequireAndVerifyClientCert)
	case kafkaapi.SASLSSL:
		l.TLS = n.tls.ServerConfig(tls.VerifyClientCertIfGiven)
	}
	return l
}

// followerTLS is the TLS client configuration of followers when the
// inter-broker listener has TLS (nil otherwise).
func (n *Node) followerTLS() func(host string) *tls.Config {
	if !n.listeners[n.interBroker].protocol.TLS() {
		return nil
	}
	return n.tls.ClientConfig
}
