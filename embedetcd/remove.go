package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrMemberNotFound is returned by RemoveMember when the cluster has no member with
// that id (already removed).
var ErrMemberNotFound = errors.New("embedetcd: no such member")

// RemoveMember removes member id from the cluster that cli talks to (etcd
// MemberRemove). The removed member stops (its Err reports ErrRemoved).
//
// etcd refuses a removal that would leave fewer started members connected than a
// quorum, and any removal until the members have been connected for a few seconds
// (its strict reconfiguration check; it answers "unhealthy cluster"). RemoveMember
// retries that refusal until ctx ends, then returns it wrapped with ctx's error, so a
// removal right after a member started waits a moment instead of failing. A request
// that gets no answer within a few seconds (raft drops a membership change proposed
// while another is pending), or that etcd itself reports as timed out, is made
// again; if an earlier attempt was applied after all, the retry returns
// ErrMemberNotFound.
func RemoveMember(ctx context.Context, cli *clientv3.Client, id uint64) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, membershipRequestTimeout)
		_, err := cli.MemberRemove(actx, id)
		cancel()
		switch {
		case err == nil:
			return nil
		case unanswered(ctx, err):
			// Dropped by raft while another membership change was pending: ask again
			// (if it was applied after all, the member is not found).
		case errors.Is(err, rpctypes.ErrGRPCMemberNotFound) || errors.Is(err, rpctypes.ErrMemberNotFound):
			return fmt.Errorf("%w: %x", ErrMemberNotFound, id)
		case errors.Is(err, rpctypes.ErrGRPCUnhealthy) || errors.Is(err, rpctypes.ErrUnhealthy):
		default:
			return fmt.Errorf("embedetcd: remove member %x: %w", id, err)
		}
		select {
		case <-time.After(time.Duration(min(attempt+1, 5)) * 100 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("embedetcd: remove member %x: %w (etcd: %v)", id, ctx.Err(), err)
		}
	}
}
