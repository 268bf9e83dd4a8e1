package main

import (
	"bytes"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// runApp runs the skiff app with args (without the program name), stdin and
// captured stdout and stderr, as main does but without exiting.
func runApp(stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errOut
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	app.Reader = stdin
	err = app.Run(append([]string{"skiff"}, args...))
	return out.String(), errOut.String(), err
}

func TestClientFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "list", "--brokers", "::1"}, "brackets"},
		{[]string{"topic", "list", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"topic", "list", "extra"}, `unexpected argument "extra"`},
	} {
		_, _, err := runApp(nil, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v; want it to contain %q", tc.args, err, tc.want)
		}
	}
}

// TestTLSEnvironment: SKIFF_TLS turns TLS on for a client command as --tls
// does, and the flag overrides it. The broker is a listener that keeps the
// first bytes it gets: a TLS ClientHello (a handshake record, 0x16 0x03) or a
// Kafka request (a size prefix, 0x00 ...).
func TestTLSEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  string // "-": unset
		args []string
		tls  bool
	}{
		{env: "-"},
		{env: "true", tls: true},
		{env: "1", tls: true},
		{env: "false"},
		{env: "true", args: []string{"--tls=false"}},
		{env: "false", args: []string{"--tls"}, tls: true},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		first := make(chan []byte, 1)
		go func() {
			nc, err := ln.Accept()
			if err != nil {
				first <- nil
				return
			}
			defer nc.Close()
			nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			b := make([]byte, 3)
			if _, err := io.ReadFull(nc, b); err != nil {
				b = nil
			}
			first <- b
		}()
		t.Setenv("SKIFF_TLS", tc.env)
		if tc.env == "-" {
			os.Unsetenv("SKIFF_TLS")
		}
		args := append([]string{"topic", "list", "-b", ln.Addr().String(), "--timeout", "2s"}, tc.args...)
		_, _, err = runApp(nil, args...)
		if err == nil {
			t.Errorf("SKIFF_TLS=%s %v: listed topics from a broker that answers nothing", tc.env, tc.args)
		}
		got := <-first
		ln.Close()
		if len(got) < 3 {
			t.Fatalf("SKIFF_TLS=%s %v: the broker got no request", tc.env, tc.args)
		}
		if isTLS := got[0] == 0x16 && got[1] == 0x03; isTLS != tc.tls {
			t.Errorf("SKIFF_TLS=%s %v: the broker got % x, TLS %v; want TLS %v", tc.env, tc.args, got, isTLS, tc.tls)
		}
	}
}
