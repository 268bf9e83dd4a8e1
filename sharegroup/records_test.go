package sharegroup

import (
	"bytes"
	"context"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
)

// memoryLog is a MemberLog keeping the last value of each key, as Pebble does.
type memoryLog struct {
	mu      sync.Mutex
	records map[string][]byte
	writes  int
	code    int16 // answered by ShareShard when set
	// failWrites, when set, is what the wait of an append answers, and the
	// append stores nothing (the write was lost with the coordinator's leadership).
	failWrites int16
}

func (l *memoryLog) ShareShard(string) (int32, int16) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 0, l.code
}

func (l *memoryLog) AppendShareRecords(_ string, recs []batch.Record) func(context.Context) int16 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	if code := l.failWrites; code != 0 {
		return func(context.Context) int16 { return code }
	}
	for _, r := range recs {
		if r.Value == nil {
			delete(l.records, string(r.Key))
		} else {
			l.records[string(r.Key)] = r.Value
		}
	}
	return func(context.Context) int16 { return 0 }
}

// failWith makes the appends from now on fail with code (0: succeed).
func (l *memoryLog) failWith(code int16) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failWrites = code
}

func (l *memoryLog) stored() []batch.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []batch.Record
	for k, v := range l.records {
		out = append(out, batch.Record{Key: []byte(k), Value: v})
	}
	return out
}

type shareTestEnv struct {
	t      *testing.T
	now    time.Time
	log    *memoryLog
	topics map[string]TopicInfo
}

func (e *shareTestEnv) coordinator() *Coordinator {
	cfg := Config{Clock: func() time.Time { return e.now }, MemberLog: e.log, SessionTimeout: 45 * time.Second}
	return NewCoordinator(cfg, func(n string) (TopicInfo, bool) { ti, ok := e.topics[n]; return ti, ok }, func(string, string) {})
}

func (e *shareTestEnv) heartbeat(c *Coordinator, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = "sg", member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	rack := "rack-" + member
	req.RackID = &rack
	return c.Heartbeat(context.Background(), req, Client{ID: "client-" + member, Host: "/10.0.0.1"})
}

func (e *shareTestEnv) ok(what string, resp *kmsg.ShareGroupHeartbeatResponse) *kmsg.ShareGroupHeartbeatResponse {
	e.t.Helper()
	if resp.ErrorCode != 0 {
		e.t.Fatalf("%s: %v", what, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp
}

func describe(t *testing.T, c *Coordinator) kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	d, ok := c.Describe("sg", func([16]byte) string { return "" })
	if !ok {
		t.Fatal("group sg unknown")
	}
	return d
}

// A share group's membership written through MemberLog is what a new
// coordinator loads: the group epoch, each member's id, epoch, client, rack,
// subscription and assignment. Members keep heartbeating with their epochs (or
// the previous one, whose answer was lost) without rejoining; a member that left
// is gone; members that stay silent a session timeout after the load are removed
// and their records deleted.
func TestMembershipRebuiltFromRecords(t *testing.T) {
	e := &shareTestEnv{t: t, now: time.Unix(1000, 0), log: &memoryLog{records: map[string][]byte{}},
		topics: map[string]TopicInfo{"a": {ID: [16]byte{1}, Partitions: 2}, "b": {ID: [16]byte{2}, Partitions: 1}}}
	c1 := e.coordinator()
	m1 := e.ok("m1 joins", e.heartbeat(c1, "m1", 0, "a"))
	e.ok("m2 joins", e.heartbeat(c1, "m2", 0, "a", "b"))
	e.ok("m3 joins", e.heartbeat(c1, "m3", 0, "b"))
	writes := e.log.writes
	e.ok("m1 heartbeats", e.heartbeat(c1, "m1", m1.MemberEpoch))
	if e.log.writes != writes {
		t.Errorf("a heartbeat changing nothing wrote %d times", e.log.writes-writes)
	}
	firstEpoch := m1.MemberEpoch
	m1 = e.ok("m1 subscribes to b too", e.heartbeat(c1, "m1", m1.MemberEpoch, "a", "b"))
	if m1.Assignment == nil || m1.MemberEpoch <= firstEpoch {
		t.Fatalf("m1 got no new assignment (epoch %d after %d)", m1.MemberEpoch, firstEpoch)
	}
	e.ok("m3 leaves", e.heartbeat(c1, "m3", -1))
	before := describe(t, c1)

	// Coordination moves: a new coordinator loads the stored records.
	c2 := e.coordinator()
	c2.LoadShareGroups(0, e.log.stored())
	after := describe(t, c2)
	if !reflect.DeepEqual(sortedGroup(before), sortedGroup(after)) {
		t.Fatalf("rebuilt group differs:\nbefore %+v\nafter  %+v", before, after)
	}
	if len(after.Members) != 2 || after.GroupEpoch != before.GroupEpoch || after.GroupEpoch < 4 {
		t.Fatalf("rebuilt group: %d members, epoch %d (before %d)", len(after.Members), after.GroupEpoch, before.GroupEpoch)
	}
	got := e.ok("m1 heartbeats the new coordinator", e.heartbeat(c2, "m1", m1.MemberEpoch))
	if got.MemberEpoch != m1.MemberEpoch || got.Assignment != nil {
		t.Errorf("m1 on the new coordinator: epoch %d (was %d), assignment sent again %v", got.MemberEpoch, m1.MemberEpoch, got.Assignment != nil)
	}
	// m1's answer with its new epoch was lost: its previous epoch is accepted, and
	// answered with the current one and the assignment.
	if r := e.ok("m1 with its previous epoch", e.heartbeat(c2, "m1", firstEpoch)); r.MemberEpoch != m1.MemberEpoch || r.Assignment == nil || len(r.Assignment.TopicPartitions) != 2 {
		t.Errorf("m1 with its previous epoch %d: answered epoch %d (want %d), assignment %+v", firstEpoch, r.MemberEpoch, m1.MemberEpoch, r.Assignment)
	}
	m2 := after.Members[1]
	if m2.MemberID != "m2" {
		t.Fatalf("members: %+v", after.Members)
	}
	if r := e.ok("m2 with its epoch", e.heartbeat(c2, "m2", m2.MemberEpoch)); r.MemberEpoch != m2.MemberEpoch {
		t.Errorf("m2's epoch %d became %d", m2.MemberEpoch, r.MemberEpoch)
	}
	if r := e.heartbeat(c2, "m3", 5); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("m3, which left, heartbeating: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := e.heartbeat(c2, "m1", m1.MemberEpoch+1); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Errorf("m1 with a future epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// Loaded members have a session timeout from the load; m2 stays silent.
	e.now = e.now.Add(30 * time.Second)
	e.ok("m1 heartbeats", e.heartbeat(c2, "m1", m1.MemberEpoch))
	e.now = e.now.Add(30 * time.Second)
	e.ok("m1 heartbeats", e.heartbeat(c2, "m1", m1.MemberEpoch))
	if n := c2.Members("sg"); n != 1 {
		t.Fatalf("%d members after m2 was silent 60 s", n)
	}
	c3 := e.coordinator()
	c3.LoadShareGroups(0, e.log.stored())
	if d := describe(t, c3); len(d.Members) != 1 || d.Members[0].MemberID != "m1" || d.GroupEpoch <= after.GroupEpoch {
		t.Fatalf("after m2 timed out, the records hold %+v", d)
	}

	// Dropping the partition forgets the group; without members it can be deleted,
	// and then nothing of it is stored.
	c3.DropShareGroups(0)
	if c3.Has("sg") {
		t.Fatal("group still known after its partition was dropped")
	}
	e.ok("m1 leaves", e.heartbeat(c2, "m1", -1))
	if code := c2.Delete(context.Background(), "sg"); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if left := e.log.stored(); len(left) != 0 {
		t.Fatalf("%d records left after the group was deleted", len(left))
	}
	if r := e.heartbeat(c2, "m1", -1); r.ErrorCode != 0 || r.MemberEpoch != -1 || c2.Has("sg") {
		t.Errorf("leaving a deleted group: %v, epoch %d, group made again %v", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, c2.Has("sg"))
	}
}

// sortedGroup orders what Describe takes from maps.
func sortedGroup(g kmsg.ShareGroupDescribeResponseGroup) kmsg.ShareGroupDescribeResponseGroup {
	for i := range g.Members {
		tps := g.Members[i].Assignment.TopicPartitions
		sort.Slice(tps, func(a, b int) bool { return bytes.Compare(tps[a].TopicID[:], tps[b].TopicID[:]) < 0 })
	}
	return g
}

// Every record type reads back as written, and a member whose metadata record
// is missing (its removal was half written) is not loaded.
func TestRecordsRoundTrip(t *testing.T) {
	m := &member{id: "m", clientID: "cl", host: "/h", rack: "r", epoch: 9, prevEpoch: 7,
		subscribed: []string{"a", "b"}, assigned: map[[16]byte][]int32{{1}: {0, 1}, {2}: {0}}}
	l := newLoader()
	recs := append(memberRecords("g", m), groupEpochRecord("g", 9), targetMetaRecord("g", 9))
	half := &member{id: "half", epoch: 3, assigned: map[[16]byte][]int32{}}
	recs = append(recs, currentRecord("g", half), targetRecord("g", half))
	for _, r := range recs {
		if err := l.add(r.Key, r.Value); err != nil {
			t.Fatalf("record %x: %v", r.Key, err)
		}
	}
	gs := l.finish()
	g := gs["g"]
	if len(gs) != 1 || g == nil || g.epoch != 9 || len(g.members) != 1 {
		t.Fatalf("loaded %+v", gs)
	}
	got := g.members["m"]
	if got == nil || !reflect.DeepEqual(*got, *m) {
		t.Fatalf("member read back as %+v, want %+v", got, m)
	}
	if err := l.add(recordKey(99, "g", ""), []byte{0, 0}); err == nil {
		t.Error("a record of an unknown type was read")
	}
	if err := l.add(recordKey(recGroup, "g", ""), []byte{0, 1, 0, 0, 0, 1, 0}); err == nil {
		t.Error("a value of an unknown version was read")
	}
}

// TestAdminWaitsForLoad: until the coordinator has loaded the group's partition
// (COORDINATOR_LOAD_IN_PROGRESS), a group with members looks unknown and empty
// here; deleting it, or making it for AlterShareGroupOffsets, must answer that
// code rather than act on the empty group (the front end would then delete or
// reset the share-partition states of a group whose members are consuming).
func TestAdminWaitsForLoad(t *testing.T) {
	e := &shareTestEnv{t: t, now: time.Unix(1000, 0), log: &memoryLog{records: map[string][]byte{}},
		topics: map[string]TopicInfo{"a": {ID: [16]byte{1}, Partitions: 1}}}
	c1 := e.coordinator()
	e.ok("m1 joins", e.heartbeat(c1, "m1", 0, "a"))

	e.log.code = kerr.CoordinatorLoadInProgress.Code // a new coordinator, loading
	c2 := e.coordinator()
	if code := c2.Serving("sg"); code != kerr.CoordinatorLoadInProgress.Code {
		t.Errorf("serving while loading: %v", kerr.ErrorForCode(code))
	}
	if code := c2.Delete(context.Background(), "sg"); code != kerr.CoordinatorLoadInProgress.Code {
		t.Errorf("delete while loading: %v, want COORDINATOR_LOAD_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	if code := c2.Ensure(context.Background(), "sg"); code != kerr.CoordinatorLoadInProgress.Code {
		t.Errorf("ensure while loading: %v, want COORDINATOR_LOAD_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	if c2.Has("sg") {
		t.Error("a group made while loading")
	}
	e.log.code = 0
	c2.LoadShareGroups(0, e.log.stored())
	if code := c2.Serving("sg"); code != 0 {
		t.Errorf("serving once loaded: %v", kerr.ErrorForCode(code))
	}
	if n := c2.Members("sg"); n != 1 {
		t.Errorf("%d members once loaded, want 1", n)
	}
	if code := c2.Delete(context.Background(), "sg"); code != kerr.NonEmptyGroup.Code {
		t.Errorf("delete once loaded: %v, want NON_EMPTY_GROUP", kerr.ErrorForCode(code))
	}
}

// TestEnsuredGroupSurvivesFailover: a group made empty by AlterShareGroupOffsets
// (Ensure) is written to the group's partition, so the next coordinator still
// lists and describes it after a failover, as Kafka's persisted share group; a
// deletion then leaves nothing stored.
func TestEnsuredGroupSurvivesFailover(t *testing.T) {
	e := &shareTestEnv{t: t, now: time.Unix(1000, 0), log: &memoryLog{records: map[string][]byte{}}}
	c1 := e.coordinator()
	if code := c1.Ensure(context.Background(), "sg"); code != 0 {
		t.Fatalf("ensure: %v", kerr.ErrorForCode(code))
	}
	writes := e.log.writes
	if code := c1.Ensure(context.Background(), "sg"); code != 0 || e.log.writes != writes {
		t.Fatalf("ensuring a known group: %v, %d writes", kerr.ErrorForCode(code), e.log.writes-writes)
	}
	c2 := e.coordinator()
	c2.LoadShareGroups(0, e.log.stored())
	if !c2.Has("sg") {
		t.Fatal("the group made by AlterShareGroupOffsets is gone after a failover")
	}
	if d := describe(t, c2); d.GroupState != "Empty" || len(d.Members) != 0 {
		t.Fatalf("loaded group %+v, want Empty", d)
	}
	if code := c2.Delete(context.Background(), "sg"); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if left := e.log.stored(); len(left) != 0 {
		t.Fatalf("%d records left after the group was deleted", len(left))
	}
}

// TestDeleteWaitsForTombstones: DeleteGroups of a share group is answered once
// the group's tombstones are committed; when they are not, the answer is the
// write's error and the group stays, so that deleting it again writes them
// again (answering success would let the next coordinator load the group back).
func TestDeleteWaitsForTombstones(t *testing.T) {
	e := &shareTestEnv{t: t, now: time.Unix(1000, 0), log: &memoryLog{records: map[string][]byte{}}}
	c := e.coordinator()
	if code := c.Ensure(context.Background(), "sg"); code != 0 {
		t.Fatalf("ensure: %v", kerr.ErrorForCode(code))
	}
	e.log.failWith(kerr.RequestTimedOut.Code)
	if code := c.Delete(context.Background(), "sg"); code != kerr.RequestTimedOut.Code {
		t.Fatalf("delete whose tombstones are not written: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
	if !c.Has("sg") {
		t.Fatal("the group is gone here while its records are not")
	}
	e.log.failWith(0)
	if code := c.Delete(context.Background(), "sg"); code != 0 {
		t.Fatalf("delete again: %v", kerr.ErrorForCode(code))
	}
	if left := e.log.stored(); len(left) != 0 || c.Has("sg") {
		t.Fatalf("%d records left after the group was deleted, known %v", len(left), c.Has("sg"))
	}
}

// TestTimedOutRemovalWrittenAgain: the removal of a member whose session timed
// out is written in the background; when that write fails, it is written again
// (as Kafka's coordinator retries its session timeout), so that the next
// coordinator does not load the member back.
func TestTimedOutRemovalWrittenAgain(t *testing.T) {
	e := &shareTestEnv{t: t, now: time.Unix(1000, 0), log: &memoryLog{records: map[string][]byte{}},
		topics: map[string]TopicInfo{"a": {ID: [16]byte{1}, Partitions: 1}}}
	c := e.coordinator()
	e.ok("m1 joins", e.heartbeat(c, "m1", 0, "a"))
	e.now = e.now.Add(time.Minute) // past the session timeout
	e.log.failWith(kerr.NotEnoughReplicas.Code)
	if n := c.Members("sg"); n != 0 {
		t.Fatalf("%d members after the session timeout", n)
	}
	e.log.failWith(0)
	waitFor(t, "the removal written", func() bool {
		c2 := e.coordinator()
		c2.LoadShareGroups(0, e.log.stored())
		return c2.Has("sg") && c2.Members("sg") == 0
	})
}

// TestJoinRetriedAfterFailedWrite: a member whose first join was not written
// (its heartbeat answered an error) and that joins again is written whole,
// metadata included: the next coordinator loads it rather than dropping it as
// half deleted.
func TestJoinRetriedAfterFailedWrite(t *testing.T) {
	e := &shareTestEnv{t: t, now: time.Unix(1000, 0), log: &memoryLog{records: map[string][]byte{}},
		topics: map[string]TopicInfo{"a": {ID: [16]byte{1}, Partitions: 1}}}
	c := e.coordinator()
	e.log.failWith(kerr.NotEnoughReplicas.Code)
	if r := e.heartbeat(c, "m1", 0, "a"); r.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("join whose write failed: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	e.log.failWith(0)
	e.ok("m1 joins again", e.heartbeat(c, "m1", 0, "a"))
	c2 := e.coordinator()
	c2.LoadShareGroups(0, e.log.stored())
	if n := c2.Members("sg"); n != 1 {
		t.Fatalf("%d members loaded after m1's join was written, want 1", n)
	}
}
