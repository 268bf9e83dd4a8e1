package main

// skiff cluster status|remove-node|join-token: the flags of cluster
// administration through a node's admin HTTP API; the operations are package
// nodeadmin's.

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"skiff/appliance"
	"skiff/client"
	"skiff/internal/pki"
	"skiff/nodeadmin"
)

const (
	defaultHTTPPort = appliance.DefaultHTTPPort
	defaultHTTP     = "localhost:" + defaultHTTPPort
)

func clusterCommand() *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "show the cluster's nodes, etcd members and partitions; remove a node; make a join token",
		Subcommands: []*cli.Command{
			clusterStatusCommand(),
			clusterRemoveNodeCommand(),
			clusterJoinTokenCommand(),
		},
	}
}

// adminFlags are the flags of the commands that talk to a node's HTTP port.
func adminFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:    "http",
			EnvVars: []string{"SKIFF_HTTP"},
			Value:   defaultHTTP,
			Usage:   "HTTP address of any node, `HOST:PORT` (its http setting; port " + defaultHTTPPort + " if omitted; https://HOST:PORT for a node with http-tls)",
		},
		&cli.DurationFlag{
			Name:  "timeout",
			Value: 30 * time.Second,
			Usage: "give up when the node does not answer within `DURATION`",
		},
		&cli.StringFlag{Name: "http-token-file", EnvVars: []string{"SKIFF_HTTP_TOKEN_FILE"},
			Usage: "send the bearer token on the first line of `FILE` (the node's http-token-file); default: the token in SKIFF_HTTP_TOKEN"},
		&cli.BoolFlag{Name: "tls", EnvVars: []string{"SKIFF_TLS"},
			Usage: "talk HTTPS to the node (its http-tls); implied by https:// in --http, --tls-ca and --data-dir"},
		&cli.StringFlag{Name: "tls-ca", EnvVars: []string{"SKIFF_TLS_CA"},
			Usage: "PEM `FILE` of the CA that signs the node's certificate (default: the system's)"},
		&cli.StringFlag{Name: "tls-cert", EnvVars: []string{"SKIFF_TLS_CERT"},
			Usage: "PEM `FILE` of a client certificate signed by the cluster's CA: authenticates the command instead of a token"},
		&cli.StringFlag{Name: "tls-key", EnvVars: []string{"SKIFF_TLS_KEY"},
			Usage: "PEM `FILE` of the key of --tls-cert"},
		&cli.StringFlag{Name: "data-dir",
			Usage: "on a node of a cluster formed with --secure: its data directory `DIR`, whose CA and node certificate (DIR/secure, readable by the node's user) authenticate the command over HTTPS"},
	}
}

func clusterStatusCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:  "status",
		Usage: "show the etcd members and their health, the controller, brokers with their partitions, offline partitions",
		Description: "Asks one node (--http) for the cluster's state. Exits with status 1 when the node\n" +
			"cannot be reached, or when it reports that the cluster metadata (etcd) has no quorum;\n" +
			"it still prints what that node knows.",
		HideHelpCommand: true,
		Flags: append(adminFlags(),
			&cli.BoolFlag{Name: "json", Usage: "print the node's answer as JSON"},
		),
		Action: runClusterStatus,
	})
}

func clusterRemoveNodeCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "remove-node",
		Usage:     "remove a node (and its etcd member) from the cluster",
		ArgsUsage: "ID",
		Description: "Removes node ID: its etcd member leaves the cluster and its process stops. First\n" +
			"the node is drained: the controller moves its partition replicas to other nodes one\n" +
			"partition at a time (each new replica copies the log and joins the ISR before the old one\n" +
			"goes), and the command waits for that, printing progress, before it removes the node.\n" +
			"With --drain=false it is refused instead while the node holds replicas. Also refused when\n" +
			"the node runs the last voting etcd member, when the members left would not make a quorum,\n" +
			"and when --http names the node being removed (ask another node). A node that is down for\n" +
			"good is removed the same way (its replicas are copied from the other replicas).",
		HideHelpCommand: true,
		Flags: append(adminFlags(),
			&cli.BoolFlag{Name: "drain", Value: true, Usage: "move the node's partition replicas to other nodes first, then remove it (--drain=false: refuse while it holds any)"},
			&cli.DurationFlag{Name: "drain-timeout", Value: 30 * time.Minute, Usage: "with --drain, give up waiting after `DURATION` (the draining goes on; run the command again)"},
		),
		Action: runClusterRemoveNode,
	})
}

func clusterJoinTokenCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:  "join-token",
		Usage: "make a token that admits one node to a cluster formed with --secure",
		Description: "Asks a node (--http) of a cluster formed with --secure for a new join token and prints it.\n" +
			"A token admits one node (skiff serve --join HOST:HTTP-PORT --join-token TOKEN) until it\n" +
			"expires. The request needs admin credentials: on a node itself, --data-dir DIR uses that\n" +
			"node's certificate.",
		HideHelpCommand: true,
		Flags: append(adminFlags(),
			&cli.DurationFlag{Name: "ttl", Value: time.Hour, Usage: "the token expires after `DURATION` (at most 168h)"},
		),
		Action: runClusterJoinToken,
	})
}

func runClusterJoinToken(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("unexpected argument %q: skiff cluster join-token takes no arguments", c.Args().First())
	}
	a, err := adminClientFrom(c)
	if err != nil {
		return err
	}
	res, err := a.JoinToken(c.Context, c.Duration("ttl"))
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer, res.Token)
	fmt.Fprintf(c.App.ErrWriter, "valid once, until %s: skiff serve --join %s --join-token TOKEN\n", res.Expires.UTC().Format(time.RFC3339), res.HTTPAddr)
	return nil
}

// adminClientFrom is the client of the node the flags name, with the
// credentials they give.
func adminClientFrom(c *cli.Context) (*nodeadmin.Client, error) {
	scheme, addr, err := nodeadmin.ParseAddress(c.String("http"), defaultHTTPPort)
	if err != nil {
		return nil, err
	}
	timeout, err := timeoutFlag(c)
	if err != nil {
		return nil, err
	}
	sec := client.Security{TLS: scheme == "https" || c.Bool("tls") || c.String("tls-ca") != "" || c.String("data-dir") != "",
		CAFile: c.String("tls-ca"), CertFile: c.String("tls-cert"), KeyFile: c.String("tls-key")}
	if dir := c.String("data-dir"); dir != "" {
		p := pki.PathsOf(dir)
		if ok, err := p.Exists(); !ok {
			return nil, fmt.Errorf("--data-dir %s: no CA in %s (%v): the data directory of a node of a cluster formed with --secure is needed, readable by this user", dir, p.CACert, err)
		}
		sec.CAFile = cmp.Or(sec.CAFile, p.CACert)
		if sec.CertFile == "" {
			sec.CertFile, sec.KeyFile = p.NodeCert, p.NodeKey
		}
	}
	tc, err := sec.TLSConfig()
	if err != nil {
		return nil, err
	}
	if tc != nil {
		scheme = "https"
	}
	token := os.Getenv("SKIFF_HTTP_TOKEN")
	if path := c.String("http-token-file"); path != "" {
		if token, err = client.ReadPasswordFile(path); err != nil {
			return nil, fmt.Errorf("--http-token-file: %w", err)
		}
	}
	return nodeadmin.New(nodeadmin.Config{Base: scheme + "://" + addr, Token: strings.TrimSpace(token), Timeout: timeout, TLS: tc}), nil
}

func runClusterStatus(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("unexpected argument %q: skiff cluster status takes no arguments", c.Args().First())
	}
	a, err := adminClientFrom(c)
	if err != nil {
		return err
	}
	st, err := a.Status(c.Context)
	if err != nil {
		return err
	}
	if err := nodeadmin.WriteStatus(c.App.Writer, st, c.Bool("json")); err != nil {
		return err
	}
	return nodeadmin.CheckQuorum(st)
}

func runClusterRemoveNode(c *cli.Context) error {
	if c.Args().Len() != 1 {
		return errors.New("usage: skiff cluster remove-node ID (skiff cluster status lists the node ids)")
	}
	id, err := strconv.ParseInt(c.Args().First(), 10, 32)
	if err != nil || id < 0 {
		return fmt.Errorf("node id %q: want a whole number (skiff cluster status lists them)", c.Args().First())
	}
	a, err := adminClientFrom(c)
	if err != nil {
		return err
	}
	return a.RemoveNode(c.Context, c.App.Writer, int32(id), c.Bool("drain"), c.Duration("drain-timeout"))
}
