// Package freeport picks ports for listeners that must be named before they are
// bound: an etcd member's URLs go into its cluster's membership before etcd
// binds them, and a test's joining node is told its ports before it starts.
//
// A port the kernel hands out for host:0 comes from its ephemeral range, which
// is also where every outgoing connection on the machine takes its local port;
// in the seconds before the listener binds it, one may take it ("bind: address
// already in use", seen in CI). So Pick chooses below that range when there is
// room.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowFrom is where Pick's ports start, above the well-known services.
const lowFrom = 20000

// Pick returns a TCP port that host:port could be bound with a moment ago.
func Pick(host string) (int, error) {
	if hi := ephemeralLow(); hi > lowFrom+1000 {
		for range 100 {
			port := lowFrom + rand.IntN(hi-lowFrom)
			if l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port))); err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0 if unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	lo, _ := strconv.Atoi(f[0])
	return lo
}
