package e2e

// A group id is one group, as in Kafka: franz-go's consumer group client cannot
// join an id that a share group holds, and the id stays a share group.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

func TestShareGroupIDRefusedToConsumerGroup(t *testing.T) {
	n := testnode.Start(t)
	const topic, group = "share-id", "share-id-group"
	createTopic(t, n.Addr, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tally := newShareTally()
	shareConsumer(ctx, t, n.Addr, topic, group, "s1", tally)
	adm := kadm.NewClient(newClient(t, n.Addr))
	for {
		ls, err := adm.ListGroupsByType(ctx, []string{"share"})
		if _, ok := ls[group]; err == nil && ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the share group was not listed: %v", err)
		case <-time.After(100 * time.Millisecond): // polling a condition with a deadline
		}
	}

	cl := newClient(t, n.Addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic))
	var got error
	for got == nil && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		cl.PollFetches(pctx).EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				got = err
			}
		})
		pcancel()
	}
	if !errors.Is(got, kerr.GroupIDNotFound) && !errors.Is(got, kerr.InconsistentGroupProtocol) {
		t.Fatalf("a consumer group client on a share group's id got %v, want GROUP_ID_NOT_FOUND or INCONSISTENT_GROUP_PROTOCOL", got)
	}
	t.Logf("consumer group client refused: %v", got)
	ls, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := ls[group]; !ok || g.GroupType != "share" {
		t.Fatalf("after the refusal the group is listed as %+v, want the share group alone", ls[group])
	}
}
