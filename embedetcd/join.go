package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
// another learner is still catching up (etcd admits one learner at a time), or gives
// no answer (see unanswered), until ctx ends: two nodes joining at once are admitted
// one after the other. A member with the same peer URL that never started (an
// interrupted earlier join) is reused. It returns once every running member knows
// the new one (waitKnown, which dials each member with tls, as Dial does), so that
// the new member can start at once.
func AddMember(ctx context.Context, cli *clientv3.Client, tls *tlsconf.Loader, name, peerURL string, logger *slog.Logger) (uint64, string, error) {
	id, members, err := addLearner(ctx, cli, peerURL, logger)
	if err != nil {
		return 0, "", err
	}
	if err := waitKnown(ctx, members, id, tls, logger); err != nil {
		return 0, "", err
	}
	return id, initialCluster(members, id, name), nil
}

// addLearner is AddMember's request: it returns the new member's id and the members
// of the cluster, the new one among them.
func addLearner(ctx context.Context, cli *clientv3.Client, peerURL string, logger *slog.Logger) (uint64, []*etcdserverpb.Member, error) {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, membershipRequestTimeout)
		resp, err := cli.MemberAddAsLearner(actx, []string{peerURL})
		cancel()
		if err == nil {
			return resp.Member.ID, resp.Members, nil
		}
		switch {
		case unanswered(ctx, err):
			// raft drops a membership change proposed while the previous one (say,
			// another node's promotion) is not applied yet: ask again. If it was
			// applied after all, the peer URL exists now and the case below picks
			// the member up.
			logger.Info("adding the member got no answer (another membership change was in progress); retrying", "attempt", attempt+1, "err", err)
		case errors.Is(err, rpctypes.ErrGRPCPeerURLExist) || errors.Is(err, rpctypes.ErrPeerURLExist):
			list, lerr := cli.MemberList(ctx)
			if lerr != nil {
				return 0, nil, fmt.Errorf("embedetcd: list members: %w", lerr)
			}
			for _, m := range list.Members {
				for _, u := range m.PeerURLs {
					if u != peerURL {
						continue
					}
					if m.Name != "" {
						return 0, nil, fmt.Errorf("embedetcd: the cluster already has a started member %q at %s; remove it first (skiff cluster remove-node) or give this node another peer address", m.Name, peerURL)
					}
					logger.Info("reusing the member added by an interrupted join", "peer_url", peerURL, "member_id", fmt.Sprintf("%x", m.ID))
					return m.ID, list.Members, nil
				}
			}
			return 0, nil, fmt.Errorf("embedetcd: add member %s: %w", peerURL, err)
		case errors.Is(err, rpctypes.ErrGRPCUnhealthy) || errors.Is(err, rpctypes.ErrUnhealthy),
			errors.Is(err, rpctypes.ErrGRPCTooManyLearners) || errors.Is(err, rpctypes.ErrTooManyLearners):
			// etcd admits one learner at a time: another node is joining.
			logger.Info("cluster not ready to add a member (another one is joining); retrying", "attempt", attempt+1, "reason", err)
		default:
			return 0, nil, fmt.Errorf("embedetcd: add member %s: %w", peerURL, err)
		}
		select {
		case <-time.After(time.Duration(min(attempt+1, 10)) * 200 * time.Millisecond):
		case <-ctx.Done():
			return 0, nil, fmt.Errorf("embedetcd: add member %s: %w (last refusal: %v)", peerURL, ctx.Err(), err)
		}
	}
}

// Promote makes the learner id a voting member once it has caught up with the
// leader, retrying while etcd says it is not in sync yet, or gives no answer (see
// unanswered), until ctx ends. A member that is already voting is not an error (an
// interrupted join that got this far, or a retried promotion that was applied after
// all).
func Promote(ctx context.Context, cli *clientv3.Client, id uint64) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, membershipRequestTimeout)
		_, err := cli.MemberPromote(actx, id)
		cancel()
		switch {
		case err == nil:
			return nil
		case unanswered(ctx, err):
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

// etcdTimeouts are the answers of an etcd member that gave up waiting for a
// proposal to be applied (the request's deadline passed on its side).
var etcdTimeouts = []error{rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost}

// unanswered reports whether a membership request failed for want of an answer
// within membershipRequestTimeout while ctx still runs, so that it is asked again:
// raft drops a membership change proposed while another one is pending (or while
// there is no leader) without a word. Whichever deadline is seen first ends the
// request: the client's own (DeadlineExceeded) or, a moment later on the member's
// side, the same deadline carried by the request (etcd's "request timed out"); on a
// busy machine either can win.
func unanswered(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || slices.ContainsFunc(etcdTimeouts, func(t error) bool { return errors.Is(err, t) })
}

// knownTimeout bounds one member's answer in waitKnown: a member that does not
// answer in time is not waited for (a member that is down cannot answer the new
// member either).
const knownTimeout = 2 * time.Second

// waitKnown waits until every started member of members (one with client URLs)
// lists member id in its own view of the membership, or does not answer, or ctx
// ends. A new member asks its peers for the membership as it starts, takes the first
// answer, and refuses to start ("member count is unequal") if that peer has not
// applied the addition yet: on a busy machine a follower lags the member that
// answered MemberAdd long enough for a new member started at once to ask it.
func waitKnown(ctx context.Context, members []*etcdserverpb.Member, id uint64, tls *tlsconf.Loader, logger *slog.Logger) error {
	for _, m := range members {
		if m.ID == id || len(m.ClientURLs) == 0 {
			continue
		}
		if err := waitMemberKnows(ctx, m, id, tls, logger); err != nil {
			return err
		}
	}
	return nil
}

func waitMemberKnows(ctx context.Context, m *etcdserverpb.Member, id uint64, tls *tlsconf.Loader, logger *slog.Logger) error {
	cli, err := Dial(m.ClientURLs, tls, logger)
	if err != nil {
		return fmt.Errorf("embedetcd: dial member %s: %w", m.Name, err)
	}
	defer cli.Close()
	for {
		rctx, cancel := context.WithTimeout(ctx, knownTimeout)
		resp, err := cli.MemberList(rctx, clientv3.WithSerializable()) // its own view
		cancel()
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("embedetcd: wait for member %s to know the new member %x: %w", m.Name, id, ctx.Err())
		case err != nil:
			logger.Info("not waiting for a member that does not answer to know the new member", "member", m.Name, "err", err)
			return nil
		case slices.ContainsFunc(resp.Members, func(x *etcdserverpb.Member) bool { return x.ID == id }):
			return nil
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

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
