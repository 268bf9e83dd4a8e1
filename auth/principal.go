// Package auth is who a Kafka client is: its principal, how a TLS client
// certificate maps to one (ssl.principal.mapping.rules), and the server side of
// SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) over SCRAM credentials, with the
// delays that slow down repeated failures. It knows nothing of the Kafka wire
// protocol (kafkaapi carries the tokens) or of where credentials are kept
// (cluster keeps them in etcd); docs/security.md describes the model.
package auth

import (
	"fmt"
	"strings"
)

// Principal is who a connection acts as, in Kafka's form TYPE:NAME. Every
// connection has one: Anonymous on a PLAINTEXT listener and on SSL without a
// client certificate, the mapped certificate subject with mutual TLS, and
// User:NAME after SASL. ACLs name principals in this form.
type Principal struct {
	Type string // "User"
	Name string
}

// UserType is the type of every principal Skiff makes, as in Kafka.
const UserType = "User"

// Anonymous is the principal of a connection that did not authenticate.
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// User is the principal User:name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

// String is the principal as Kafka writes it: User:alice.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// ParsePrincipal reads TYPE:NAME, as kafka-acls.sh and --super-users write it.
// The name may contain colons; the type may not be empty.
func ParsePrincipal(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" || name == "" {
		return Principal{}, fmt.Errorf("principal %q: want TYPE:NAME, such as User:alice", s)
	}
	return Principal{Type: typ, Name: name}, nil
}
