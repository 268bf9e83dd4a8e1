package kafkaapi

// Listeners: what a port asks of the clients that connect to it (Kafka's security
// protocols), and the name under which Metadata tells clients where the brokers
// are.

import (
	"crypto/tls"
	"fmt"
)

// SecurityProtocol is what a listener asks of its clients, as Kafka names it.
type SecurityProtocol string

// Kafka's security protocols.
const (
	Plaintext     SecurityProtocol = "PLAINTEXT"      // neither TLS nor SASL
	SSL           SecurityProtocol = "SSL"            // TLS; mutual TLS names the principal
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT" // SASL without TLS
	SASLSSL       SecurityProtocol = "SASL_SSL"       // SASL over TLS
)

// ParseSecurityProtocol reads one of Kafka's four protocol names.
func ParseSecurityProtocol(s string) (SecurityProtocol, error) {
	switch p := SecurityProtocol(s); p {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return p, nil
	}
	return "", fmt.Errorf("security protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s)
}

// TLS reports whether the protocol runs over TLS.
func (p SecurityProtocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether clients must authenticate with SASL.
func (p SecurityProtocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// Listener is one port of the broker.
type Listener struct {
	// Name is the listener's name (PLAINTEXT, SASL_SSL, or a name mapped to a
	// protocol by listener.security.protocol.map). Metadata and FindCoordinator
	// answer a client with the brokers' advertised addresses of this name.
	Name string
	// Protocol is what the listener asks of its clients.
	Protocol SecurityProtocol
	// TLS is the server's TLS configuration (required for SSL and SASL_SSL). Its
	// client authentication decides whether clients present certificates; a
	// verified client certificate names the principal on SSL (Config.SSLPrincipal).
	TLS *tls.Config
}

// plaintextListener is what Serve serves: Kafka's default listener.
var plaintextListener = Listener{Name: string(Plaintext), Protocol: Plaintext}

func (l Listener) check() error {
	if _, err := ParseSecurityProtocol(string(l.Protocol)); err != nil {
		return fmt.Errorf("kafkaapi: listener %s: %w", l.Name, err)
	}
	if l.Protocol.TLS() && l.TLS == nil {
		return fmt.Errorf("kafkaapi: listener %s: %s needs a TLS configuration", l.Name, l.Protocol)
	}
	if l.Name == "" {
		return fmt.Errorf("kafkaapi: a %s listener needs a name", l.Protocol)
	}
	return nil
}
