package main

// Shared by the client commands (topic, group, offsets, produce, consume): the
// --brokers and --timeout flags, the franz-go client they build, and the
// translation of connection failures into one message that says what to do.
//
// The client commands are ordinary Kafka clients (franz-go kgo and kadm): they
// use no private door into the broker and work against any Kafka cluster.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"skiff/appliance"
)

const (
	defaultPort    = appliance.DefaultKafkaPort
	defaultBrokers = "localhost:" + defaultPort
	defaultTimeout = 10 * time.Second
)

// clientFlags returns fresh copies of the flags every client command takes.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:    "brokers",
			Aliases: []string{"b"},
			EnvVars: []string{"SKIFF_BROKERS"},
			Value:   defaultBrokers,
			Usage:   "Kafka brokers to bootstrap from, `HOST:PORT[,...]` (port " + defaultPort + " if omitted)",
		},
		&cli.DurationFlag{
			Name:    "timeout",
			EnvVars: []string{"SKIFF_TIMEOUT"},
			Value:   defaultTimeout,
			Usage:   "give up when no broker answers within `DURATION` (first connection, metadata and admin requests)",
		},
	}
}

// clientConfig is what the client flags say.
type clientConfig struct {
	brokers []string      // host:port, at least one
	timeout time.Duration // > 0
}

func clientConfigFrom(c *cli.Context) (clientConfig, error) {
	brokers, err := parseBrokers(c.String("brokers"))
	if err != nil {
		return clientConfig{}, err
	}
	timeout, err := timeoutFlag(c)
	if err != nil {
		return clientConfig{}, err
	}
	return clientConfig{brokers: brokers, timeout: timeout}, nil
}

// timeoutFlag is the --timeout of a client or admin command, checked.
func timeoutFlag(c *cli.Context) (time.Duration, error) {
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return 0, fmt.Errorf("--timeout must be positive, not %v", timeout)
	}
	return timeout, nil
}

// parseBrokers splits a comma-separated broker list, trims spaces, drops empty
// entries and adds port 9092 where none is given. IPv6 addresses need brackets:
// [::1]:9092.
func parseBrokers(s string) ([]string, error) {
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

// clientFromFlags builds the Kafka client of a client command from its flags,
// with extra options. It does not connect.
func clientFromFlags(c *cli.Context, opts ...kgo.Opt) (*kafkaClient, error) {
	cfg, err := clientConfigFrom(c)
	if err != nil {
		return nil, err
	}
	return newKafkaClient(cfg, nil, opts...)
}

// adminFromFlags is the preamble of a command that makes one round of admin
// requests: the client from its flags and a context bounded by --timeout. done
// releases both.
func adminFromFlags(c *cli.Context) (k *kafkaClient, ctx context.Context, done func(), err error) {
	if k, err = clientFromFlags(c); err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := k.requestCtx(c.Context)
	return k, ctx, func() { cancel(); k.Close() }, nil
}

// kafkaClient is a franz-go client plus an admin client over it, remembering
// why connections failed so that errors can name the cause.
type kafkaClient struct {
	cl    *kgo.Client
	adm   *kadm.Client
	cfg   clientConfig
	watch *dialWatch
}

// newKafkaClient builds a client for cfg with extra options. It does not
// connect: franz-go dials on the first request.
func newKafkaClient(cfg clientConfig, watch *dialWatch, opts ...kgo.Opt) (*kafkaClient, error) {
	if watch == nil {
		watch = new(dialWatch)
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(cfg.brokers...),
		kgo.DialTimeout(cfg.timeout),
		kgo.WithHooks(watch),
		kgo.ClientID("skiff-cli"),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("configure Kafka client: %w", err)
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(cfg.timeout.Milliseconds(), 1<<31-1)))
	return &kafkaClient{cl: cl, adm: adm, cfg: cfg, watch: watch}, nil
}

func (k *kafkaClient) Close() { k.cl.Close() }

// requestCtx bounds one round of requests by the --timeout.
func (k *kafkaClient) requestCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, k.cfg.timeout)
}

// explain turns a failed request into the message a person needs: which broker
// could not be reached and why, or that no broker answered in time. Other
// errors are returned unchanged.
func (k *kafkaClient) explain(err error) error {
	if err == nil {
		return nil
	}
	timedOut := errors.Is(err, context.DeadlineExceeded)
	if !timedOut && !isConnError(err) {
		return err
	}
	if addr, node, derr := k.watch.last(); derr != nil {
		if node >= 0 {
			return fmt.Errorf("cannot reach broker %d at %s, the address the cluster advertises for it: %s; "+
				"check that broker's advertised address and that it is running", node, addr, connReason(derr))
		}
		return fmt.Errorf("cannot reach broker %s: %s; is `skiff serve` running? (set --brokers or SKIFF_BROKERS)",
			addr, connReason(derr))
	}
	if timedOut {
		return fmt.Errorf("no answer from %s within %v; is it a Kafka broker, and is it healthy? (raise --timeout to wait longer)",
			strings.Join(k.cfg.brokers, ","), k.cfg.timeout)
	}
	return fmt.Errorf("lost connection to %s: %w", strings.Join(k.cfg.brokers, ","), err)
}

// isConnError reports whether err comes from the network rather than from a
// broker's answer.
func isConnError(err error) bool {
	var ne net.Error
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return false
	}
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// connReason is the innermost useful part of a connection error:
// "connection refused" rather than "dial tcp 127.0.0.1:9092: connect: connection refused".
func connReason(err error) string {
	var errno syscall.Errno
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return fmt.Sprintf("no such host %q", dns.Name)
		}
		return dns.Error()
	case errors.As(err, &errno):
		return errno.Error()
	case errors.As(err, &ne) && ne.Timeout():
		return "connection timed out"
	default:
		return err.Error()
	}
}

// dialWatch is a kgo.HookBrokerConnect that remembers the latest failed
// connection attempt (cleared by a later success to the same address).
type dialWatch struct {
	mu struct {
		sync.Mutex
		addr string
		node int32
		err  error
	}
}

var _ kgo.HookBrokerConnect = (*dialWatch)(nil)

func (w *dialWatch) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err != nil:
		w.mu.addr, w.mu.node, w.mu.err = addr, meta.NodeID, err
	case w.mu.addr == addr:
		w.mu.addr, w.mu.node, w.mu.err = "", 0, nil
	}
}

// last returns the latest failed connection: address, node id (negative for a
// seed broker from --brokers) and error; err is nil if none failed.
func (w *dialWatch) last() (addr string, node int32, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.addr, w.mu.node, w.mu.err
}

// topicPartitions looks topic up with a metadata request (never creating it)
// and returns its partition ids in order. A missing topic is a clear error.
func (k *kafkaClient) topicPartitions(ctx context.Context, topic string) ([]int32, error) {
	ctx, cancel := k.requestCtx(ctx)
	defer cancel()
	tds, err := k.adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("look up topic %q: %w", topic, k.explain(err))
	}
	td, ok := tds[topic]
	if !ok {
		return nil, fmt.Errorf("topic %q: the broker did not describe it", topic)
	}
	if td.Err != nil {
		return nil, topicError(topic, td.Err)
	}
	ps := td.Partitions.Numbers()
	if len(ps) == 0 {
		return nil, fmt.Errorf("topic %q has no partitions", topic)
	}
	return ps, nil
}

// topicError words a per-topic error from a broker.
func topicError(topic string, err error) error {
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("topic %q does not exist (create it with `skiff topic create %s`, list topics with `skiff topic list`)", topic, topic)
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return fmt.Errorf("topic %q: not authorized", topic)
	default:
		return fmt.Errorf("topic %q: %w", topic, err)
	}
}

// unexpectedArgs refuses positional arguments a command does not take.
func unexpectedArgs(c *cli.Context, want int, hint string) error {
	if c.Args().Len() <= want {
		return nil
	}
	extra := c.Args().Slice()[want:]
	return fmt.Errorf("unexpected argument %q%s", extra[0], hint)
}
