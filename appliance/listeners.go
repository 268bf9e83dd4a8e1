package appliance

// The Kafka listeners of a node, as Kafka configures them: listeners,
// advertised.listeners, listener.security.protocol.map and
// inter.broker.listener.name. --listen and --advertise stay as the shorthand for
// one PLAINTEXT listener.

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"skiff/kafkaapi"
)

// listenerSpec is one listener of the node.
type listenerSpec struct {
	name     string
	protocol kafkaapi.SecurityProtocol
	addr     string // listen address HOST:PORT (empty host: every interface)
	// advertise is the address registered for clients (HOST:PORT); empty: the
	// bound address, a wildcard host replaced by the host name.
	advertise string
}

// listeners returns the node's listeners in the order of the listeners setting
// (listen as one PLAINTEXT listener when it is empty) and the index of the
// inter-broker listener, or an error naming the setting at fault.
func (c Config) listeners() ([]listenerSpec, int, error) {
	if len(c.Listeners) == 0 {
		if len(c.AdvertisedListeners) > 0 {
			return nil, 0, errors.New("advertised-listeners needs listeners (with listen, use advertise)")
		}
		specs := []listenerSpec{{name: string(kafkaapi.Plaintext), protocol: kafkaapi.Plaintext, addr: c.Listen, advertise: c.Advertise}}
		if c.InterBrokerListener != "" && c.InterBrokerListener != specs[0].name {
			return nil, 0, fmt.Errorf("inter-broker-listener %q: not a listener (the only one is PLAINTEXT, from listen)", c.InterBrokerListener)
		}
		return specs, 0, nil
	}
	if c.Advertise != "" {
		return nil, 0, errors.New("advertise excludes listeners: give the advertised addresses with advertised-listeners")
	}
	protocols := map[string]kafkaapi.SecurityProtocol{}
	for _, m := range c.ListenerProtocolMap {
		name, proto, ok := strings.Cut(m, ":")
		p, err := kafkaapi.ParseSecurityProtocol(proto)
		if !ok || name == "" || err != nil {
			return nil, 0, fmt.Errorf("listener-security-protocol-map %q: want NAME:PROTOCOL, PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", m)
		}
		protocols[name] = p
	}
	var specs []listenerSpec
	index := map[string]int{}
	for _, l := range c.Listeners {
		name, addr, err := parseListener("listeners", l)
		if err != nil {
			return nil, 0, err
		}
		if _, dup := index[name]; dup {
			return nil, 0, fmt.Errorf("listeners: %s is named twice", name)
		}
		p, ok := protocols[name]
		if !ok {
			if p, err = kafkaapi.ParseSecurityProtocol(name); err != nil {
				return nil, 0, fmt.Errorf("listeners %q: %s is neither a security protocol nor mapped to one by listener-security-protocol-map", l, name)
			}
		}
		index[name] = len(specs)
		specs = append(specs, listenerSpec{name: name, protocol: p, addr: addr})
	}
	for _, l := range c.AdvertisedListeners {
		name, addr, err := parseListener("advertised-listeners", l)
		if err != nil {
			return nil, 0, err
		}
		i, ok := index[name]
		if !ok {
			return nil, 0, fmt.Errorf("advertised-listeners %q: no listener is named %s", l, name)
		}
		host, port, _ := net.SplitHostPort(addr)
		if host == "" || port == "0" {
			return nil, 0, fmt.Errorf("advertised-listeners %q: needs a host and a port clients can dial", l)
		}
		specs[i].advertise = addr
	}
	inter := 0
	if c.InterBrokerListener != "" {
		i, ok := index[c.InterBrokerListener]
		if !ok {
			return nil, 0, fmt.Errorf("inter-broker-listener %q: no listener is named so", c.InterBrokerListener)
		}
		inter = i
	}
	return specs, inter, nil
}

// parseListener reads NAME://HOST:PORT.
func parseListener(setting, s string) (name, addr string, err error) {
	name, addr, ok := strings.Cut(s, "://")
	if !ok || name == "" {
		return "", "", fmt.Errorf("%s %q: want NAME://HOST:PORT, such as SASL_SSL://:9093", setting, s)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("%s %q: want NAME://HOST:PORT (%v)", setting, s, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", "", fmt.Errorf("%s %q: port must be a number from 0 to 65535", setting, s)
	}
	return name, addr, nil
}
