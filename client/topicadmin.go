package client

// Topics, as `skiff topic create|list|describe|delete` administer them through
// the admin API (CreateTopics, Metadata, DescribeConfigs, DeleteTopics).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicSpec is a topic to create.
type TopicSpec struct {
	Name       string
	Partitions int32              // -1: the broker's num.partitions
	Replicas   int16              // -1: the broker's default.replication.factor
	Configs    map[string]*string // topic configs; nil: none
	// IfNotExists makes an existing topic no error: CreateTopic then reports
	// created false.
	IfNotExists bool
}

// CreateTopic creates the topic of s; created is false when it existed and
// s.IfNotExists accepts that.
func (k *Client) CreateTopic(ctx context.Context, s TopicSpec) (created bool, err error) {
	rs, err := k.admin.CreateTopics(ctx, s.Partitions, s.Replicas, s.Configs, s.Name)
	if err != nil {
		return false, fmt.Errorf("create topic %q: %w", s.Name, k.Explain(err))
	}
	r, ok := rs[s.Name]
	if !ok {
		return false, fmt.Errorf("create topic %q: the broker's answer did not mention the topic", s.Name)
	}
	switch {
	case errors.Is(r.Err, kerr.TopicAlreadyExists):
		if s.IfNotExists {
			return false, nil
		}
		return false, fmt.Errorf("topic %q already exists (use --if-not-exists to accept that)", s.Name)
	case r.Err != nil:
		return false, fmt.Errorf("create topic %q: %w%s", s.Name, r.Err, BrokerSays(r.ErrMessage))
	}
	return true, nil
}

// ListTopics writes the topic names to w, one per line, sorted; internal adds
// internal topics such as __consumer_offsets.
func (k *Client) ListTopics(ctx context.Context, w io.Writer, internal bool) error {
	tds, err := k.admin.ListTopicsWithInternal(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", k.Explain(err))
	}
	var b strings.Builder
	for _, name := range tds.Names() {
		if tds[name].IsInternal && !internal {
			continue
		}
		b.WriteString(name)
		b.WriteByte('\n')
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// DescribeTopic writes topic's partitions, their offsets and its configs to w
// (WriteTopicDescription), then with sizes the size of each replica
// (WriteReplicaSizes).
func (k *Client) DescribeTopic(ctx context.Context, w io.Writer, name string, sizes bool) error {
	tds, err := k.admin.ListTopics(ctx, name)
	if err != nil {
		return fmt.Errorf("describe topic %q: %w", name, k.Explain(err))
	}
	td, ok := tds[name]
	if !ok {
		return fmt.Errorf("describe topic %q: the broker's answer did not mention the topic", name)
	}
	if td.Err != nil {
		return TopicError(name, td.Err)
	}
	rcs, err := k.admin.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return fmt.Errorf("describe configs of topic %q: %w", name, k.Explain(err))
	}
	rc, err := rcs.On(name, nil)
	if err != nil {
		return fmt.Errorf("describe configs of topic %q: the broker's answer did not mention the topic", name)
	}
	if rc.Err != nil {
		return fmt.Errorf("describe configs of topic %q: %w%s", name, rc.Err, BrokerSays(rc.ErrMessage))
	}
	if err := WriteTopicDescription(w, td, rc.Configs, k.partitionOffsets(ctx, td)); err != nil || !sizes {
		return err
	}
	rs, err := k.ReplicaSizes(ctx, name, td.Partitions.Numbers())
	if err != nil {
		return err
	}
	return WriteReplicaSizes(w, rs)
}

// DeleteTopic deletes topic name and its records; deleted is false when it did
// not exist and ifExists accepts that.
func (k *Client) DeleteTopic(ctx context.Context, name string, ifExists bool) (deleted bool, err error) {
	rs, err := k.admin.DeleteTopics(ctx, name)
	if err != nil {
		return false, fmt.Errorf("delete topic %q: %w", name, k.Explain(err))
	}
	r, ok := rs[name]
	if !ok {
		return false, fmt.Errorf("delete topic %q: the broker's answer did not mention the topic", name)
	}
	switch {
	case errors.Is(r.Err, kerr.UnknownTopicOrPartition):
		if ifExists {
			return false, nil
		}
		return false, fmt.Errorf("topic %q does not exist (use --if-exists to accept that)", name)
	case r.Err != nil:
		return false, fmt.Errorf("delete topic %q: %w%s", name, r.Err, BrokerSays(r.ErrMessage))
	}
	return true, nil
}
