package kafkaapi

// Authorization: what each API checks before it reads or writes anything, as
// Kafka's KafkaApis checks it (each key's file says what), decided by the
// acl.Authorizer against the ACLs of the node's metadata cache. Without an
// authorizer (--authorizer none, Config.Authorizer nil) every check passes.
// docs/security.md lists the checks.

import (
	"net"
	"net/netip"

	"skiff/acl"
)

// authorizer is the server's authorizer, nil without one.
func (s *Server) authorizer() *acl.Authorizer { return s.cfg.Authorizer }

// decide asks the authorizer; nil without one.
func (c *conn) decide(op acl.Operation, t acl.ResourceType, name string) (acl.Decision, bool) {
	a := c.srv.authorizer()
	if a == nil {
		return acl.Decision{Allowed: true}, false
	}
	return a.Authorize(c.srv.cache.Snapshot().ACLs(), c.aclClient(), op, t, name), true
}

// allowed reports whether the client may do op on the resource (t, name). A
// refusal is logged at debug and counted (skiff_authorization_failures_total).
func (c *conn) allowed(op acl.Operation, t acl.ResourceType, name string) bool {
	d, checked := c.decide(op, t, name)
	if checked && !d.Allowed {
		c.refused(op, t, name, d.String())
	}
	return d.Allowed
}

// may is allowed for what the client did not name itself (every topic of a
// Metadata listing, every group of ListGroups, the first of two alternative
// checks): a refusal is neither logged nor counted.
func (c *conn) may(op acl.Operation, t acl.ResourceType, name string) bool {
	d, _ := c.decide(op, t, name)
	return d.Allowed
}

// allowedCluster is allowed on the cluster resource.
func (c *conn) allowedCluster(op acl.Operation) bool {
	return c.allowed(op, acl.ResourceCluster, acl.ClusterName)
}

// mayCluster is may on the cluster resource.
func (c *conn) mayCluster(op acl.Operation) bool {
	return c.may(op, acl.ResourceCluster, acl.ClusterName)
}

// refused logs and counts a refusal.
func (c *conn) refused(op acl.Operation, t acl.ResourceType, name, why string) {
	c.srv.metrics.authorizationFailures.WithLabelValues(c.api, t.String(), op.String()).Inc()
	c.logger.Debug("authorization failed", "principal", c.principal.String(), "api", c.api,
		"operation", op.String(), "resource_type", t.String(), "resource_name", name, "rule", why)
}

// aclClient is the client as the authorizer sees it.
func (c *conn) aclClient() acl.Client {
	return acl.Client{Principal: c.principal, Addr: c.addr}
}

// addrOf is the IP address of a remote address (invalid for other kinds).
func addrOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

// authorizedOperations is the bit field of the operations the client may do on
// the resource, as Metadata v8 and DescribeGroups v3+ report them when asked;
// without an authorizer, Kafka's "not known" value.
func (c *conn) authorizedOperations(t acl.ResourceType, name string) int32 {
	a := c.srv.authorizer()
	if a == nil {
		return authorizedOperationsOmitted
	}
	return a.AuthorizedOperations(c.srv.cache.Snapshot().ACLs(), c.aclClient(), t, name)
}

// allowedTopics returns a function reporting whether the client may do op on a
// topic, deciding each name once per request (a request may name a topic in
// several entries). Refusals are logged and counted.
func (c *conn) allowedTopics(op acl.Operation) func(topic string) bool {
	if c.srv.authorizer() == nil {
		return func(string) bool { return true }
	}
	seen := map[string]bool{}
	return func(topic string) bool {
		ok, known := seen[topic]
		if !known {
			ok = c.allowed(op, acl.ResourceTopic, topic)
			seen[topic] = ok
		}
		return ok
	}
}

// topicDescribeFilter reports whether the client's principal may DESCRIBE a topic
// under the ACLs current at each call (a KIP-848 member's regex is matched with it
// long after this request); nil without an authorizer. It holds the principal,
// not the connection.
func (c *conn) topicDescribeFilter() func(topic string) bool {
	a := c.srv.authorizer()
	if a == nil {
		return nil
	}
	cache, cl := c.srv.cache, c.aclClient()
	return func(topic string) bool {
		return a.Authorize(cache.Snapshot().ACLs(), cl, acl.OpDescribe, acl.ResourceTopic, topic).Allowed
	}
}
