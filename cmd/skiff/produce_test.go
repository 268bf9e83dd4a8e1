package main

import (
	"net"
	"strings"
	"testing"
)

func TestParseAcksAndCompression(t *testing.T) {
	for _, s := range []string{"all", "-1", "1", "leader", "0", "none", "ALL"} {
		if _, _, err := parseAcks(s); err != nil {
			t.Errorf("parseAcks(%q): %v", s, err)
		}
	}
	if _, idem, _ := parseAcks("all"); !idem {
		t.Error("acks=all should keep idempotent writes")
	}
	if _, idem, _ := parseAcks("1"); idem {
		t.Error("acks=1 must disable idempotent writes")
	}
	if _, _, err := parseAcks("2"); err == nil {
		t.Error("parseAcks(2) succeeded")
	}
	for _, s := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if _, err := parseCompression(s); err != nil {
			t.Errorf("parseCompression(%q): %v", s, err)
		}
	}
	if _, err := parseCompression("brotli"); err == nil {
		t.Error("parseCompression(brotli) succeeded")
	}
}

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
