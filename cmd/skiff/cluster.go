package main

// skiff cluster status|remove-node: cluster administration through a node's admin
// HTTP API (appliance/admin.go), which is not part of the Kafka protocol.

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"skiff/appliance"
	"skiff/client"
	"skiff/internal/pki"
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
	var res appliance.JoinTokenAnswer
	if _, err := a.do(c.Context, http.MethodPost, "/v1/cluster/join-token?ttl="+url.QueryEscape(c.Duration("ttl").String()), &res); err != nil {
		return fmt.Errorf("join token: %w", err)
	}
	fmt.Fprintln(c.App.Writer, res.Token)
	fmt.Fprintf(c.App.ErrWriter, "valid once, until %s: skiff serve --join %s --join-token TOKEN\n", res.Expires.UTC().Format(time.RFC3339), res.HTTPAddr)
	return nil
}

// adminClient talks to one node's admin API.
type adminClient struct {
	base  string // http://host:port or https://host:port
	token string // bearer token; empty: none
	http  *http.Client
}

func adminClientFrom(c *cli.Context) (*adminClient, error) {
	addr := strings.TrimSpace(c.String("http"))
	scheme := "http"
	if rest, ok := strings.CutPrefix(addr, "https://"); ok {
		scheme, addr = "https", rest
	}
	addr = strings.TrimSuffix(strings.TrimPrefix(addr, "http://"), "/")
	if addr == "" {
		return nil, errors.New("--http is empty: give a node's HTTP address, HOST:PORT")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(strings.Trim(addr, "[]"), defaultHTTPPort)
	}
	host, port, err := net.SplitHostPort(addr)
	if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p <= 0 || p > 65535 {
		return nil, fmt.Errorf("--http %q: want HOST:PORT, a node's HTTP address", c.String("http"))
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
	return &adminClient{base: scheme + "://" + addr, token: strings.TrimSpace(token),
		http: &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}}}, nil
}

// do sends a request and decodes a 200 or 202 answer into out, returning the status.
// Another status is an error carrying the node's message.
func (a *adminClient) do(ctx context.Context, method, path string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, nil)
	if err != nil {
		return 0, err
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if tlsFailure(err) {
			return 0, fmt.Errorf("HTTPS to %s failed: %v; give the CA of the node's certificate with --tls-ca (on a node of a cluster formed with --secure: --data-dir, or DATA/secure/ca.pem)", a.base, err)
		}
		return 0, fmt.Errorf("no Skiff node answers at %s (%v): is `skiff serve` running there? Give a node's HTTP address with --http HOST:PORT (or SKIFF_HTTP)", a.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, fmt.Errorf("read the answer of %s: %w", a.base, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return resp.StatusCode, errors.New(e.Error)
		}
		if resp.StatusCode == http.StatusBadRequest && strings.Contains(string(body), "HTTPS server") {
			return resp.StatusCode, fmt.Errorf("the node at %s serves HTTPS (http-tls): use --tls with --tls-ca, or https:// in --http", a.base)
		}
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %.200s (is %s a Skiff node's HTTP port?)", method, a.base+path, resp.Status, body, a.base)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return resp.StatusCode, fmt.Errorf("%s answered %s with something that is not a cluster status (%v); is it a Skiff node's HTTP port?", a.base, path, err)
	}
	return resp.StatusCode, nil
}

// tlsFailure reports whether err is a failed TLS handshake or certificate check.
func tlsFailure(err error) bool {
	var (
		unknown   x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verifyErr *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		op        *net.OpError
	)
	// A TLS alert from the server (say, refusing the client certificate) is a
	// net.OpError of Op "remote error".
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verifyErr) || errors.As(err, &record) || (errors.As(err, &op) && op.Op == "remote error")
}

func runClusterStatus(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("unexpected argument %q: skiff cluster status takes no arguments", c.Args().First())
	}
	a, err := adminClientFrom(c)
	if err != nil {
		return err
	}
	var st appliance.ClusterStatus
	if _, err := a.do(c.Context, http.MethodGet, "/v1/cluster", &st); err != nil {
		return err
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return err
		}
	} else if err := printClusterStatus(c.App.Writer, st); err != nil {
		return err
	}
	if !st.Quorum {
		return fmt.Errorf("the cluster metadata (etcd) has no quorum at node %d (%s): the state shown is that node's last view and may be stale, and no topic or node can be changed. "+
			"More than half of the etcd members must run: start the stopped nodes (docs/operations.md: losing them for good)", st.NodeID, st.QuorumError)
	}
	return nil
}

// printClusterStatus writes the status as readable tables.
func printClusterStatus(w io.Writer, st appliance.ClusterStatus) error {
	yesNo := map[bool]string{true: "yes", false: "NO"}
	controller := "none"
	if st.ControllerID >= 0 {
		controller = fmt.Sprintf("node %d", st.ControllerID)
	}
	fmt.Fprintf(w, "cluster %s (answered by node %d)\n", st.ClusterID, st.NodeID)
	fmt.Fprintf(w, "controller: %s\n", controller)
	fmt.Fprintf(w, "etcd quorum: %s", yesNo[st.Quorum])
	if !st.Quorum && st.QuorumError != "" {
		fmt.Fprintf(w, " (%s)", st.QuorumError)
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "\netcd members: %d\n", len(st.Members))
	if st.MembersError != "" {
		fmt.Fprintf(w, "  %s\n", st.MembersError)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(st.Members) > 0 {
		fmt.Fprintln(tw, "NODE\tMEMBER\tID\tROLE\tPEER URL\tCLIENT URL\tHEALTH")
	}
	for _, m := range st.Members {
		node := "?"
		if m.NodeID >= 0 {
			node = strconv.Itoa(int(m.NodeID))
		}
		name := m.Name
		if name == "" {
			name = "(not started)"
		}
		role := "voter"
		switch {
		case m.Learner:
			role = "learner"
		case m.Leader:
			role = "leader"
		}
		health := "healthy"
		if !m.Healthy {
			health = "UNHEALTHY: " + m.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", node, name, m.ID, role,
			strings.Join(m.PeerURLs, ","), orDash(strings.Join(m.ClientURLs, ",")), health)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	live := 0
	for _, b := range st.Brokers {
		if b.Live {
			live++
		}
	}
	fmt.Fprintf(w, "\nbrokers: %d live\n", live)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(st.Brokers) > 0 {
		fmt.Fprintln(tw, "ID\tADDRESS\tRACK\tREPLICAS\tLEADERS")
	}
	for _, b := range st.Brokers {
		addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		if !b.Live {
			addr = "DOWN (no session)"
		}
		if b.Draining {
			addr += " (draining)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\n", b.ID, addr, orDash(b.Rack), b.Replicas, b.Leaders)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\n%s in %s; %d offline, %d under-replicated\n",
		countOf(st.Partitions, "partition"), countOf(st.Topics, "topic"), len(st.OfflinePartitions), len(st.UnderReplicatedPartitions))
	for _, group := range []struct {
		title string
		parts []appliance.PartitionStatus
	}{{"offline partitions (no leader)", st.OfflinePartitions}, {"under-replicated partitions (ISR smaller than replicas)", st.UnderReplicatedPartitions}} {
		if len(group.parts) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s:\n", group.title)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  TOPIC\tPARTITION\tLEADER\tREPLICAS\tISR")
		for _, p := range group.parts {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\n", p.Topic, p.Partition, p.Leader, ids(p.Replicas), ids(p.ISR))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ids(list []int32) string {
	parts := make([]string, len(list))
	for i, id := range list {
		parts[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(parts, ",") + "]"
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
	path := "/v1/cluster/remove-node?id=" + strconv.FormatInt(id, 10)
	if c.Bool("drain") {
		path += "&drain=true"
	}
	deadline := time.Now().Add(c.Duration("drain-timeout"))
	last := -1
	for {
		var res appliance.RemoveResult
		status, err := a.do(c.Context, http.MethodPost, path, &res)
		if err != nil {
			return fmt.Errorf("remove node %d: %w", id, err)
		}
		if status == http.StatusOK {
			fmt.Fprintln(c.App.Writer, res.Message)
			return nil
		}
		// 202: still draining.
		if res.ReplicasLeft != last {
			fmt.Fprintln(c.App.Writer, res.Message)
			last = res.ReplicasLeft
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d is still draining after %v (%s left); the replicas keep moving: run the command again to wait and then remove the node",
				id, c.Duration("drain-timeout"), countOf(res.ReplicasLeft, "partition replica"))
		}
		select {
		case <-time.After(drainPollInterval):
		case <-c.Context.Done():
			return c.Context.Err()
		}
	}
}

// drainPollInterval is how often remove-node --drain asks how far the draining got.
const drainPollInterval = 500 * time.Millisecond
