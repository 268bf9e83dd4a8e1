// Package quota is Kafka's model of client quotas, pure: the entities a quota
// is set for (user, client-id, their pair and their defaults), the quota keys
// and their rules, the resolution of the quota that applies to a client
// (Kafka's DefaultQuotaCallback), and the rates measured against it
// (quota.window.num samples of quota.window.size.seconds) with the throttle
// time of a client over it (KIP-219). It knows no wire protocol nor storage:
// cluster keeps the quotas in etcd, kafkaapi enforces them (docs/quotas.md).
package quota

import (
	"fmt"
	"math"
	"net"
	"sort"
	"strings"
)

// The quota keys, as Kafka names them.
const (
	ProducerByteRate       = "producer_byte_rate"       // bytes/s appended by Produce
	ConsumerByteRate       = "consumer_byte_rate"       // bytes/s returned by Fetch
	RequestPercentage      = "request_percentage"       // % of one thread's time handling requests
	ControllerMutationRate = "controller_mutation_rate" // partitions created or deleted per second (KIP-599)
	ConnectionCreationRate = "connection_creation_rate" // connections accepted per second from an ip (KIP-612)
)

// integral keys are Kafka's LONG quota configs: fractions are refused.
var keys = map[string]bool{ProducerByteRate: true, ConsumerByteRate: true, RequestPercentage: false, ControllerMutationRate: false, ConnectionCreationRate: true}

// Keys lists the quota keys, sorted.
func Keys() []string {
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Validate checks a quota value of an entity as Kafka's controller does: ip
// entities take only connection_creation_rate, the others every other key; the
// error's text is Kafka's message (INVALID_REQUEST).
func Validate(e Entity, key string, v float64) error {
	integral, ok := keys[key]
	switch {
	case !ok || (key == ConnectionCreationRate) != e.IP.set:
		return fmt.Errorf("Invalid configuration key %s", key)
	case !(v > 0) || math.IsInf(v, 0):
		return fmt.Errorf("Quota %s must be greater than 0", key)
	case key == ConnectionCreationRate && v > math.MaxInt32:
		return fmt.Errorf("Proposed value for %s is too large for an INT.", key)
	case integral && v > math.MaxInt64:
		return fmt.Errorf("Proposed value for %s is too large for a LONG.", key)
	case integral && math.Abs(math.Mod(v, 1)) > 1e-6:
		return fmt.Errorf("%s cannot be a fractional value.", key)
	}
	return nil
}

// Entity types, as Kafka names them.
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

// Name is one part of an entity: absent (the zero value), the default of its
// type, or a name.
type Name struct {
	set, dflt bool
	name      string
}

// Named is the part naming s.
func Named(s string) Name { return Name{set: true, name: s} }

// Default is the part standing for every name without its own quota.
var Default = Name{set: true, dflt: true}

// Set reports whether the part is present.
func (n Name) Set() bool { return n.set }

// IsDefault reports whether the part is the default.
func (n Name) IsDefault() bool { return n.dflt }

// Value is the name ("" for the default or an absent part).
func (n Name) Value() string { return n.name }

// Ptr is the part as the protocol writes it: nil for the default.
func (n Name) Ptr() *string {
	if n.dflt || !n.set {
		return nil
	}
	s := n.name
	return &s
}

// FromPtr is the part the protocol writes as p (nil: the default).
func FromPtr(p *string) Name {
	if p == nil {
		return Default
	}
	return Named(*p)
}

func (n Name) String() string {
	switch {
	case !n.set:
		return ""
	case n.dflt:
		return "<default>"
	}
	return n.name
}

// Entity is what a quota is set for: a user, a client id, or both; either
// part may be the default. Or an ip address (or the default ip), alone.
type Entity struct {
	User, ClientID Name
	IP             Name
}

// Valid reports why e cannot hold a quota ("" if it can), in Kafka's words.
func (e Entity) Valid() string {
	switch {
	case !e.User.set && !e.ClientID.set && !e.IP.set:
		return "Invalid empty client quota entity"
	case e.IP.set && (e.User.set || e.ClientID.set):
		return "Invalid quota entity combination, IP entity should not be combined with User or ClientId entities."
	case e.IP.set && !e.IP.dflt && net.ParseIP(e.IP.name) == nil:
		return e.IP.name + " is not a valid IP or resolvable host."
	case e.User.set && !e.User.dflt && e.User.name == "":
		return "Empty user not supported"
	case e.ClientID.set && !e.ClientID.dflt && e.ClientID.name == "":
		return "Empty client-id not supported"
	}
	return ""
}

func (e Entity) String() string {
	var parts []string
	if e.User.set {
		parts = append(parts, "user="+e.User.String())
	}
	if e.ClientID.set {
		parts = append(parts, "client-id="+e.ClientID.String())
	}
	if e.IP.set {
		parts = append(parts, "ip="+e.IP.String())
	}
	return strings.Join(parts, ",")
}

// Values are the quotas of one entity, by key.
type Values map[string]float64

// Set is every entity's quotas; the zero value (nil) has none.
type Set map[Entity]Values

// Resolved is the quota that applies to a client for one key, and the entity
// whose usage it bounds: the clients that resolve to the same Tags share one
// rate (Kafka's quota metric tags).
type Resolved struct {
	Limit float64
	Tags  Tags
}

// Tags name a shared rate: the user and client id it counts ("" for a part it
// does not distinguish).
type Tags struct {
	User, ClientID string
}

// Resolve finds the quota of key for the client of user and clientID, in
// Kafka's order: user and client-id, user and default client-id, user,
// default user and client-id, default user and default client-id, default
// user, client-id, default client-id. ok is false when none is set.
func (s Set) Resolve(key, user, clientID string) (r Resolved, ok bool) {
	if len(s) == 0 {
		return r, false
	}
	u, c, none := Named(user), Named(clientID), Name{}
	both := Tags{User: user, ClientID: clientID}
	order := []struct {
		e    Entity
		tags Tags
	}{
		{Entity{User: u, ClientID: c}, both},
		{Entity{User: u, ClientID: Default}, both},
		{Entity{User: u, ClientID: none}, Tags{User: user}},
		{Entity{User: Default, ClientID: c}, both},
		{Entity{User: Default, ClientID: Default}, both},
		{Entity{User: Default, ClientID: none}, Tags{User: user}},
		{Entity{User: none, ClientID: c}, Tags{ClientID: clientID}},
		{Entity{User: none, ClientID: Default}, Tags{ClientID: clientID}},
	}
	for _, o := range order {
		if v, found := s[o.e][key]; found {
			return Resolved{Limit: v, Tags: o.tags}, true
		}
	}
	return r, false
}

// ResolveIP finds the connection_creation_rate of ip: its own, or else the
// default ip's. ok is false when neither is set.
func (s Set) ResolveIP(ip string) (limit float64, ok bool) {
	if v, found := s[Entity{IP: Named(ip)}][ConnectionCreationRate]; found {
		return v, true
	}
	v, found := s[Entity{IP: Default}][ConnectionCreationRate]
	return v, found
}
