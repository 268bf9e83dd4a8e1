package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ElectLeaders asks for preferred (or, unclean, any live replica's) leader
// elections of topic's partitions, every partition of the cluster when topic is
// "", and prints one line per partition: elected, not needed, or why not. It
// fails if any election failed.
func (k *Client) ElectLeaders(ctx context.Context, w io.Writer, topic string, unclean bool) error {
	how, kind := kadm.ElectPreferredReplica, "preferred"
	if unclean {
		how, kind = kadm.ElectLiveReplica, "unclean"
	}
	var set kadm.TopicsSet
	if topic != "" {
		tds, err := k.admin.ListTopics(ctx, topic)
		if err != nil {
			return fmt.Errorf("elect leaders of topic %q: %w", topic, k.Explain(err))
		}
		td, ok := tds[topic]
		switch {
		case !ok:
			return fmt.Errorf("elect leaders of topic %q: the broker's answer did not mention the topic", topic)
		case td.Err != nil:
			return TopicError(topic, td.Err)
		}
		set = kadm.TopicsSet{}
		set.Add(topic, td.Partitions.Numbers()...)
	}
	rs, err := k.admin.ElectLeaders(ctx, how, set)
	if err != nil {
		return fmt.Errorf("%s leader election: %w", kind, k.Explain(err))
	}
	var results []kadm.ElectLeadersResult
	for _, ps := range rs {
		for _, r := range ps {
			results = append(results, r)
		}
	}
	slices.SortFunc(results, func(a, b kadm.ElectLeadersResult) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	failed := 0
	for _, r := range results {
		switch {
		case r.Err == nil:
			fmt.Fprintf(w, "%s/%d: elected (%s)\n", r.Topic, r.Partition, kind)
		case errors.Is(r.Err, kerr.ElectionNotNeeded):
			fmt.Fprintf(w, "%s/%d: not needed (%s)\n", r.Topic, r.Partition, notNeeded(unclean))
		default:
			failed++
			fmt.Fprintf(w, "%s/%d: failed: %v%s\n", r.Topic, r.Partition, r.Err, BrokerSays(r.ErrMessage))
		}
	}
	if len(results) == 0 {
		fmt.Fprintf(w, "no partition needed a %s election\n", kind)
	}
	if failed > 0 {
		return fmt.Errorf("%s leader election failed for %d of %d partitions", kind, failed, len(results))
	}
	return nil
}

func notNeeded(unclean bool) string {
	if unclean {
		return "it has a leader"
	}
	return "its preferred replica leads"
}
