package kafkaapi

import (
	"errors"
	"testing"

	"skiff/cluster"
	"skiff/sharegroup"
)

// A FindCoordinator request with several keys needing an internal topic that
// cannot be created tries the creation once (it may wait metadataWriteTimeout)
// and answers the other keys with the same failure at once; a topic created
// is not tried again, and another topic is tried on its own.
func TestFindCoordinatorCreatesOncePerRequest(t *testing.T) {
	tried := topicCreations{}
	calls := map[string]int{}
	failing := func(topic string) func() (cluster.Topic, error) {
		return func() (cluster.Topic, error) {
			calls[topic]++
			return cluster.Topic{}, errors.New("not enough live brokers")
		}
	}
	for range 5 { // five share keys
		if _, err := tried.create(sharegroup.StateTopic, failing(sharegroup.StateTopic)); err == nil {
			t.Fatal("a failed creation answered without an error")
		}
	}
	if calls[sharegroup.StateTopic] != 1 {
		t.Fatalf("five keys tried to create %s %d times, want once", sharegroup.StateTopic, calls[sharegroup.StateTopic])
	}
	created := func() (cluster.Topic, error) {
		calls[cluster.OffsetsTopic]++
		return cluster.Topic{Name: cluster.OffsetsTopic, Partitions: 3}, nil
	}
	for range 2 {
		if got, err := tried.create(cluster.OffsetsTopic, created); err != nil || got.Partitions != 3 {
			t.Fatalf("creating %s: %+v, %v", cluster.OffsetsTopic, got, err)
		}
	}
	if calls[cluster.OffsetsTopic] != 2 {
		// A success is not kept: the next key finds the topic in the cache.
		t.Fatalf("a successful creation was called %d times for two keys, want each (the cache answers in the handler)", calls[cluster.OffsetsTopic])
	}
}
