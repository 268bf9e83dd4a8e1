package e2e

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/testnode"
)

// TestAdminTopics: kadm creates topics (with configs), lists and describes them,
// refuses duplicates and bad requests with Kafka's errors, and deletes them.
func TestAdminTopics(t *testing.T) {
	n := testnode.Start(t)
	adm := kadm.NewClient(newClient(t, n.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	retention := "3600000"
	created, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": &retention}, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range created.Sorted() {
		if r.Err != nil {
			t.Fatalf("create %s: %v", r.Topic, r.Err)
		}
	}
	for _, tc := range []struct {
		name       string
		partitions int32
		rf         int16
		configs    map[string]*string
		want       error
	}{
		{"a", 1, 1, nil, kerr.TopicAlreadyExists},
		{"bad/name", 1, 1, nil, kerr.InvalidTopicException},
		{"zero", 0, 1, nil, kerr.InvalidPartitions},
		{"rf", 1, 3, nil, kerr.InvalidReplicationFactor},
		{"cfg", 1, 1, map[string]*string{"no.such.config": &retention}, kerr.InvalidConfig},
	} {
		resp, err := adm.CreateTopic(ctx, tc.partitions, tc.rf, tc.configs, tc.name)
		if err == nil {
			err = resp.Err
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("create %q: got %v, want %v", tc.name, err, tc.want)
		}
	}

	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := listed.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("listed %v, want [a b]", got)
	}
	d := listed["a"]
	if len(d.Partitions) != 3 || d.Partitions[0].Leader != 1 {
		t.Fatalf("describe a: %+v", d)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cfgs.On("a", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs: %v %v", err, rc.Err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			found = true
			if c.MaybeValue() != retention {
				t.Fatalf("retention.ms = %q, want %s", c.MaybeValue(), retention)
			}
		}
	}
	if !found {
		t.Fatal("retention.ms not described")
	}

	deleted, err := adm.DeleteTopics(ctx, "a", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if r := deleted["a"]; r.Err != nil {
		t.Fatalf("delete a: %v", r.Err)
	}
	if r := deleted["missing"]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete missing: %v", r.Err)
	}
	// A new client: franz-go serves Metadata from its cache for a few seconds.
	listed, err = kadm.NewClient(newClient(t, n.Addr)).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := listed.Names(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("after delete: %v, want [b]", got)
	}
}
