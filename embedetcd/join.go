package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/internal/tlsconf"
)

// Resolve returns cfg with every default applied and its addresses resolved (port 0
// replaced by a free port), as Start would use it: a node that joins needs its
// advertised peer address before its member starts.
func (cfg Config) Resolve() (Config, error) { return cfg.withDefaults() }

// Dial returns a client of a running etcd cluster at endpoints (host:port of member
// client listeners, or URLs), over TLS with tls's certificate when tls is set. The
// caller closes it.
func Dial(endpoints []string, tls *tlsconf.Loader, logger *slog.Logger) (*clientv3.Client, error) {
	urls := make([]string, len(endpoints))
	for i, e := range endpoints {
		if !strings.Contains(e, "://") {
			e = schemeOf(tls) + "://" + e
		}
		urls[i] = e
	}
	return newClient(urls, tls, 5*time.Second, newZapLogger(logger.With("component", "etcd-client").Handler(), new(atomic.Bool)))
}

// AddMember adds a member named name with advertised peer URL peerURL to the cluster
// that cli talks to, as a learner (etcd MemberAddAsLearner), and returns its member id
// and the initial cluster string with which the new member must start (ClusterState
// existing). A learner does not count towards quorum, so the running members keep
// serving while it starts and catches up; Promote then makes it a voting member.
//
// It retries while the cluster refuses because another member was just added and has
// not started yet (etcd's strict reconfiguration check keeps quorum safe), or because
// another learner is still catching up (etcd admits one learner at a time), until ctx
// ends: two nodes joining at once are admitted one after the other. A member with
// the same peer URL that never started (an interrupted earlier join) is reused.
func AddMember(ctx context.Context, cli *clientv3.Client, name, peerURL string, logger *slog.Logger) (uint64, string, error) {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, membershipRequestTimeout)
		resp, err := cli.MemberAddAsLearner(actx, []string{peerURL})
		cancel()
		if err == nil {
			return resp.Member.ID, initialCluster(resp.Members, resp.Member.ID, name), nil
		}
		switch {
		case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			// raft drops a membership change proposed while the previous one (say,
			// another node's promotion) is not applied yet, and etcd then never
			// answers: ask again. If it was applied after all, the peer URL exists
			// now and the case below picks the member up.
			logger.Info("adding the member got no answer (another membership change was in progress); retrying", "attempt", attempt+1)
		case errors.Is(err, rpctypes.ErrGRPCPeerURLExist) || errors.Is(err, rpctypes.ErrPeerURLExist):
			list, lerr := cli.MemberList(ctx)
			if lerr != nil {
				return 0, "", fmt.Errorf("embedetcd: list members: %w", lerr)
			}
			for _, m := range list.Members {
				for _, u := range m.PeerURLs {
					if u != peerURL {
						continue
					}
					if m.Name != "" {
						return 0, "", fmt.Errorf("embedetcd: the cluster already has a started member %q at %s; remove it first (skiff cluster remove-node) or give this node another peer address", m.Name, peerURL)
					}
					logger.Info("reusing the member added by an interrupted join", "peer_url", peerURL, "member_id", fmt.Sprintf("%x", m.ID))
					return m.ID, initialCluster(list.Members, m.ID, name), nil
				}
			}
			return 0, "", fmt.Errorf("embedetcd: add member %s: %w", peerURL, err)
		case errors.Is(err, rpctypes.ErrGRPCUnhealthy) || errors.Is(err, rpctypes.ErrUnhealthy),
			errors.Is(err, rpctypes.ErrGRPCTooManyLearners) || errors.Is(err, rpctypes.ErrTooManyLearners):
			// etcd admits one learner at a time: another node is joining.
			logger.Info("cluster not ready to add a member (another one is joining); retrying", "attempt", attempt+1, "reason", err)
		default:
			return 0, "", fmt.Errorf("embedetcd: add member %s: %w", peerURL, err)
		}
		select {
		case <-time.After(time.Duration(min(attempt+1, 10)) * 200 * time.Millisecond):
		case <-ctx.Done():
			return 0, "", fmt.Errorf("embedetcd: add member %s: %w (last refusal: %v)", peerURL, ctx.Err(), err)
		}
	}
}

// Promote makes the learner id a voting member once it has caught up with the
// leader, retrying while etcd says it is not in sync yet, or gives no answer (raft
// drops a membership change proposed while another is pending), until ctx ends. A
// member that is already voting is not an error (an interrupted join that got this
// far, or a retried promotion that was applied after all).
func Promote(ctx context.Context, cli *clientv3.Client, id uint64) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, membershipRequestTimeout)
		_, err := cli.MemberPromote(actx, id)
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			// Dropped by raft while another membership change was pending: ask again.
		case errors.Is(err, rpctypes.ErrGRPCMemberNotLearner) || errors.Is(err, rpctypes.ErrMemberNotLearner):
			return nil
		case errors.Is(err, rpctypes.ErrGRPCLearnerNotReady) || errors.Is(err, rpctypes.ErrMemberLearnerNotReady):
		default:
			return fmt.Errorf("embedetcd: promote member %x: %w", id, err)
		}
		select {
		case <-time.After(time.Duration(min(attempt+1, 10)) * 100 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("embedetcd: promote member %x: %w (not caught up: %v)", id, ctx.Err(), err)
		}
	}
}

// membershipRequestTimeout bounds one membership request (add, promote, remove):
// etcd does not answer one that raft dropped, so it is asked again.
const membershipRequestTimeout = 5 * time.Second

// initialCluster formats etcd's initial cluster from a member list, naming the new
// member self (it has no name until it starts). Members added but not started yet
// keep an empty name, as etcdctl prints them.
func initialCluster(members []*etcdserverpb.Member, self uint64, name string) string {
	var parts []string
	for _, m := range members {
		n := m.Name
		if m.ID == self {
			n = name
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, n+"="+u)
		}
	}
	return strings.Join(parts, ",")
}

// WaitVoting waits until this member knows it is a voting member (after Promote, the
// local member applies the membership change a moment later; until then its client
// refuses requests as a learner's), or ctx ends.
func (m *Member) WaitVoting(ctx context.Context) error {
	for m.etcd.Server.IsLearner() {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("embedetcd: still a learner: %w", ctx.Err())
		}
	}
	return nil
}
