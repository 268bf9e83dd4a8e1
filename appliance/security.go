package appliance

// The security of the Kafka listeners: TLS material (internal/tlsconf), the
// principal of client certificates, SASL settings, and how followers
// authenticate to their leaders. docs/security.md describes the model.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"skiff/acl"
	"skiff/auth"
	"skiff/internal/tlsconf"
	"skiff/kafkaapi"
)

// The values of the authorizer setting.
const (
	AuthorizerNone = "none" // every client may do everything (the default)
	AuthorizerACL  = "acl"  // Kafka's ACLs decide (acl.Authorizer)
)

// validateSecurity checks the listener and TLS settings together.
func (c Config) validateSecurity() []error {
	var errs []error
	specs, interBroker, err := c.listeners()
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
	if (c.EtcdTLS || c.HTTPTLS) && (c.TLSCert == "" || c.TLSKey == "") {
		errs = append(errs, errors.New("tls-cert and tls-key: etcd-tls and http-tls serve this node's certificate and key"))
	}
	if c.EtcdTLS && c.TLSClientCA == "" {
		errs = append(errs, errors.New("tls-client-ca: etcd-tls needs the CA that signs the nodes' certificates, to check the other nodes'"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("tls-cert and tls-key go together: the certificate and its private key"))
	}
	if _, err := auth.ParseSSLPrincipalMappingRules(c.TLSPrincipalMappingRules); err != nil {
		errs = append(errs, fmt.Errorf("tls-principal-mapping-rules: %w", err))
	}
	for _, m := range c.SASLMechanisms {
		if !slices.Contains(auth.Mechanisms, m) {
			errs = append(errs, fmt.Errorf("sasl-mechanisms: %q is not one of %s", m, strings.Join(auth.Mechanisms, ", ")))
		}
	}
	if c.InterBrokerSASLMechanism != "" && !slices.Contains(auth.Mechanisms, c.InterBrokerSASLMechanism) {
		errs = append(errs, fmt.Errorf("inter-broker-sasl-mechanism: %q is not one of %s", c.InterBrokerSASLMechanism, strings.Join(auth.Mechanisms, ", ")))
	}
	switch c.Authorizer {
	case "", AuthorizerNone, AuthorizerACL:
	default:
		errs = append(errs, fmt.Errorf("authorizer: %q is not %s or %s", c.Authorizer, AuthorizerACL, AuthorizerNone))
	}
	if _, err := acl.ParsePrincipals(c.SuperUsers); err != nil {
		errs = append(errs, fmt.Errorf("super-users: %w", err))
	}
	if inter := specs[interBroker]; inter.protocol.SASL() && (c.InterBrokerUser == "" || c.InterBrokerPasswordFile == "") {
		errs = append(errs, fmt.Errorf("inter-broker-user and inter-broker-password-file: the inter-broker listener %s uses SASL, so followers need a user to authenticate as (docs/security.md)", inter.name))
	}
	return errs
}

// interBrokerMechanism is the SASL mechanism followers use: the setting, or
// the first offered.
func (c Config) interBrokerMechanism() string {
	if c.InterBrokerSASLMechanism != "" {
		return c.InterBrokerSASLMechanism
	}
	if len(c.SASLMechanisms) > 0 {
		return c.SASLMechanisms[0]
	}
	return kafkaapi.DefaultSASLMechanisms[0]
}

// followerSASL is the SASL mechanism of followers when the inter-broker
// listener uses SASL (nil otherwise), with the password read from
// inter-broker-password-file.
func (n *Node) followerSASL() (sasl.Mechanism, error) {
	if !n.listeners[n.interBroker].protocol.SASL() {
		return nil, nil
	}
	b, err := os.ReadFile(n.cfg.InterBrokerPasswordFile)
	if err != nil {
		return nil, fmt.Errorf("inter-broker-password-file: %w", err)
	}
	password, _, _ := strings.Cut(string(b), "\n")
	password = strings.TrimSuffix(password, "\r")
	if password == "" {
		return nil, fmt.Errorf("inter-broker-password-file %s: the first line is empty", n.cfg.InterBrokerPasswordFile)
	}
	user := n.cfg.InterBrokerUser
	switch mech := n.cfg.interBrokerMechanism(); mech {
	case auth.ScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case auth.ScramSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	default:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	}
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

// etcdTLS is the TLS of the embedded etcd member and its clients (nil without
// etcd-tls).
func (n *Node) etcdTLS() *tlsconf.Loader {
	if !n.cfg.EtcdTLS {
		return nil
	}
	return n.tls
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

// authorizer is the ACL authorizer with --authorizer acl, nil otherwise: the
// super users, allow-everyone-if-no-acl-found, and the inter-broker principals.
func (n *Node) authorizer(ssl *auth.SSLPrincipalMapper) *acl.Authorizer {
	if n.cfg.Authorizer != AuthorizerACL {
		return nil
	}
	supers, _ := acl.ParsePrincipals(n.cfg.SuperUsers) // validated
	return acl.New(acl.Config{SuperUsers: supers, AllowIfNoACL: n.cfg.AllowEveryoneIfNoACL, InterBroker: n.interBrokerPrincipals(ssl)})
}

// interBrokerPrincipals are who this node's followers are to their leaders, so
// that they may fetch (CLUSTER_ACTION) without an ACL: on a SASL inter-broker
// listener the inter-broker user, whose password proves it; on SSL the
// principal of this node's own certificate, which the CA vouches for (nodes
// whose certificates map to one principal need nothing more; others are
// granted CLUSTER_ACTION by an ACL or super-users). On PLAINTEXT there is no
// proof: followers are User:ANONYMOUS like anybody, and get nothing implicitly.
func (n *Node) interBrokerPrincipals(ssl *auth.SSLPrincipalMapper) []auth.Principal {
	switch l := n.listeners[n.interBroker]; {
	case l.protocol.SASL():
		return []auth.Principal{auth.User(n.cfg.InterBrokerUser)}
	case l.protocol.TLS() && n.tls != nil:
		cert := n.tls.Certificate()
		if cert == nil || cert.Leaf == nil {
			return nil
		}
		if ssl == nil {
			ssl, _ = auth.ParseSSLPrincipalMappingRules(auth.DefaultMappingRules)
		}
		p, err := ssl.Principal(cert.Leaf)
		if err != nil {
			n.logger.Warn("this node's certificate names no principal (tls-principal-mapping-rules): grant its followers ClusterAction with an ACL", "err", err)
			return nil
		}
		return []auth.Principal{p}
	}
	return nil
}
