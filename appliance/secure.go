package appliance

// A cluster that forms securely with one flag (docs/security.md). A node is
// secure when it is started with --secure or --join-token, or when its data
// directory holds <data>/secure (internal/pki): once formed securely, always
// secure, whatever the flags of a restart say. A secure node
//   - keeps the cluster CA (its key too: any node can admit a joiner and renew its
//     own certificate), its node certificate and key, and the inter-broker
//     password under <data>/secure;
//   - serves Kafka on SASL_SSL (unless listeners says otherwise), etcd (client and
//     peer) and HTTP with TLS, with its node certificate, and requires the
//     cluster CA's certificates from the other nodes and admin clients;
//   - has followers log in as pki.InterBrokerUser over SCRAM;
//   - checks ACLs (the ACL authorizer), with AdminUser a super user.
//
// The first node (bootstrap) makes the CA, its certificate and the passwords,
// then, once its etcd member runs, marks the cluster secure together with the
// first users (cluster.Store.FormSecure), and prints the path of the admin
// password and a first join token. A joining node gets its material with a
// join token over the join handshake (join.go).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"skiff/auth"
	"skiff/cluster"
	"skiff/internal/fileutil"
	"skiff/internal/pki"
	"skiff/kafkaapi"
)

// AdminUser is the first super user of a cluster formed with --secure.
const AdminUser = "admin"

// adminPasswordFile is where the bootstrapping node writes the admin's password.
const adminPasswordFile = "initial-admin-password"

// secureIterations are the SCRAM iterations of the users made at formation.
const secureIterations = 8192

// renewCheckInterval is how often a secure node checks whether its certificate
// needs renewal (it also checks at every start).
const renewCheckInterval = 24 * time.Hour

// SecureFormed is what the first node of a cluster formed with --secure tells
// its operator, once (Config.OnSecureFormed).
type SecureFormed struct {
	// AdminUser's password is in AdminPasswordFile (0600).
	AdminPasswordFile string
	// CAFingerprint is the cluster CA's SHA-256, as openssl prints it.
	CAFingerprint string
	// JoinToken admits one node until JoinTokenExpires (empty if it could not
	// be made: skiff cluster join-token makes another).
	JoinToken        string
	JoinTokenExpires time.Time
	// HTTPAddr is where joiners send the token (--join).
	HTTPAddr string
}

// Print tells the operator of a new secure cluster where the admin password is
// and how the next nodes join (skiff serve prints it on stdout, not in the log:
// the token is a secret for as long as it lasts).
func (f SecureFormed) Print(w io.Writer) {
	fmt.Fprintf(w, "\nThe cluster was formed securely (CA fingerprint SHA-256 %s).\n", f.CAFingerprint)
	fmt.Fprintf(w, "The password of the super user %q is in %s (readable by this node's user only).\n", AdminUser, f.AdminPasswordFile)
	if f.JoinToken == "" {
		fmt.Fprintf(w, "No join token could be made: make one with `skiff cluster join-token --data-dir DIR` on this node.\n\n")
		return
	}
	fmt.Fprintf(w, "Join token, valid once until %s:\n\n  %s\n\n", f.JoinTokenExpires.UTC().Format(time.RFC3339), f.JoinToken)
	fmt.Fprintf(w, "Start each further node with:\n\n  skiff serve --join %s --join-token TOKEN\n\n", f.HTTPAddr)
	fmt.Fprintf(w, "Each token admits one node; `skiff cluster join-token --data-dir DIR` on a node makes another.\n\n")
}

// validateSecure checks the settings of secure formation.
func (c Config) validateSecure() []error {
	var errs []error
	if c.JoinToken != "" {
		if _, err := pki.ParseToken(c.JoinToken); err != nil {
			errs = append(errs, fmt.Errorf("join-token: %w", err))
		}
		if len(c.Join) == 0 {
			errs = append(errs, errors.New("join-token needs join: the HTTP address of a running node of the cluster (HOST:PORT, its http setting)"))
		}
	}
	if c.Secure && len(c.Join) > 0 && c.JoinToken == "" {
		errs = append(errs, errors.New("secure with join: a node joins a cluster formed with --secure with --join-token (skiff cluster join-token makes one)"))
	}
	if (c.Secure || c.JoinToken != "") && (c.TLSCert != "" || c.TLSKey != "" || c.TLSClientCA != "") {
		errs = append(errs, errors.New("secure and join-token exclude tls-cert, tls-key and tls-client-ca: the node's certificates then come from the cluster's CA (<data>/secure); to bring your own, use tls-cert, tls-key, tls-client-ca with etcd-tls and http-tls instead (docs/security.md)"))
	}
	return errs
}

// secureSettings decides whether the node is secure and, if so, sets what that
// implies in n.cfg: the TLS files of <data>/secure, TLS on the etcd and HTTP
// ports, a SASL_SSL Kafka listener unless listeners are given, the
// inter-broker login, and the ACL authorizer with AdminUser a super user. It
// reads no network and writes nothing.
func (n *Node) secureSettings() error {
	c := &n.cfg
	paths := pki.PathsOf(c.DataDir)
	formed, err := paths.Exists()
	if err != nil {
		return fmt.Errorf("secure material: %w", err)
	}
	if !formed && !c.Secure && c.JoinToken == "" {
		return nil
	}
	if formed && !c.Secure && c.JoinToken == "" && (c.TLSCert != "" || c.TLSKey != "" || c.TLSClientCA != "") {
		return fmt.Errorf("data directory %s belongs to a cluster formed with --secure (%s): its certificates come from the cluster's CA, so tls-cert, tls-key and tls-client-ca cannot be set", c.DataDir, paths.Dir)
	}
	n.securePaths = &paths
	c.TLSCert, c.TLSKey, c.TLSClientCA = paths.NodeCert, paths.NodeKey, paths.CACert
	c.EtcdTLS, c.HTTPTLS = true, true
	if len(c.Listeners) == 0 {
		c.Listeners = []string{string(kafkaapi.SASLSSL) + "://" + c.Listen}
		if c.Advertise != "" {
			c.AdvertisedListeners = []string{string(kafkaapi.SASLSSL) + "://" + c.Advertise}
			c.Advertise = ""
		}
	}
	specs, inter, err := c.listeners()
	if err != nil {
		return err
	}
	if specs[inter].protocol.SASL() && c.InterBrokerUser == "" {
		c.InterBrokerUser, c.InterBrokerPasswordFile = pki.InterBrokerUser, paths.InterBrokerPassword
		c.InterBrokerSASLMechanism = cmp.Or(c.InterBrokerSASLMechanism, auth.ScramSHA512)
	}
	// Every node of a secure cluster checks ACLs (one that did not would let
	// anybody with a login do everything through it), with AdminUser a super user
	// besides those of super-users; followers fetch as the inter-broker principal,
	// which has CLUSTER_ACTION implicitly (interBrokerPrincipals).
	c.Authorizer = AuthorizerACL
	c.SuperUsers = withSuperUser(c.SuperUsers, auth.User(AdminUser))
	return errors.Join(c.validateSecurity()...)
}

// withSuperUser adds p to a super-users list (Kafka's form: semicolons) unless
// it is there.
func withSuperUser(list string, p auth.Principal) string {
	var out []string
	for _, s := range strings.Split(list, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if !slices.Contains(out, p.String()) {
		out = append([]string{p.String()}, out...)
	}
	return strings.Join(out, ";")
}

// secureMaterial makes, receives or loads the secure files (a no-op for a node
// that is not secure): the first node makes them, a joining node gets them
// with its join token, a restart loads them and renews the node certificate if
// it no longer names every host of the node or nears its end.
func (n *Node) secureMaterial(ctx context.Context) error {
	if n.securePaths == nil {
		return nil
	}
	c, paths := n.cfg, *n.securePaths
	formed, err := paths.Exists()
	if err != nil {
		return err
	}
	_, statErr := os.Stat(filepath.Join(c.DataDir, "etcd", "member"))
	hasMember := statErr == nil
	hosts := n.certHosts()
	switch {
	case !hasMember && len(c.Join) > 0:
		// A join (again, after an interrupted one: the token of a first try is used up,
		// so the material is asked for anew, with the certificate of that try if the
		// token names the same CA).
		m, endpoints, err := n.joinHandshake(ctx, hosts)
		if err != nil {
			return err
		}
		if err := paths.Save(m); err != nil {
			return err
		}
		n.secure, n.joinEndpoints = m, endpoints
		return nil
	case !formed:
		if hasMember {
			return fmt.Errorf("data directory %s holds an etcd member of a cluster not formed with --secure: a running cluster cannot be made secure this way (docs/security.md)", c.DataDir)
		}
		m, err := newSecureMaterial(hosts)
		if err != nil {
			return err
		}
		if err := paths.Save(m); err != nil {
			return err
		}
		n.secure = m
		n.logger.Info("cluster CA created", "dir", paths.Dir, "ca_fingerprint", m.CA.Fingerprint().Hex())
		return nil
	}
	m, err := paths.Load()
	if err != nil {
		return err
	}
	if c.JoinToken != "" {
		if tok, _ := pki.ParseToken(c.JoinToken); tok.CA != m.CA.Fingerprint() {
			return fmt.Errorf("data directory %s belongs to the cluster of CA %s, but --join-token names another CA; use an empty data directory to join that cluster", c.DataDir, m.CA.Fingerprint().Hex())
		}
	}
	n.secure = m
	return n.renewNodeCert(hosts)
}

// newSecureMaterial is a new cluster's: its CA, a certificate for hosts and the
// inter-broker password.
func newSecureMaterial(hosts []string) (*pki.Material, error) {
	now := time.Now()
	ca, err := pki.NewCA(now)
	if err != nil {
		return nil, err
	}
	key, err := pki.NewKey()
	if err != nil {
		return nil, err
	}
	chain, err := ca.Issue(key, hosts, now)
	if err != nil {
		return nil, err
	}
	return &pki.Material{CA: ca, NodeCert: chain, NodeKey: key, InterBrokerPassword: pki.NewPassword()}, nil
}

// renewNodeCert issues the node a new certificate for its key, naming hosts and
// the names of the old one, when the old one lacks a host or nears its end.
// TLS takes the new file at the next handshake (internal/tlsconf; etcd reads
// it at each).
func (n *Node) renewNodeCert(hosts []string) error {
	m := n.secure
	leaf, err := m.Leaf()
	if err != nil {
		return err
	}
	why := pki.NeedsRenewal(leaf, hosts, time.Now())
	if why == "" {
		return nil
	}
	names := slices.Clone(leaf.DNSNames)
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	for _, h := range hosts {
		if !slices.Contains(names, h) {
			names = append(names, h)
		}
	}
	chain, err := m.CA.Issue(m.NodeKey, names, time.Now())
	if err != nil {
		return err
	}
	if err := n.securePaths.SaveNodeCert(chain); err != nil {
		return err
	}
	m.NodeCert = chain
	n.logger.Info("node certificate renewed", "reason", why, "file", n.securePaths.NodeCert)
	return nil
}

// renewLoop checks the node certificate once a day until Close.
func (n *Node) renewLoop() {
	t := time.NewTicker(renewCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := n.renewNodeCert(n.certHosts()); err != nil {
				n.logger.Error("node certificate not renewed", "err", err)
			}
		case <-n.stop:
			return
		}
	}
}

// certHosts are the names a node certificate must hold: every host the node
// listens on or advertises (Kafka, etcd, HTTP), the host name, loopback, and
// the machine's addresses, so that whichever the other nodes and clients dial
// is named.
func (n *Node) certHosts() []string {
	c := n.cfg
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	add := func(hostport string) {
		if h, _, err := net.SplitHostPort(hostport); err == nil && !isWildcard(h) {
			hosts = append(hosts, h)
		}
	}
	for _, a := range []string{c.Listen, c.Advertise, c.EtcdClient, c.EtcdPeer, c.EtcdAdvertiseClient, c.EtcdAdvertisePeer, c.HTTP} {
		add(a)
	}
	for _, l := range append(slices.Clone(c.Listeners), c.AdvertisedListeners...) {
		if _, addr, err := parseListener("listeners", l); err == nil {
			add(addr)
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() {
				hosts = append(hosts, ipn.IP.String())
			}
		}
	}
	for i, h := range hosts {
		if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil {
			hosts[i] = ip.String()
		}
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

func isWildcard(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// formSecure runs once the etcd member serves, on a secure node: on the first
// start of the first node it marks the cluster secure with its first users
// (AdminUser with the password of <data>/initial-admin-password, written first;
// pki.InterBrokerUser) and tells the operator (Config.OnSecureFormed) with a
// first join token. Later starts only check that the cluster's CA is this
// node's.
func (n *Node) formSecure(ctx context.Context, httpAddr string) error {
	if n.secure == nil {
		return nil
	}
	fp := n.secure.CA.Fingerprint()
	have, err := n.store.SecureCA(ctx)
	if err != nil {
		return err
	}
	if have != "" {
		if have != fp.String() {
			return fmt.Errorf("the cluster was formed with another CA (fingerprint %s) than this node's %s (%s)", have, n.securePaths.CACert, fp)
		}
		return nil
	}
	// Only the first node can find the cluster unmarked: joining takes a token,
	// which the marked cluster makes.
	pwFile := filepath.Join(n.cfg.DataDir, adminPasswordFile)
	password, err := readToken(pwFile)
	if errors.Is(err, os.ErrNotExist) {
		password = pki.NewPassword()
		err = fileutil.WriteFileAtomic(pwFile, []byte(password+"\n"), 0o600)
	}
	if err != nil {
		return fmt.Errorf("admin password: %w", err)
	}
	var users []cluster.SecureUser
	for _, u := range []struct{ name, password string }{{AdminUser, password}, {pki.InterBrokerUser, n.secure.InterBrokerPassword}} {
		su := cluster.SecureUser{Name: u.name}
		for _, mech := range auth.ScramMechanisms {
			cred, err := auth.ScramCredentialFromPassword(mech, u.password, secureIterations)
			if err != nil {
				return err
			}
			su.Scram = append(su.Scram, cred)
		}
		users = append(users, su)
	}
	created, err := n.store.FormSecure(ctx, fp.String(), time.Now(), users)
	if err != nil || !created {
		return err
	}
	formed := SecureFormed{AdminPasswordFile: pwFile, CAFingerprint: fp.Hex(), HTTPAddr: httpAddr}
	tok, expires, err := n.newJoinToken(ctx, n.cfg.JoinTokenTTL)
	if err != nil {
		n.logger.Error("no first join token: make one with skiff cluster join-token", "err", err)
	} else {
		formed.JoinToken, formed.JoinTokenExpires = tok.String(), expires
	}
	n.logger.Info("cluster formed securely", "ca_fingerprint", formed.CAFingerprint, "admin_user", AdminUser, "admin_password_file", pwFile)
	if n.cfg.OnSecureFormed != nil {
		n.cfg.OnSecureFormed(formed)
	}
	return nil
}

// newJoinToken makes and stores a join token valid for ttl.
func (n *Node) newJoinToken(ctx context.Context, ttl time.Duration) (pki.Token, time.Time, error) {
	tok := pki.NewToken(n.secure.CA.Fingerprint())
	now := time.Now()
	expires := now.Add(ttl)
	err := n.store.CreateJoinToken(ctx, cluster.JoinToken{ID: tok.ID, SecretHash: pki.SecretHash(tok.Secret),
		Created: now, Expires: expires, CreatedBy: n.id})
	return tok, expires, err
}
