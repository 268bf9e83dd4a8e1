package client

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseBrokers splits a comma-separated broker list, trims spaces, drops empty
// entries and adds defaultPort where none is given. IPv6 addresses need
// brackets: [::1]:9092.
func ParseBrokers(s, defaultPort string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(s, ",") {
		b = strings.TrimSpace(b)
		if b == "" {
			continue
		}
		host, port, err := net.SplitHostPort(b)
		if err != nil {
			// Only a missing port is repaired; anything else is reported.
			if strings.Count(b, ":") > 1 && !strings.HasPrefix(b, "[") {
				return nil, fmt.Errorf("invalid broker address %q: write IPv6 addresses in brackets, e.g. [::1]:9092", b)
			}
			if strings.HasSuffix(b, "]") || !strings.Contains(b, ":") {
				host, port = strings.Trim(b, "[]"), defaultPort
			} else {
				return nil, fmt.Errorf("invalid broker address %q: want HOST:PORT", b)
			}
		}
		if host == "" {
			return nil, fmt.Errorf("invalid broker address %q: missing host", b)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("invalid broker address %q: port must be a number from 1 to 65535", b)
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	if len(out) == 0 {
		return nil, errors.New("no brokers given: set --brokers HOST:PORT[,...] (or SKIFF_BROKERS)")
	}
	return out, nil
}
