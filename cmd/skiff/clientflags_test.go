package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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

func TestParseBrokers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "localhost:9092", want: []string{"localhost:9092"}},
		{in: "a:1, b:2 ,,c", want: []string{"a:1", "b:2", "c:9092"}},
		{in: "[::1]:9093", want: []string{"[::1]:9093"}},
		{in: "[::1]", want: []string{"[::1]:9092"}},
		{in: "::1", err: "brackets"},
		{in: "host:port", err: "port must be a number"},
		{in: "host:0", err: "port must be a number"},
		{in: ":9092", err: "missing host"},
		{in: " , ", err: "no brokers given"},
		{in: "", err: "no brokers given"},
	} {
		got, err := parseBrokers(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseBrokers(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parseBrokers(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
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

func TestExplain(t *testing.T) {
	k := &kafkaClient{cfg: clientConfig{brokers: []string{"h1:9092", "h2:9092"}, timeout: 3 * time.Second}, watch: new(dialWatch)}

	// No failed connection: a timeout means nobody answered.
	err := k.explain(fmt.Errorf("wrapped: %w", context.DeadlineExceeded))
	if got := err.Error(); !strings.Contains(got, "no answer from h1:9092,h2:9092 within 3s") {
		t.Errorf("timeout without dial error: %q", got)
	}

	// A broker's own error passes through unchanged.
	if got := k.explain(kerr.NotController); !errors.Is(got, kerr.NotController) || got.Error() != kerr.NotController.Error() {
		t.Errorf("broker error changed: %v", got)
	}

	// A refused seed connection is named, with what to do.
	refusedErr := fmt.Errorf("unable to dial: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	k.watch.OnBrokerConnect(kgo.BrokerMetadata{NodeID: -2147483648, Host: "h1", Port: 9092}, 0, nil, refusedErr)
	want := "cannot reach broker h1:9092: connection refused; is `skiff serve` running? (set --brokers or SKIFF_BROKERS)"
	if got := k.explain(context.DeadlineExceeded).Error(); got != want {
		t.Errorf("refused seed:\n got %q\nwant %q", got, want)
	}
	if got := k.explain(refusedErr).Error(); got != want {
		t.Errorf("refused seed, dial error returned directly:\n got %q\nwant %q", got, want)
	}

	// A broker the cluster advertises is named by id.
	k.watch.OnBrokerConnect(kgo.BrokerMetadata{NodeID: 3, Host: "10.0.0.3", Port: 9092}, 0, nil,
		&net.DNSError{Err: "no such host", Name: "b3.example", IsNotFound: true})
	if got := k.explain(context.DeadlineExceeded).Error(); !strings.Contains(got, `cannot reach broker 3 at 10.0.0.3:9092, the address the cluster advertises for it: no such host "b3.example"`) {
		t.Errorf("advertised broker: %q", got)
	}

	// A later success to the same address clears the failure.
	k.watch.OnBrokerConnect(kgo.BrokerMetadata{NodeID: 3, Host: "10.0.0.3", Port: 9092}, 0, nil, nil)
	if _, _, err := k.watch.last(); err != nil {
		t.Errorf("failure not cleared by success: %v", err)
	}
}
