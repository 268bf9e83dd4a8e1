package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

// TestMain fails the package if goroutines outlive its tests: every client is closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
		got, err := ParseBrokers(tc.in, "9092")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseBrokers(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("ParseBrokers(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestExplain(t *testing.T) {
	k := &Client{cfg: Config{Brokers: []string{"h1:9092", "h2:9092"}, Timeout: 3 * time.Second}, watch: new(dialWatch)}

	// No failed connection: a timeout means nobody answered.
	err := k.Explain(fmt.Errorf("wrapped: %w", context.DeadlineExceeded))
	if got := err.Error(); !strings.Contains(got, "no answer from h1:9092,h2:9092 within 3s") {
		t.Errorf("timeout without dial error: %q", got)
	}

	// A broker's own error passes through unchanged.
	if got := k.Explain(kerr.NotController); !errors.Is(got, kerr.NotController) || got.Error() != kerr.NotController.Error() {
		t.Errorf("broker error changed: %v", got)
	}

	// A refused seed connection is named, with what to do.
	refusedErr := fmt.Errorf("unable to dial: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	k.watch.OnBrokerConnect(kgo.BrokerMetadata{NodeID: -2147483648, Host: "h1", Port: 9092}, 0, nil, refusedErr)
	want := "cannot reach broker h1:9092: connection refused; is `skiff serve` running? (set --brokers or SKIFF_BROKERS)"
	if got := k.Explain(context.DeadlineExceeded).Error(); got != want {
		t.Errorf("refused seed:\n got %q\nwant %q", got, want)
	}
	if got := k.Explain(refusedErr).Error(); got != want {
		t.Errorf("refused seed, dial error returned directly:\n got %q\nwant %q", got, want)
	}

	// A broker the cluster advertises is named by id.
	k.watch.OnBrokerConnect(kgo.BrokerMetadata{NodeID: 3, Host: "10.0.0.3", Port: 9092}, 0, nil,
		&net.DNSError{Err: "no such host", Name: "b3.example", IsNotFound: true})
	if got := k.Explain(context.DeadlineExceeded).Error(); !strings.Contains(got, `cannot reach broker 3 at 10.0.0.3:9092, the address the cluster advertises for it: no such host "b3.example"`) {
		t.Errorf("advertised broker: %q", got)
	}

	// A later success to the same address clears the failure.
	k.watch.OnBrokerConnect(kgo.BrokerMetadata{NodeID: 3, Host: "10.0.0.3", Port: 9092}, 0, nil, nil)
	if _, _, err := k.LastDialError(); err != nil {
		t.Errorf("failure not cleared by success: %v", err)
	}
}

// TestRefusedBroker dials a port nobody listens on: the error names it, and a
// client made With the first one reports its failures to the first one's Explain.
func TestRefusedBroker(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // now refused

	k, err := New(Config{Brokers: []string{addr}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if got := k.Config().Brokers; len(got) != 1 || got[0] != addr {
		t.Errorf("Config().Brokers = %v; want [%s]", got, addr)
	}
	want := fmt.Sprintf("look up topic %q: cannot reach broker %s: connection refused;", "t", addr)
	if _, err := k.TopicPartitions(context.Background(), "t"); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("TopicPartitions: %v; want it to start with %q", err, want)
	}

	other, err := New(Config{Brokers: []string{addr}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	sibling, err := other.With(kgo.ClientID("sibling"))
	if err != nil {
		t.Fatal(err)
	}
	defer sibling.Close()
	ctx, cancel := sibling.RequestCtx(context.Background())
	defer cancel()
	if err := sibling.Kafka().Ping(ctx); err == nil {
		t.Fatal("ping of a closed port succeeded")
	}
	if a, _, derr := other.LastDialError(); a != addr || !errors.Is(derr, syscall.ECONNREFUSED) {
		t.Errorf("other.LastDialError() = %q, %v; want %s refused (recorded by the client made With it)", a, derr, addr)
	}
}

func TestTopicError(t *testing.T) {
	err := TopicError("x", kerr.UnknownTopicOrPartition)
	if !strings.Contains(err.Error(), `topic "x" does not exist`) || !strings.Contains(err.Error(), "skiff topic create x") {
		t.Errorf("unknown topic: %v", err)
	}
	if err := TopicError("x", kerr.InvalidTopicException); !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("other error not wrapped: %v", err)
	}
}
