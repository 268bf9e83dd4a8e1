package replication

import (
	"path/filepath"
	"testing"
	"time"

	"skiff/offsets"
)

// TestFetchRequestSettings: a follower's fetch carries replica.fetch.min.bytes and
// replica.fetch.wait.max.ms (Kafka's defaults unless set), and names each partition
// it can find in the response.
func TestFetchRequestSettings(t *testing.T) {
	for _, tc := range []struct {
		minBytes, wantMin int32
		wait              time.Duration
		wantWaitMs        int32
	}{
		{0, 1, 0, 500}, // the defaults
		{64 << 10, 64 << 10, 2 * time.Millisecond, 2}, // batching
		{1, 1, 300 * time.Microsecond, 1},             // under a millisecond: the least Fetch can say
	} {
		dir := t.TempDir()
		db, err := offsets.Open(filepath.Join(dir, "meta"), offsets.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewManager(Config{Dir: filepath.Join(dir, "topics"), Store: func(key string) Store { return db.LogIndex(key) },
			ReplicaFetchMinBytes: tc.minBytes, ReplicaFetchWaitMax: tc.wait})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Apply(1, []TopicSpec{spec("a", 1, 2)}); err != nil {
			t.Fatal(err)
		}
		req, byKey, _ := (&fetcher{m: m}).fetchRequest(m.Partitions(), 0)
		if req.MinBytes != tc.wantMin || req.MaxWaitMillis != tc.wantWaitMs || req.ReplicaID != m.cfg.BrokerID {
			t.Errorf("min bytes %d, wait %v: fetch with MinBytes %d, MaxWaitMillis %d, replica %d; want %d and %d",
				tc.minBytes, tc.wait, req.MinBytes, req.MaxWaitMillis, req.ReplicaID, tc.wantMin, tc.wantWaitMs)
		}
		n := 0
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				if p := byKey[topicPartition{rt.Topic, rp.Partition}]; p == nil || rp.FetchOffset != p.LogEndOffset() {
					t.Errorf("%s/%d: not found, or fetched from %d", rt.Topic, rp.Partition, rp.FetchOffset)
				}
				n++
			}
		}
		if n != len(byKey) {
			t.Errorf("%d partitions in the request, %d to look up", n, len(byKey))
		}
		closeAll(t, m, db)
	}
}
