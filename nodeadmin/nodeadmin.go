// Package nodeadmin is the client of a node's admin HTTP API (appliance/admin.go),
// which is not part of the Kafka protocol: `skiff cluster status`, `remove-node`
// and `join-token` are its methods, and the share-partition figures of
// `skiff group describe --http`. Like package client for the Kafka commands,
// it holds the requests, their rules and the errors worded for people; package
// main only turns flags into its Config.
package nodeadmin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"skiff/appliance"
	"skiff/client"
)

// Config is how to reach one node's admin API.
type Config struct {
	Base    string        // http://host:port or https://host:port
	Token   string        // bearer token; empty: none
	Timeout time.Duration // bounds each request
	TLS     *tls.Config   // for https; nil: the system's roots
}

// Client talks to one node's admin API.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New builds a client for cfg. It does not connect.
func New(cfg Config) *Client {
	return &Client{base: cfg.Base, token: cfg.Token,
		http: &http.Client{Timeout: cfg.Timeout, Transport: &http.Transport{TLSClientConfig: cfg.TLS, Proxy: http.ProxyFromEnvironment}}}
}

// ParseAddress reads a node's HTTP address (--http): HOST[:PORT], with
// defaultPort where none is given, after an optional http:// or https://
// (then scheme is "https").
func ParseAddress(s, defaultPort string) (scheme, hostPort string, err error) {
	addr := strings.TrimSpace(s)
	scheme = "http"
	if rest, ok := strings.CutPrefix(addr, "https://"); ok {
		scheme, addr = "https", rest
	}
	addr = strings.TrimSuffix(strings.TrimPrefix(addr, "http://"), "/")
	if addr == "" {
		return "", "", errors.New("--http is empty: give a node's HTTP address, HOST:PORT")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(strings.Trim(addr, "[]"), defaultPort)
	}
	host, port, err := net.SplitHostPort(addr)
	if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p <= 0 || p > 65535 {
		return "", "", fmt.Errorf("--http %q: want HOST:PORT, a node's HTTP address", s)
	}
	return scheme, addr, nil
}

// Status is the cluster's state as the node sees it.
func (a *Client) Status(ctx context.Context) (appliance.ClusterStatus, error) {
	var st appliance.ClusterStatus
	_, err := a.do(ctx, http.MethodGet, "/v1/cluster", &st)
	return st, err
}

// SharePartitions returns the share-partitions of share group group, with their
// in-flight and acquired counts, SPSO and SPEO, as their leaders report them.
func (a *Client) SharePartitions(ctx context.Context, group string) (appliance.SharePartitionsAnswer, error) {
	var res appliance.SharePartitionsAnswer
	if _, err := a.do(ctx, http.MethodGet, "/v1/share-partitions?group="+url.QueryEscape(group), &res); err != nil {
		return res, fmt.Errorf("share-partitions of group %q: %w", group, err)
	}
	return res, nil
}

// CheckQuorum is an error saying what to do when st reports that the cluster
// metadata (etcd) has no quorum.
func CheckQuorum(st appliance.ClusterStatus) error {
	if st.Quorum {
		return nil
	}
	return fmt.Errorf("the cluster metadata (etcd) has no quorum at node %d (%s): the state shown is that node's last view and may be stale, and no topic or node can be changed. "+
		"More than half of the etcd members must run: start the stopped nodes (docs/operations.md: losing them for good)", st.NodeID, st.QuorumError)
}

// JoinToken asks for a token that admits one node until it expires after ttl.
func (a *Client) JoinToken(ctx context.Context, ttl time.Duration) (appliance.JoinTokenAnswer, error) {
	var res appliance.JoinTokenAnswer
	if _, err := a.do(ctx, http.MethodPost, "/v1/cluster/join-token?ttl="+url.QueryEscape(ttl.String()), &res); err != nil {
		return res, fmt.Errorf("join token: %w", err)
	}
	return res, nil
}

// DrainPollInterval is how often RemoveNode asks how far the draining got.
const DrainPollInterval = 500 * time.Millisecond

// RemoveNode removes node id from the cluster. With drain the node's partition
// replicas move to other nodes first: RemoveNode writes the node's progress
// messages to w as they change and gives up after drainTimeout (the draining
// goes on). Without drain the node refuses while it holds replicas. Cancelling
// ctx stops waiting.
func (a *Client) RemoveNode(ctx context.Context, w io.Writer, id int32, drain bool, drainTimeout time.Duration) error {
	path := "/v1/cluster/remove-node?id=" + strconv.Itoa(int(id))
	if drain {
		path += "&drain=true"
	}
	deadline := time.Now().Add(drainTimeout)
	last := -1
	for {
		var res appliance.RemoveResult
		status, err := a.do(ctx, http.MethodPost, path, &res)
		if err != nil {
			return fmt.Errorf("remove node %d: %w", id, err)
		}
		if status == http.StatusOK {
			fmt.Fprintln(w, res.Message)
			return nil
		}
		// 202: still draining.
		if res.ReplicasLeft != last {
			fmt.Fprintln(w, res.Message)
			last = res.ReplicasLeft
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d is still draining after %v (%s left); the replicas keep moving: run the command again to wait and then remove the node",
				id, drainTimeout, client.CountOf(res.ReplicasLeft, "partition replica"))
		}
		select {
		case <-time.After(DrainPollInterval):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
