package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"skiff/internal/testnode"
)

// TestDeletedTopicOffsets: deleting a topic deletes the offsets committed for
// it, as in Kafka, so that a topic created again under its name is not read
// from another log's offsets; the offsets of other topics stay.
func TestDeletedTopicOffsets(t *testing.T) {
	n := testnode.Start(t, groupNodeArgs...)
	createTopic(t, n.Addr, "gone", 2)
	createTopic(t, n.Addr, "kept", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, n.Addr))
	commit := make(kadm.Offsets)
	commit.Add(kadm.Offset{Topic: "gone", Partition: 0, At: 10, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: "gone", Partition: 1, At: 11, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: "kept", Partition: 0, At: 12, LeaderEpoch: -1})
	for _, g := range []string{"g1", "g2"} {
		resp, err := adm.CommitOffsets(ctx, g, commit)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %s: %v", g, err)
		}
	}
	if _, err := adm.DeleteTopics(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"g1", "g2"} {
		var got kadm.OffsetResponses
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var err error
			if got, err = adm.FetchOffsets(ctx, g); err != nil {
				t.Fatalf("fetch offsets of %s: %v", g, err)
			}
			if _, ok := got["gone"]; !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still has offsets of the deleted topic: %v", g, got.Offsets())
			}
		}
		if o, ok := got.Lookup("kept", 0); !ok || o.At != 12 || len(got.Offsets()) != 1 {
			t.Fatalf("%s: offsets %v, want only kept/0 at 12", g, got.Offsets())
		}
	}

	createTopic(t, n.Addr, "gone", 2)
	got, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["gone"]; ok {
		t.Fatalf("the topic created again has offsets: %v", got.Offsets())
	}
}
