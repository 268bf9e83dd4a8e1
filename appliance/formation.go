package appliance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"skiff/cluster"
	"skiff/embedetcd"
)

// form starts this node's etcd member in one of three ways and returns the node's
// identity (written to node.json on first start):
//   - restart: <data>/etcd already holds a member; it starts as it was, whatever
//     --bootstrap or --join say (a join to another cluster is refused);
//   - join: --join names running members; this node gets a new node id, is added
//     with etcd MemberAdd and starts its member with the returned initial cluster;
//   - bootstrap (--bootstrap, or neither flag): a new single-member cluster.
func (n *Node) form(ctx context.Context, nf nodeFile, known bool) (_ nodeFile, err error) {
	cfg := n.cfg
	var promote func() error // set by a join: the started learner becomes a voter
	ecfg := embedetcd.Config{
		Name:                cfg.NodeName,
		Dir:                 filepath.Join(cfg.DataDir, "etcd"),
		ClientAddr:          cfg.EtcdClient,
		PeerAddr:            cfg.EtcdPeer,
		AdvertiseClientAddr: cfg.EtcdAdvertiseClient,
		AdvertisePeerAddr:   cfg.EtcdAdvertisePeer,
		TLS:                 n.etcdTLS(),
		Logger:              slog.New(quietHandler{n.logger.Handler()}),
	}
	_, statErr := os.Stat(filepath.Join(ecfg.Dir, "member"))
	restart := statErr == nil
	switch {
	case restart:
		if known {
			ecfg.Name = nf.MemberName
			if len(cfg.Join) > 0 && cfg.JoinToken == "" { // a token's CA was checked in secureMaterial
				if err := n.checkJoinTarget(ctx, nf.ClusterID); err != nil {
					return nf, err
				}
			}
		}
		if cfg.Bootstrap || len(cfg.Join) > 0 {
			n.logger.Info("data directory already belongs to a cluster: --bootstrap and --join are ignored", "data_dir", cfg.DataDir)
		}
		if cfg.ForceNewCluster {
			ecfg.ForceNewCluster = true
			n.logger.Warn("force-new-cluster: this node restarts as the only member of its cluster, keeping its data; every other etcd member is dropped. " +
				"Remove force-new-cluster from the settings before the next restart, or it drops the nodes that join from now on")
			n.status("restarting etcd member as a new one-member cluster (force-new-cluster)")
		} else {
			n.status("restarting etcd member")
		}
	case cfg.ForceNewCluster:
		return nf, fmt.Errorf("force-new-cluster restarts a node on the data of a cluster it belonged to, but %s holds no etcd member; start without it", ecfg.Dir)
	case known:
		return nf, fmt.Errorf("data directory %s has node.json but no etcd member in %s: it is damaged; restore it or start with an empty data directory", cfg.DataDir, ecfg.Dir)
	case len(cfg.Join) > 0:
		var err error
		if nf, ecfg, promote, err = n.join(ctx, ecfg); err != nil {
			return nf, err
		}
	default:
		if ecfg.Name == "" {
			ecfg.Name = embedetcd.MemberName(1) // a new cluster's first node gets id 1
		}
		n.status("bootstrapping a new cluster")
	}

	if ecfg, err = ecfg.Resolve(); err != nil {
		return nf, err
	}
	n.member, err = embedetcd.Start(ctx, ecfg)
	if errors.Is(err, embedetcd.ErrRemoved) {
		return nf, fmt.Errorf("this node was removed from the cluster (skiff cluster remove-node, or force-new-cluster on another node): %w; "+
			"its data directory %s cannot serve again; to add this machine back, delete the data directory and start it with --join", err, cfg.DataDir)
	}
	if err != nil {
		return nf, fmt.Errorf("start embedded etcd: %w", err)
	}
	if promote != nil {
		// A learner serves no client requests: promote it before using its client.
		if err := promote(); err != nil {
			return nf, err
		}
		if err := n.member.WaitVoting(ctx); err != nil {
			return nf, err
		}
	}
	go func() {
		// Member.Err is never closed, so also end with the node.
		select {
		case err := <-n.member.Err():
			if errors.Is(err, embedetcd.ErrRemoved) {
				err = fmt.Errorf("this node was removed from the cluster (skiff cluster remove-node), so its etcd member stopped: %w; "+
					"its data directory %s cannot serve again; to add this machine back, delete the data directory and start it with --join", err, cfg.DataDir)
				n.status("removed from the cluster: stopping")
				n.fail(err)
				return
			}
			n.fail(fmt.Errorf("embedded etcd failed: %w", err))
		case <-n.stop:
		}
	}()
	n.store = cluster.New(n.member.Client(), n.logger)
	clusterID, err := n.store.EnsureCluster(ctx)
	if err != nil {
		return nf, fmt.Errorf("cluster identity: %w", err)
	}
	if nf.ClusterID != "" && nf.ClusterID != clusterID {
		return nf, fmt.Errorf("data directory %s belongs to cluster %s, but its etcd member reports cluster %s; refusing to mix them", cfg.DataDir, nf.ClusterID, clusterID)
	}
	if !known {
		if nf.NodeID == 0 { // bootstrap, or a first start interrupted before node.json
			if nf.NodeID, err = n.store.AllocateNodeID(ctx); err != nil {
				return nf, fmt.Errorf("allocate node id: %w", err)
			}
		}
		nf.ClusterID, nf.MemberName = clusterID, ecfg.Name
		nf.DataDirID = cluster.FormatUUID(cluster.NewUUID())
		if err := writeNodeFile(n.fs, cfg.DataDir, nf); err != nil {
			return nf, fmt.Errorf("write node.json: %w", err)
		}
		n.logger.Info("node identity created", "node_id", nf.NodeID, "cluster_id", nf.ClusterID, "member", nf.MemberName)
	}
	// Link the node id to its etcd member, for skiff cluster status and remove-node.
	if err := n.store.RecordNode(ctx, cluster.NodeMember{NodeID: nf.NodeID, MemberName: n.member.Name(), MemberID: n.member.ID()}); err != nil {
		return nf, err
	}
	return nf, nil
}

// join adds this node to the cluster that cfg.Join names, as an etcd learner, and
// returns its identity, the etcd config to start its member with, and promote, which
// makes the started member a voting one (and releases the join client).
func (n *Node) join(ctx context.Context, ecfg embedetcd.Config) (_ nodeFile, _ embedetcd.Config, promote func() error, err error) {
	cfg := n.cfg
	endpoints := cfg.Join
	if len(n.joinEndpoints) > 0 { // from the join handshake of a secure cluster
		endpoints = n.joinEndpoints
	}
	n.status("joining the cluster at " + strings.Join(endpoints, ","))
	jctx, cancel := context.WithTimeout(ctx, cfg.JoinTimeout)
	cli, err := embedetcd.Dial(endpoints, n.etcdTLS(), n.logger)
	if err != nil {
		cancel()
		return nodeFile{}, ecfg, nil, fmt.Errorf("join %s: %w", strings.Join(cfg.Join, ","), err)
	}
	defer func() {
		if err != nil {
			cli.Close()
			cancel()
		}
	}()
	remote := cluster.New(cli, n.logger)
	clusterID, err := remote.ClusterID(jctx)
	if err != nil {
		return nodeFile{}, ecfg, nil, n.joinError(err)
	}
	id, err := remote.AllocateNodeID(jctx)
	if err != nil {
		return nodeFile{}, ecfg, nil, n.joinError(err)
	}
	if ecfg.Name == "" {
		ecfg.Name = embedetcd.MemberName(id)
	}
	if ecfg, err = ecfg.Resolve(); err != nil {
		return nodeFile{}, ecfg, nil, err
	}
	memberID, initial, err := embedetcd.AddMember(jctx, cli, n.etcdTLS(), ecfg.Name, ecfg.PeerURL(), n.logger)
	if err != nil {
		return nodeFile{}, ecfg, nil, n.joinError(err)
	}
	ecfg.InitialCluster, ecfg.ClusterState = initial, embedetcd.ClusterStateExisting
	n.logger.Info("added to the cluster as a learner", "cluster_id", clusterID, "node_id", id, "member", ecfg.Name, "initial_cluster", initial)
	promote = func() error {
		defer cancel()
		defer cli.Close()
		n.status("catching up with the cluster's metadata")
		if err := embedetcd.Promote(jctx, cli, memberID); err != nil {
			return n.joinError(err)
		}
		n.logger.Info("promoted to a voting etcd member", "member", ecfg.Name)
		return nil
	}
	return nodeFile{NodeID: id, ClusterID: clusterID}, ecfg, promote, nil
}

func (n *Node) joinError(err error) error {
	target := strings.Join(n.cfg.Join, ",")
	if len(n.joinEndpoints) > 0 {
		target = strings.Join(n.joinEndpoints, ",")
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("join: the etcd members the join handshake named (%s) did not answer within %v over TLS: can this machine reach their etcd client ports?", target, n.cfg.JoinTimeout)
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("join: no running Skiff node answered at %s within %v; --join takes the etcd client address (HOST:PORT, default port %s) of a running node", target, n.cfg.JoinTimeout, strings.TrimPrefix(embedetcd.DefaultClientAddr, ":"))
	case errors.Is(err, cluster.ErrNoCluster):
		return fmt.Errorf("join: the etcd cluster at %s holds no Skiff cluster", target)
	}
	return fmt.Errorf("join %s: %w", target, err)
}

// checkJoinTarget refuses a restart whose --join names another cluster than the one
// this data directory belongs to. An unreachable join target is not an error: the
// node's own member knows its cluster.
func (n *Node) checkJoinTarget(ctx context.Context, clusterID string) error {
	jctx, cancel := context.WithTimeout(ctx, min(n.cfg.JoinTimeout, 5*time.Second))
	defer cancel()
	cli, err := embedetcd.Dial(n.cfg.Join, n.etcdTLS(), n.logger)
	if err != nil {
		return nil
	}
	defer cli.Close()
	other, err := cluster.New(cli, n.logger).ClusterID(jctx)
	if err != nil {
		return nil
	}
	if other != clusterID {
		return fmt.Errorf("data directory %s belongs to cluster %s, but --join %s names cluster %s; use an empty data directory to join that cluster",
			n.cfg.DataDir, clusterID, strings.Join(n.cfg.Join, ","), other)
	}
	return nil
}
