package groups

import (
	"bytes"
	"context"
	"sort"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
)

// fakeShares records what the coordinator hands to the share group coordinator.
type fakeShares struct {
	mu      sync.Mutex
	loads   map[int32][]batch.Record // the last load of each partition
	loaded  int
	dropped []int32
}

func (f *fakeShares) LoadShareGroups(id int32, recs []batch.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads[id] = recs
	f.loaded++
}

func (f *fakeShares) DropShareGroups(id int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropped = append(f.dropped, id)
}

// last returns the keys and values of the last load of partition 0, sorted by key.
func (f *fakeShares) last() (n int, recs []batch.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs = append(recs, f.loads[0]...)
	sort.Slice(recs, func(i, j int) bool { return bytes.Compare(recs[i].Key, recs[j].Key) < 0 })
	return f.loaded, recs
}

func shareKey(typ int16, group string, member ...string) []byte {
	k := kbin.AppendInt16(nil, typ)
	k = kbin.AppendString(k, group)
	for _, m := range member {
		k = kbin.AppendString(k, m)
	}
	return k
}

// The records of share groups (types 9..15) are appended to the group's
// partition, kept in Pebble, and handed back, tombstones applied, when the
// partition is elected again and when Pebble is rebuilt from the log; a
// resignation drops the partition's share groups.
func TestShareRecordsKeptAndHandedBack(t *testing.T) {
	shares := &fakeShares{loads: map[int32][]batch.Record{}}
	e := newEnv(t)
	e.shareGroups = shares
	e.stop()
	e.start()
	if n, recs := shares.last(); n != 1 || len(recs) != 0 {
		t.Fatalf("first load: %d loads, %d records; want 1 load of none", n, len(recs))
	}
	want := []batch.Record{
		{Key: shareKey(10, "sg", "m1"), Value: []byte{0, 0, 1}},
		{Key: shareKey(11, "sg"), Value: []byte{0, 0, 0, 0, 0, 7, 0}},
		{Key: shareKey(14, "sg", "m1"), Value: []byte{0, 0, 2}},
	}
	write := func(recs ...batch.Record) {
		t.Helper()
		if code := e.c.AppendShareRecords("sg", recs)(context.Background()); code != 0 {
			t.Fatalf("append share records: %v", kerr.ErrorForCode(code))
		}
	}
	write(want[0], batch.Record{Key: shareKey(13, "sg", "m2"), Value: []byte{0, 0, 9}}, want[1])
	write(batch.Record{Key: shareKey(13, "sg", "m2")}, want[2]) // a tombstone of m2's record
	e.commit(7, "g", "", -1, "t", map[int32]int64{0: 5})        // other groups' records are not handed over

	check := func(when string, loads int) {
		t.Helper()
		n, got := shares.last()
		if n != loads {
			t.Fatalf("%s: %d loads, want %d", when, n, loads)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: loaded %d records, want %d", when, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) {
				t.Fatalf("%s: record %d is %x=%x, want %x=%x", when, i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
			}
		}
	}
	e.c.Resign(0)
	shares.mu.Lock()
	dropped := append([]int32(nil), shares.dropped...)
	shares.mu.Unlock()
	if len(dropped) != 1 || dropped[0] != 0 {
		t.Fatalf("resigning partition 0 dropped %v", dropped)
	}
	if _, code := e.c.ShareShard("sg"); code != kerr.NotCoordinator.Code {
		t.Fatalf("ShareShard after resigning: %v", kerr.ErrorForCode(code))
	}
	e.log.epoch.Store(1) // a new leadership
	e.c.Elect(0, 1, e.log)
	waitFor(t, "partition 0 loaded again", func() bool { _, code := e.c.ShareShard("sg"); return code == 0 })
	check("elected again", 2)

	e.stop()
	if err := removeAll(e.dir + "/meta"); err != nil {
		t.Fatal(err)
	}
	e.start()
	check("Pebble rebuilt from the log", 3)
}
