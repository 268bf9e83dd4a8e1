package main

import (
	"net"
	"strings"
	"testing"
)

// TestProduceFlagErrors checks that bad flags are refused before any
// connection is attempted (the broker address is unroutable).
func TestProduceFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce"}, "missing --topic"},
		{[]string{"produce", "-t", "x", "--acks", "2"}, "invalid --acks"},
		{[]string{"produce", "-t", "x", "--compression", "brotli"}, "invalid --compression"},
		{[]string{"produce", "-t", "x", "--key-separator", ""}, "--key-separator must not be empty"},
		{[]string{"produce", "-t", "x", "--delivery-timeout", "0s"}, "--delivery-timeout must be at least 1s"},
		{[]string{"produce", "-t", "x", "file.txt"}, `unexpected argument "file.txt"`},
		{[]string{"produce", "-t", "x", "--file", "/nonexistent/in.txt"}, "open input: open /nonexistent/in.txt"},
	} {
		_, _, err := runApp(nil, append(tc.args, "-b", "192.0.2.1:9")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v; want it to contain %q", tc.args, err, tc.want)
		}
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
