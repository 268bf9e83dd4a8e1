package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicPartitions looks topic up with a metadata request (never creating it)
// and returns its partition ids in order. A missing topic is a clear error.
func (k *Client) TopicPartitions(ctx context.Context, topic string) ([]int32, error) {
	ctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	tds, err := k.admin.ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("look up topic %q: %w", topic, k.Explain(err))
	}
	td, ok := tds[topic]
	if !ok {
		return nil, fmt.Errorf("topic %q: the broker did not describe it", topic)
	}
	if td.Err != nil {
		return nil, TopicError(topic, td.Err)
	}
	ps := td.Partitions.Numbers()
	if len(ps) == 0 {
		return nil, fmt.Errorf("topic %q has no partitions", topic)
	}
	return ps, nil
}

// TopicError words a per-topic error from a broker.
func TopicError(topic string, err error) error {
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("topic %q does not exist (create it with `skiff topic create %s`, list topics with `skiff topic list`)", topic, topic)
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return fmt.Errorf("topic %q: not authorized", topic)
	default:
		return fmt.Errorf("topic %q: %w", topic, err)
	}
}
