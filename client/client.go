// Package client is the Kafka client of skiff's client commands (produce,
// consume, topic, group, offsets) and of skiff bench: a franz-go client (kgo) and
// an admin client (kadm) over it, built from one Config, which remembers why
// connections failed so that an error can say which broker could not be reached
// and what to do about it. The commands' operations on a cluster are its methods
// (Consume, Produce, DescribeGroup, ResetOffsets, SnapshotOffsets, ...): package
// main only turns flags into their options.
//
// It is an ordinary Kafka client: it uses no private door into the broker and
// works against any Kafka cluster. Its messages are the CLI's and name its flags
// (--brokers, --timeout). How to reach a cluster is all in Config, so a new
// connection setting (TLS, SASL) is one field there and one option in New, and
// every command and the benchmark get it.
package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Config is how to reach a cluster.
type Config struct {
	Brokers []string      // host:port to bootstrap from, at least one (ParseBrokers)
	Timeout time.Duration // > 0: bounds each dial, admin request and RequestCtx
	// TLS, when set, connects with TLS (security.protocol SSL or SASL_SSL).
	TLS *tls.Config
	// SASL, when set, authenticates every connection with it (SASL_PLAINTEXT
	// or SASL_SSL).
	SASL sasl.Mechanism
}

// WithSecurity returns cfg connecting as s says, or an error naming the flag
// at fault.
func (cfg Config) WithSecurity(s Security) (Config, error) {
	err := s.apply(&cfg)
	return cfg, err
}

// Protocol is Kafka's security.protocol of cfg, with the SASL mechanism:
// PLAINTEXT, SSL, SASL_PLAINTEXT SCRAM-SHA-512, ...
func (cfg Config) Protocol() string {
	s := Security{TLS: cfg.TLS != nil}
	if cfg.SASL != nil {
		s.Mechanism = cfg.SASL.Name()
		return s.Protocol() + " " + s.Mechanism
	}
	return s.Protocol()
}

// opts are the kgo options that Config stands for.
func (cfg Config) opts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.DialTimeout(cfg.Timeout),
		kgo.ClientID("skiff-cli"),
	}
	if cfg.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg.TLS.Clone()))
	}
	if cfg.SASL != nil {
		opts = append(opts, kgo.SASL(cfg.SASL))
	}
	return opts
}

// Client is a franz-go client plus an admin client over it. Close it when done.
type Client struct {
	kafka *kgo.Client
	admin *kadm.Client
	cfg   Config
	watch *dialWatch
}

// New builds a client for cfg, with extra options after cfg's own. It does not
// connect: franz-go dials on the first request.
func New(cfg Config, opts ...kgo.Opt) (*Client, error) {
	return newClient(cfg, new(dialWatch), opts)
}

// With builds another client with k's Config and extra options, sharing k's
// record of failed connections, so that k.Explain also names its failures.
func (k *Client) With(opts ...kgo.Opt) (*Client, error) {
	return newClient(k.cfg, k.watch, opts)
}

func newClient(cfg Config, watch *dialWatch, opts []kgo.Opt) (*Client, error) {
	base := append(cfg.opts(), kgo.WithHooks(watch))
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("configure Kafka client: %w", err)
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(cfg.Timeout.Milliseconds(), 1<<31-1)))
	return &Client{kafka: cl, admin: adm, cfg: cfg, watch: watch}, nil
}

// Kafka is the franz-go client: produce, consume, raw requests.
func (k *Client) Kafka() *kgo.Client { return k.kafka }

// Admin is the admin client over Kafka, its requests bounded by Config.Timeout.
func (k *Client) Admin() *kadm.Client { return k.admin }

// Config is the configuration k was built with.
func (k *Client) Config() Config { return k.cfg }

// Close closes the connections; requests in flight fail.
func (k *Client) Close() { k.kafka.Close() }

// RequestCtx bounds one round of requests by Config.Timeout.
func (k *Client) RequestCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, k.cfg.Timeout)
}
