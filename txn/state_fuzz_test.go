package txn

import (
	"reflect"
	"testing"
	"time"

	"skiff/internal/batch"
)

// FuzzParseRecord: any key and value of __transaction_state either fail to
// parse or read back the same after being written again (record, then
// parseRecord); a completion is carried only by an Ongoing record; nothing
// panics. The seeds are a TV1 record, a TV2 one and an
// Ongoing one carrying a completion.
func FuzzParseRecord(f *testing.F) {
	base := txnMeta{id: "id", pid: 7, epoch: 3, timeout: time.Minute, state: Ongoing,
		partitions: map[TopicPartition]struct{}{{"a", 0}: {}, {"b", 1}: {}},
		started:    time.UnixMilli(1000), updated: time.UnixMilli(2000), lastEpoch: -1,
		prevPID: -1, nextPID: -1, nextEpoch: -1}
	tv1 := base
	tv2 := base
	tv2.tv2, tv2.prevPID, tv2.nextPID = true, 5, 9
	carry := tv2
	carry.carried = &completion{commit: true, pid: 7, epoch: 2, coordinatorEpoch: 4,
		partitions: []TopicPartition{{"a", 0}, {"c", 3}}}
	for _, m := range []*txnMeta{&tv1, &tv2, &carry} {
		r := m.record()
		f.Add(r.Key, r.Value)
	}
	f.Add(tombstone("id").Key, []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, m, err := parseRecord(batch.Record{Key: key, Value: value})
		if err != nil || m == nil {
			return
		}
		if m.id != id {
			t.Fatalf("id %q, state's %q", id, m.id)
		}
		id2, m2, err := parseRecord(m.record())
		if err != nil {
			t.Fatalf("a parsed record does not parse again: %v", err)
		}
		if id2 != id || m2.pid != m.pid || m2.epoch != m.epoch || m2.state != m.state || m2.tv2 != m.tv2 ||
			!reflect.DeepEqual(m2.partitions, m.partitions) {
			t.Fatalf("read back differently:\n%+v\n%+v", m, m2)
		}
		if (m.carried == nil) != (m2.carried == nil) {
			t.Fatalf("carried completion lost or made up: %+v, %+v", m.carried, m2.carried)
		}
		if m.carried != nil && m.state != Ongoing {
			t.Fatalf("a completion carried by a %s record", StateName(m.state))
		}
	})
}

// FuzzParseCompletion: a completion tag either fails to parse or, written again
// (appendCompletion), parses to the same markers, whose partitions are as
// written (sorted, once each, named, not negative).
func FuzzParseCompletion(f *testing.F) {
	f.Add(appendCompletion(nil, &completion{commit: true, pid: 7, epoch: 4, coordinatorEpoch: 9,
		partitions: []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}}}))
	f.Add(appendCompletion(nil, &completion{pid: -1, epoch: -1}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCompletion(b)
		if err != nil {
			return
		}
		c2, err := parseCompletion(appendCompletion(nil, c))
		if err != nil {
			t.Fatalf("a parsed completion does not parse again: %v", err)
		}
		if !reflect.DeepEqual(c.markers(), c2.markers()) {
			t.Fatalf("read back differently:\n%+v\n%+v", c.markers(), c2.markers())
		}
		for i, tp := range c.partitions {
			if tp.Topic == "" || tp.Partition < 0 || (i > 0 && !lessPartition(c.partitions[i-1], tp)) {
				t.Fatalf("partitions not as written (sorted, once each, named, >= 0): %+v", c.partitions)
			}
		}
	})
}
