package main

// Shared by the client commands (topic, group, offsets, produce, consume, user,
// bench): the --brokers and --timeout flags and the security flags (TLS, SASL,
// or a Kafka client properties file), turned into the client.Config of package
// client, which builds the Kafka client and words its failures.

import (
	"context"
	"fmt"
	"os"
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
		&cli.BoolFlag{Name: "tls", EnvVars: []string{"SKIFF_TLS"},
			Usage: "connect with TLS (security.protocol SSL, or SASL_SSL with --sasl-mechanism)"},
		&cli.StringFlag{Name: "tls-ca", EnvVars: []string{"SKIFF_TLS_CA"},
			Usage: "PEM `FILE` of the CAs that sign the brokers' certificates (default: the system's)"},
		&cli.StringFlag{Name: "tls-cert", EnvVars: []string{"SKIFF_TLS_CERT"},
			Usage: "PEM `FILE` of a client certificate, for brokers that ask for one (mutual TLS)"},
		&cli.StringFlag{Name: "tls-key", EnvVars: []string{"SKIFF_TLS_KEY"},
			Usage: "PEM `FILE` of the key of --tls-cert"},
		&cli.StringFlag{Name: "sasl-mechanism", EnvVars: []string{"SKIFF_SASL_MECHANISM"},
			Usage: "authenticate with SASL `MECHANISM`: SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN"},
		&cli.StringFlag{Name: "user", EnvVars: []string{"SKIFF_USER"},
			Usage: "SASL user `NAME`; the password comes from --password-file or SKIFF_PASSWORD"},
		&cli.StringFlag{Name: "password-file", EnvVars: []string{"SKIFF_PASSWORD_FILE"},
			Usage: "read the SASL password from the first line of `FILE`"},
		&cli.StringFlag{Name: "command-config", EnvVars: []string{"SKIFF_COMMAND_CONFIG"},
			Usage: "Kafka client properties `FILE` (security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.ca.location, ...); flags override it"},
	}
}

// securityFrom is what the security flags say: the --command-config file,
// overridden by the flags given, the password from --password-file, else
// SKIFF_PASSWORD, else the file.
func securityFrom(c *cli.Context) (client.Security, error) {
	var s client.Security
	if path := c.String("command-config"); path != "" {
		var err error
		if s, err = client.ReadProperties(path); err != nil {
			return s, err
		}
	}
	if c.IsSet("tls") {
		s.TLS = c.Bool("tls")
	}
	for flag, field := range map[string]*string{
		"tls-ca": &s.CAFile, "tls-cert": &s.CertFile, "tls-key": &s.KeyFile,
		"sasl-mechanism": &s.Mechanism, "user": &s.User,
	} {
		if c.IsSet(flag) {
			*field = c.String(flag)
		}
	}
	switch {
	case c.String("password-file") != "":
		p, err := client.ReadPasswordFile(c.String("password-file"))
		if err != nil {
			return s, fmt.Errorf("--password-file: %w", err)
		}
		s.Password = p
	case os.Getenv("SKIFF_PASSWORD") != "":
		s.Password = os.Getenv("SKIFF_PASSWORD")
	}
	return s, nil
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
	sec, err := securityFrom(c)
	if err != nil {
		return client.Config{}, err
	}
	return client.Config{Brokers: brokers, Timeout: timeout}.WithSecurity(sec)
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

// nameArg is the one NAME argument of a subcommand of skiff what (topic, user).
func nameArg(c *cli.Context, what string) (string, error) {
	switch c.Args().Len() {
	case 0:
		return "", fmt.Errorf("missing %s name: usage: skiff %s %s NAME", what, what, c.Command.Name)
	case 1:
		if c.Args().First() == "" {
			return "", fmt.Errorf("%s name must not be empty", what)
		}
		return c.Args().First(), nil
	}
	return "", fmt.Errorf("unexpected argument %q: give one %s name", c.Args().Get(1), what)
}
