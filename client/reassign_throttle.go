package client

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The replication throttle of a reassignment, as kafka-reassign-partitions.sh
// sets and clears it: the rates on every broker, and in each moved topic's
// configs the replicas the moves read from (leader side) and write to (follower
// side).

const (
	leaderRate          = "leader.replication.throttled.rate"
	followerRate        = "follower.replication.throttled.rate"
	leaderReplicasCfg   = "leader.replication.throttled.replicas"
	followerReplicasCfg = "follower.replication.throttled.replicas"
)

// ThrottleReassignment sets the throttle of plan at rate bytes per second.
func (k *Client) ThrottleReassignment(ctx context.Context, plan ReassignmentPlan, rate int64) error {
	topics := planTopics(plan)
	md, err := k.admin.Metadata(ctx, topics...)
	if err != nil {
		return fmt.Errorf("throttle the reassignment: %w", k.Explain(err))
	}
	r := strconv.FormatInt(rate, 10)
	if err := alterErr(k.admin.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: leaderRate, Value: &r}, {Name: followerRate, Value: &r}})); err != nil {
		return fmt.Errorf("set the replication throttle rates: %w", k.Explain(err))
	}
	for _, topic := range topics {
		var leaders, followers []string
		for _, p := range plan.Partitions {
			if p.Topic != topic {
				continue
			}
			pd, ok := md.Topics[topic].Partitions[p.Partition]
			if !ok {
				return fmt.Errorf("throttle the reassignment: topic %q has no partition %d", topic, p.Partition)
			}
			for _, b := range pd.Replicas {
				leaders = append(leaders, fmt.Sprintf("%d:%d", p.Partition, b))
			}
			for _, b := range p.Replicas {
				if !slices.Contains(pd.Replicas, b) {
					followers = append(followers, fmt.Sprintf("%d:%d", p.Partition, b))
				}
			}
		}
		l, f := strings.Join(leaders, ","), strings.Join(followers, ",")
		if err := alterErr(k.admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: leaderReplicasCfg, Value: &l}, {Name: followerReplicasCfg, Value: &f}}, topic)); err != nil {
			return fmt.Errorf("set the throttled replicas of topic %q: %w", topic, k.Explain(err))
		}
	}
	return nil
}

// VerifyReassignment prints whether each partition of plan has its target
// replicas, and once all have, clears the throttle (the rates and the moved
// topics' throttled replicas). It reports whether all are done.
func (k *Client) VerifyReassignment(ctx context.Context, w io.Writer, plan ReassignmentPlan) (bool, error) {
	topics := planTopics(plan)
	md, err := k.admin.Metadata(ctx, topics...)
	if err != nil {
		return false, fmt.Errorf("verify the reassignment: %w", k.Explain(err))
	}
	done := true
	for _, p := range plan.Partitions {
		pd, ok := md.Topics[p.Topic].Partitions[p.Partition]
		switch {
		case !ok:
			return false, fmt.Errorf("verify the reassignment: topic %q has no partition %d", p.Topic, p.Partition)
		case slices.Equal(pd.Replicas, p.Replicas) && len(pd.ISR) == len(p.Replicas):
			fmt.Fprintf(w, "%s/%d: done (replicas %s)\n", p.Topic, p.Partition, joinIDs(pd.Replicas))
		default:
			done = false
			fmt.Fprintf(w, "%s/%d: in progress (replicas %s, in sync %s, target %s)\n", p.Topic, p.Partition, joinIDs(pd.Replicas), joinIDs(pd.ISR), joinIDs(p.Replicas))
		}
	}
	if !done {
		return false, nil
	}
	return true, k.clearThrottle(ctx, w, topics)
}

// clearThrottle removes the replication throttle rates of every broker and the
// throttled replicas of topics, and says so.
func (k *Client) clearThrottle(ctx context.Context, w io.Writer, topics []string) error {
	del := func(names ...string) []kadm.AlterConfig {
		var out []kadm.AlterConfig
		for _, n := range names {
			out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: n})
		}
		return out
	}
	if err := alterErr(k.admin.AlterBrokerConfigs(ctx, del(leaderRate, followerRate))); err != nil {
		return fmt.Errorf("clear the replication throttle rates: %w", k.Explain(err))
	}
	if err := alterErr(k.admin.AlterTopicConfigs(ctx, del(leaderReplicasCfg, followerReplicasCfg), topics...)); err != nil {
		return fmt.Errorf("clear the throttled replicas: %w", k.Explain(err))
	}
	fmt.Fprintln(w, "throttle cleared")
	return nil
}

func planTopics(plan ReassignmentPlan) []string {
	var topics []string
	for _, p := range plan.Partitions {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	return topics
}

// alterErr is the first error of an alter-configs call.
func alterErr(rs kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("%q: %w%s", r.Name, r.Err, BrokerSays(r.ErrMessage))
		}
	}
	return nil
}
