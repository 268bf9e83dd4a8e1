package main

// Shared by the client commands (topic, group, offsets, produce, consume, bench):
// the --brokers and --timeout flags, turned into the client.Config of package
// client, which builds the Kafka client and words its failures.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"skiff/appliance"
	"skiff/client"
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

// clientConfigFrom is what the client flags say, checked.
func clientConfigFrom(c *cli.Context) (client.Config, error) {
	brokers, err := client.ParseBrokers(c.String("brokers"), defaultPort)
	if err != nil {
		return client.Config{}, err
	}
	timeout, err := timeoutFlag(c)
	if err != nil {
		return client.Config{}, err
	}
	return client.Config{Brokers: brokers, Timeout: timeout}, nil
}

// timeoutFlag is the --timeout of a client or admin command, checked.
func timeoutFlag(c *cli.Context) (time.Duration, error) {
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return 0, fmt.Errorf("--timeout must be positive, not %v", timeout)
	}
	return timeout, nil
}

// clientFromFlags builds the Kafka client of a client command from its flags,
// with extra options. It does not connect.
func clientFromFlags(c *cli.Context, opts ...kgo.Opt) (*client.Client, error) {
	cfg, err := clientConfigFrom(c)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, opts...)
}

// adminFromFlags is the preamble of a command that makes one round of admin
// requests: the client from its flags and a context bounded by --timeout. done
// releases both.
func adminFromFlags(c *cli.Context) (k *client.Client, ctx context.Context, done func(), err error) {
	if k, err = clientFromFlags(c); err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := k.RequestCtx(c.Context)
	return k, ctx, func() { cancel(); k.Close() }, nil
}

// unexpectedArgs refuses positional arguments a command does not take.
func unexpectedArgs(c *cli.Context, want int, hint string) error {
	if c.Args().Len() <= want {
		return nil
	}
	extra := c.Args().Slice()[want:]
	return fmt.Errorf("unexpected argument %q%s", extra[0], hint)
}
