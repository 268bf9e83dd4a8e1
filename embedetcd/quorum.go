package embedetcd

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// StatusTimeout bounds the status call to each member in Statuses and CheckRemove.
const StatusTimeout = time.Second

// MemberHealth is one member's answer to a status call.
type MemberHealth struct {
	Member *etcdserverpb.Member
	// Healthy: the member answered within StatusTimeout, knows a leader and
	// reports no error. Error says why not.
	Healthy bool
	Error   string
	// Leader: an answering member named this one its raft leader.
	Leader bool
}

// Statuses asks each of members for its status, in parallel, each call bounded by
// StatusTimeout (or ctx). A member without client URLs (added by a join that has
// not started it) is not asked. The answers are in the order of members.
func Statuses(ctx context.Context, cli *clientv3.Client, members []*etcdserverpb.Member) []MemberHealth {
	out := make([]MemberHealth, len(members))
	var leaders sync.Map // member id -> true, as reported by any member
	var wg sync.WaitGroup
	for i, m := range members {
		out[i].Member = m
		if len(m.ClientURLs) == 0 {
			out[i].Error = "not started yet (added by a join that has not finished)"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, StatusTimeout)
			defer cancel()
			resp, err := cli.Status(sctx, m.ClientURLs[0])
			switch {
			case err != nil:
				out[i].Error = fmt.Sprintf("no answer within %v: %v", StatusTimeout, err)
			case len(resp.Errors) > 0:
				out[i].Error = strings.Join(resp.Errors, "; ")
			case resp.Leader == 0:
				out[i].Error = "knows no leader (cut off from a quorum)"
			default:
				out[i].Healthy = true
			}
			if err == nil && resp.Leader != 0 {
				leaders.Store(resp.Leader, true)
			}
		}()
	}
	wg.Wait()
	for i, m := range members {
		if _, ok := leaders.Load(m.ID); ok {
			out[i].Leader = true
		}
	}
	return out
}

// CheckRemove refuses to remove member target from members (the cluster's member
// list) when etcd could lose its quorum: it asks the voting members other than
// target for their status and applies QuorumWithout. A learner does not vote, so
// removing one is never refused.
func CheckRemove(ctx context.Context, cli *clientv3.Client, members []*etcdserverpb.Member, target *etcdserverpb.Member) error {
	if target.IsLearner {
		return nil
	}
	var others []*etcdserverpb.Member
	for _, m := range members {
		if !m.IsLearner && m.ID != target.ID {
			others = append(others, m)
		}
	}
	answering := 0
	for _, h := range Statuses(ctx, cli, others) {
		if h.Healthy {
			answering++
		}
	}
	return QuorumWithout(target.Name, len(others), answering)
}

// QuorumWithout is the rule for removing the voting member named name, which
// leaves voters voting members of which answering answer a status call: refused
// when it is the last voter, or when those answering would not make a quorum
// (a majority) of the smaller cluster.
func QuorumWithout(name string, voters, answering int) error {
	if voters == 0 {
		return fmt.Errorf("etcd member %s is the last voting member: removing it would leave no cluster", name)
	}
	if need := voters/2 + 1; answering < need {
		return fmt.Errorf("removing etcd member %s would leave %d voting members of which %d answer, fewer than the %d a quorum needs; start the stopped nodes again first (or remove those that are gone for good first)",
			name, voters, answering, need)
	}
	return nil
}
