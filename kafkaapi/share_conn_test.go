package kafkaapi_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareConnectionClosedReleases: records a member acquired are released when
// the connection of its share session closes, as Kafka does: another member
// acquires them at once, delivered for the second time, not after the
// acquisition lock (30 s here).
func TestShareConnectionClosedReleases(t *testing.T) {
	addr := sharedNode(t).KafkaAddr()
	c1 := dial(t, addr)
	s1 := openShareSession(t, c1, 2, "a", "b", "c")
	held := s1.acquire().AcquiredRecords
	if len(held) != 1 || held[0].DeliveryCount != 1 {
		t.Fatalf("m1 acquired %+v, want one range delivered once", held)
	}

	// m2 has nothing to take while m1 holds everything.
	c2 := dial(t, addr)
	s2 := &shareSession{t: t, c: c2, v: 2, group: s1.group, member: "m2", id: s1.id}
	if p := s2.fetch(200 * time.Millisecond); len(p.AcquiredRecords) != 0 {
		t.Fatalf("m2 acquired %+v while m1 holds them", p.AcquiredRecords)
	}
	c1.nc.Close()
	deadline := time.Now().Add(10 * time.Second)
	var got []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for len(got) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("m1's records not released within 10 s of its connection closing")
		}
		got = s2.fetch(500 * time.Millisecond).AcquiredRecords
	}
	if len(got) != 1 || got[0].FirstOffset != held[0].FirstOffset || got[0].LastOffset != held[0].LastOffset || got[0].DeliveryCount != 2 {
		t.Fatalf("m2 acquired %+v, want m1's %+v delivered twice", got, held)
	}
}
