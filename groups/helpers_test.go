package groups

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"skiff/internal/batch"
	"skiff/logstore"
	"skiff/offsets"
	"skiff/replication"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a Clock whose time moves only when Advance is called; due timers run
// synchronously, in order, in the caller's goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c    *fakeClock
	at   time.Time
	f    func()
	done bool // fired or stopped
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// Advance moves time forward by d, running every timer that falls due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *fakeTimer
		live := c.timers[:0]
		for _, t := range c.timers {
			if t.done {
				continue
			}
			live = append(live, t)
			if !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		c.timers = live
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		next.done = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

// testLog is a __consumer_offsets partition for tests: a real logstore log that
// leads, whose high watermark is its log end offset.
type testLog struct {
	*logstore.Log
	mu      sync.Mutex
	waiters map[chan<- struct{}]struct{}
	hwCap   atomic.Int64 // >= 0: the high watermark stays at most this (followers lag)
	epoch   atomic.Int32 // the leader epoch it leads (or follows) in
	follows atomic.Bool  // set: it does not lead (Append and Read refuse)
}

func openTestLog(t *testing.T, dir string, db *offsets.DB) *testLog {
	t.Helper()
	l, err := logstore.Open(dir, logstore.Config{}, db.LogIndex("__consumer_offsets-0"))
	if err != nil {
		t.Fatal(err)
	}
	tl := &testLog{Log: l, waiters: make(map[chan<- struct{}]struct{})}
	tl.hwCap.Store(-1)
	return tl
}

// setHWCap holds the high watermark at most at cap (-1: none) and wakes waiters.
func (l *testLog) setHWCap(cap int64) {
	l.hwCap.Store(cap)
	l.notify()
}

func (l *testLog) Append(b []byte, _ int16) (replication.AppendResult, error) {
	if l.follows.Load() {
		return replication.AppendResult{}, kerr.NotLeaderForPartition
	}
	epoch := l.epoch.Load()
	base, err := l.Log.Append(b, epoch)
	if err != nil {
		return replication.AppendResult{}, err
	}
	l.notify()
	h, err := batch.ParseHeader(b)
	if err != nil {
		return replication.AppendResult{}, err
	}
	return replication.AppendResult{BaseOffset: base, LastOffset: base + int64(h.LastOffsetDelta), LogAppendTime: -1, LeaderEpoch: epoch}, nil
}

func (l *testLog) IsLeader() bool     { return !l.follows.Load() }
func (l *testLog) LeaderEpoch() int32 { return l.epoch.Load() }

func (l *testLog) AppendFromCoordinator(b []byte) (replication.AppendResult, error) {
	return l.Append(b, -1)
}

// TxnVerification: the test log keeps no transactions; every batch would
// open one.
func (l *testLog) TxnVerification(int64) (uint64, bool) { return 0, true }

func (l *testLog) AppendFromCoordinatorVerified(b []byte, _ uint64) (replication.AppendResult, error) {
	return l.Append(b, -1)
}

// AwaitPreviousMarker: the test log keeps no transactions; nothing is held.
func (l *testLog) AwaitPreviousMarker(context.Context, int64, int16) error { return nil }

func (l *testLog) AppendFromCoordinatorTV2(b []byte) (replication.AppendResult, error) {
	return l.Append(b, -1)
}

func (l *testLog) notify() {
	l.mu.Lock()
	for ch := range l.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	l.mu.Unlock()
}

func (l *testLog) HighWatermark() int64 {
	if c := l.hwCap.Load(); c >= 0 {
		return min(c, l.LogEndOffset())
	}
	return l.LogEndOffset()
}

func (l *testLog) Read(offset, maxBytes int64) (*logstore.Slice, error) {
	if l.follows.Load() {
		return nil, kerr.NotLeaderForPartition
	}
	return l.Log.Read(offset, maxBytes, l.HighWatermark())
}

func (l *testLog) AddWaiter(ch chan<- struct{}) {
	l.mu.Lock()
	l.waiters[ch] = struct{}{}
	l.mu.Unlock()
}

func (l *testLog) RemoveWaiter(ch chan<- struct{}) {
	l.mu.Lock()
	delete(l.waiters, ch)
	l.mu.Unlock()
}

// env is a coordinator leading the one partition of __consumer_offsets, over a log
// and a Pebble database in their own folders (so a test can lose Pebble alone).
type env struct {
	t     *testing.T
	clock *fakeClock
	c     *Coordinator
	log   *testLog
	logDB *offsets.DB // holds the log's own index
	db    *offsets.DB // the coordinator's keyspaces
	dir   string
	cfg   Config
	// topics are the topics that exist and their partition counts (setTopic).
	topicsMu sync.Mutex
	topics   map[string]int32
	// shareGroups, when set, loads the share groups of each coordinator started.
	shareGroups ShareGroups
}

// setTopic makes a topic exist with n partitions (n 0: deletes it).
func (e *env) setTopic(name string, n int32) {
	e.topicsMu.Lock()
	defer e.topicsMu.Unlock()
	if n == 0 {
		delete(e.topics, name)
	} else {
		e.topics[name] = n
	}
}

func newEnv(t *testing.T, opts ...func(*Config)) *env {
	t.Helper()
	e := &env{t: t, clock: newFakeClock(), dir: t.TempDir(), topics: map[string]int32{"t": 4, "u": 2}}
	var err error
	if e.logDB, err = offsets.Open(filepath.Join(e.dir, "logmeta"), offsets.Options{}); err != nil {
		t.Fatal(err)
	}
	e.log = openTestLog(t, filepath.Join(e.dir, "log"), e.logDB)
	e.cfg = Config{
		InitialRebalanceDelay: -1,
		Clock:                 e.clock,
		TopicPartitions: func(topic string) (int32, bool) {
			e.topicsMu.Lock()
			defer e.topicsMu.Unlock()
			n, ok := e.topics[topic]
			return n, ok
		},
	}
	for _, o := range opts {
		o(&e.cfg)
	}
	e.start()
	t.Cleanup(e.close)
	return e
}

// start opens the coordinator's Pebble and elects the partition.
func (e *env) start() {
	e.t.Helper()
	var err error
	if e.db, err = offsets.Open(filepath.Join(e.dir, "meta"), offsets.Options{}); err != nil {
		e.t.Fatal(err)
	}
	cfg := e.cfg
	cfg.DB = e.db
	e.c = New(cfg)
	e.c.SetOffsetsTopic(1)
	if e.shareGroups != nil {
		e.c.SetShareGroups(e.shareGroups)
	}
	e.c.Elect(0, e.log.epoch.Load(), e.log)
	waitFor(e.t, "partition 0 loaded", func() bool { _, code := e.c.shardFor("x"); return code == 0 })
}

// stop closes the coordinator and its Pebble (the log stays open).
func (e *env) stop() {
	if e.c != nil {
		e.c.Close()
		e.db.Close()
		e.c = nil
	}
}

func (e *env) close() {
	e.stop()
	e.log.Close()
	e.logDB.Close()
}

// waitFor polls cond every millisecond until it holds, failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var wantCode int16
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

var client = Client{ID: "test-client", Host: "/127.0.0.1"}

// joinReq is a JoinGroup request of a consumer with the given protocols (each with
// metadata "meta-<name>"), session timeout 6 s and rebalance timeout 10 s.
func joinReq(version int16, group, member string, protocols ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.SetVersion(version)
	r.Group, r.MemberID, r.ProtocolType = group, member, "consumer"
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 6000, 10000
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte("meta-" + p)})
	}
	return r
}

// joinAsync sends a JoinGroup and returns where its answer will arrive.
func (e *env) joinAsync(req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- e.c.JoinGroup(context.Background(), client, req) }()
	return ch
}

func (e *env) syncAsync(group, member string, gen int32, assignments map[string]string) <-chan *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupRequest()
	r.SetVersion(3)
	r.Group, r.MemberID, r.Generation = group, member, gen
	for id, a := range assignments {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(a)})
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { ch <- e.c.SyncGroup(context.Background(), r) }()
	return ch
}

// recv waits for an answer that must come.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no answer to %s", what)
		panic("unreachable")
	}
}

// held checks that no answer has come (yet).
func held[T any](t *testing.T, what string, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s was answered, want it held: %+v", what, v)
	default:
	}
}

// newMember joins group as a new member the v4+ way (MEMBER_ID_REQUIRED first) and
// returns its id and the channel of its held join.
func (e *env) newMember(group string, protocols ...string) (string, <-chan *kmsg.JoinGroupResponse) {
	e.t.Helper()
	r := e.c.JoinGroup(context.Background(), client, joinReq(5, group, "", protocols...))
	wantCode(e.t, "first JoinGroup", r.ErrorCode, kerr.MemberIDRequired)
	if r.MemberID == "" {
		e.t.Fatal("MEMBER_ID_REQUIRED without a member id")
	}
	ch := e.joinAsync(joinReq(5, group, r.MemberID, protocols...))
	e.waitMember(group, r.MemberID)
	return r.MemberID, ch
}

// describe returns the description of one group.
func (e *env) describe(group string) kmsg.DescribeGroupsResponseGroup {
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.SetVersion(4)
	r.Groups = []string{group}
	return e.c.DescribeGroups(r).Groups[0]
}

// waitMember waits until member is listed in group.
func (e *env) waitMember(group, member string) {
	e.t.Helper()
	waitFor(e.t, "member "+member+" in group "+group, func() bool {
		for _, m := range e.describe(group).Members {
			if m.MemberID == member {
				return true
			}
		}
		return false
	})
}

func (e *env) waitState(group, state string) {
	e.t.Helper()
	waitFor(e.t, "group "+group+" "+state, func() bool { return e.describe(group).State == state })
}

func (e *env) heartbeat(group, member string, gen int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.SetVersion(3)
	r.Group, r.MemberID, r.Generation = group, member, gen
	return e.c.Heartbeat(r).ErrorCode
}

// commit commits offsets of topic t (partition -> offset) and returns the codes by partition.
func (e *env) commit(version int16, group, member string, gen int32, topic string, offs map[int32]int64) map[int32]int16 {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.SetVersion(version)
	r.Group, r.MemberID, r.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offs {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		md := "md"
		rp.Metadata = &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = append(r.Topics, rt)
	out := make(map[int32]int16)
	for _, t := range e.c.OffsetCommit(context.Background(), r).Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.ErrorCode
		}
	}
	return out
}

// fetch returns every committed offset of group as "topic/partition" -> offset.
func (e *env) fetch(group string) map[string]int64 {
	e.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.SetVersion(5)
	r.Group = group
	resp := e.c.OffsetFetch(r)
	wantCode(e.t, "OffsetFetch", resp.ErrorCode, nil)
	out := make(map[string]int64)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[t.Topic+"/"+string(rune('0'+p.Partition))] = p.Offset
		}
	}
	return out
}

func (e *env) listGroups() []string {
	r := kmsg.NewPtrListGroupsRequest()
	r.SetVersion(2)
	var out []string
	for _, g := range e.c.ListGroups(r).Groups {
		out = append(out, g.Group)
	}
	sort.Strings(out)
	return out
}

func removeAll(dir string) error { return os.RemoveAll(dir) }

// waitHeld waits until member has a JoinGroup (join) or SyncGroup (!join) held.
func (e *env) waitHeld(group, member string, join bool) {
	e.t.Helper()
	waitFor(e.t, "member "+member+" waiting", func() bool {
		e.c.mu.Lock()
		g := e.c.mu.groups[group]
		e.c.mu.Unlock()
		if g == nil {
			return false
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		m := g.members[member]
		if join {
			return m != nil && m.join != nil
		}
		return m != nil && m.sync != nil
	})
}
