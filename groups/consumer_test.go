package groups

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicID is the test topics' id: derived from the name.
func topicID(name string) [16]byte {
	s := sha256.Sum256([]byte(name))
	var id [16]byte
	copy(id[:], s[:])
	return id
}

// newConsumerEnv is an env whose topics are known to the KIP-848 assignors too.
func newConsumerEnv(t *testing.T, opts ...func(*Config)) *env {
	var e *env
	opts = append([]func(*Config){func(c *Config) {
		c.Topics = func() []TopicMeta {
			e.topicsMu.Lock()
			defer e.topicsMu.Unlock()
			var out []TopicMeta
			for n, p := range e.topics {
				out = append(out, TopicMeta{Name: n, ID: topicID(n), Partitions: p})
			}
			return out
		}
	}}, opts...)
	// The closure reads e once newEnv has returned; the first heartbeat comes later.
	e = newEnv(t, opts...)
	return e
}

// cgm is a test member of a KIP-848 group: what it was last told.
type cgm struct {
	id       string
	epoch    int32
	owned    partSet
	instance *string
}

func (e *env) cgHeartbeat(group string, m *cgm, epoch int32, topics []string, owned partSet) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = group, m.id, epoch, m.instance
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = topics
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if owned != nil && epoch != 0 {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for id, ps := range owned.byTopic() {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = id, ps
			req.Topics = append(req.Topics, rt)
		}
	}
	return e.c.ConsumerGroupHeartbeat(context.Background(), Client{ID: "test", Host: "/127.0.0.1"}, req)
}

// join makes a member join group subscribed to topics.
func (e *env) cgJoin(group, id string, topics ...string) *cgm {
	e.t.Helper()
	m := &cgm{id: id, owned: partSet{}}
	e.cgBeat(group, m, topics...)
	return m
}

// cgBeat sends m's heartbeat (a join at epoch 0), reporting what it owns, and
// takes what it is told. It fails the test on an error.
func (e *env) cgBeat(group string, m *cgm, topics ...string) {
	e.t.Helper()
	r := e.cgHeartbeat(group, m, m.epoch, topics, m.owned)
	wantCode(e.t, "heartbeat of "+m.id, r.ErrorCode, nil)
	m.epoch = r.MemberEpoch
	if r.Assignment != nil {
		m.owned = partSet{}
		for _, t := range r.Assignment.Topics {
			for _, p := range t.Partitions {
				m.owned[topicPart{t.TopicID, p}] = struct{}{}
			}
		}
	}
}

// noOverlap fails if two members own one partition.
func noOverlap(t *testing.T, ms ...*cgm) {
	t.Helper()
	seen := map[topicPart]string{}
	for _, m := range ms {
		for tp := range m.owned {
			if o, ok := seen[tp]; ok {
				t.Fatalf("partition %d owned by %s and %s", tp.partition, o, m.id)
			}
			seen[tp] = m.id
		}
	}
}

// A partition moves only after its owner revoked it; the epochs say who is where.
func TestConsumerRevokeBeforeAssign(t *testing.T) {
	e := newConsumerEnv(t)
	m1 := e.cgJoin("g", "m1", "t")
	if len(m1.owned) != 4 || m1.epoch != 1 {
		t.Fatalf("m1 alone: %d partitions at epoch %d", len(m1.owned), m1.epoch)
	}
	m2 := e.cgJoin("g", "m2", "t")
	if len(m2.owned) != 0 {
		t.Fatalf("m2 got %d partitions m1 still owns", len(m2.owned))
	}
	// m1 is told to give two up; until it says it did, m2 gets nothing.
	e.cgBeat("g", m1)
	if len(m1.owned) != 2 || m1.epoch != 1 {
		t.Fatalf("m1 after m2 joined: %d partitions at epoch %d", len(m1.owned), m1.epoch)
	}
	stale := m1.owned.clone()
	g, _ := e.c.lockGroup("g", false)
	for tp := range g.cg.members["m1"].revoking {
		stale[tp] = struct{}{}
	}
	g.mu.Unlock()
	r := e.cgHeartbeat("g", &cgm{id: "m1"}, 1, nil, stale) // still owns them
	wantCode(t, "m1 before revoking", r.ErrorCode, nil)
	e.cgBeat("g", m2)
	if len(m2.owned) != 0 {
		t.Fatalf("m2 got partitions before m1 revoked them")
	}
	e.cgBeat("g", m1) // revoked
	if m1.epoch != 2 {
		t.Fatalf("m1 at epoch %d after revoking, want 2", m1.epoch)
	}
	e.cgBeat("g", m2)
	if len(m2.owned) != 2 || m2.epoch != 2 {
		t.Fatalf("m2: %d partitions at epoch %d", len(m2.owned), m2.epoch)
	}
	noOverlap(t, m1, m2)
	if d := e.describeConsumer("g"); d[:6] != "Stable" {
		t.Fatalf("described %s", d)
	}

	// Fencing: an epoch ahead of the member's is refused; the previous epoch with
	// what it owns is the retry of a lost answer.
	wantCode(t, "future epoch", e.cgHeartbeat("g", &cgm{id: "m1"}, 9, nil, m1.owned).ErrorCode, kerr.FencedMemberEpoch)
	wantCode(t, "previous epoch", e.cgHeartbeat("g", &cgm{id: "m1"}, 1, nil, m1.owned).ErrorCode, nil)

	// m1 leaves: m2 gets everything at the next epoch.
	wantCode(t, "leave", e.cgHeartbeat("g", &cgm{id: "m1"}, -1, nil, nil).ErrorCode, nil)
	e.cgBeat("g", m2)
	if len(m2.owned) != 4 || m2.epoch != 3 {
		t.Fatalf("m2 after m1 left: %d partitions at epoch %d", len(m2.owned), m2.epoch)
	}
}

// A member that stops heartbeating is removed after the session timeout.
func TestConsumerSessionTimeout(t *testing.T) {
	e := newConsumerEnv(t, func(c *Config) { c.ConsumerSessionTimeout = 10 * time.Second })
	m1 := e.cgJoin("g", "m1", "t")
	m2 := e.cgJoin("g", "m2", "t")
	e.cgBeat("g", m1)
	e.cgBeat("g", m1)
	e.cgBeat("g", m2)
	noOverlap(t, m1, m2)
	if len(m1.owned)+len(m2.owned) != 4 {
		t.Fatalf("owned %d + %d", len(m1.owned), len(m2.owned))
	}
	e.clock.Advance(6 * time.Second)
	e.cgBeat("g", m2)
	e.clock.Advance(6 * time.Second) // m1 silent for 12 s
	e.cgBeat("g", m2)
	if len(m2.owned) != 4 {
		t.Fatalf("m2 owns %d after m1 timed out", len(m2.owned))
	}
	wantCode(t, "m1 after its session", e.cgHeartbeat("g", &cgm{id: "m1"}, m1.epoch, nil, m1.owned).ErrorCode, kerr.UnknownMemberID)
}

// The group's state is in the log: a new coordinator loads members, epochs and
// assignments, and members carry on without noticing.
func TestConsumerGroupReload(t *testing.T) {
	e := newConsumerEnv(t)
	m1 := e.cgJoin("g", "m1", "t", "u")
	m2 := e.cgJoin("g", "m2", "t")
	for range 3 {
		e.cgBeat("g", m1)
		e.cgBeat("g", m2)
	}
	before := e.describeConsumer("g")
	e.stop()
	e.start()
	after := e.describeConsumer("g")
	if before != after {
		t.Fatalf("before reload:\n%s\nafter:\n%s", before, after)
	}
	e.cgBeat("g", m1)
	e.cgBeat("g", m2)
	noOverlap(t, m1, m2)
	if len(m1.owned)+len(m2.owned) != 6 {
		t.Fatalf("owned %d + %d after reload", len(m1.owned), len(m2.owned))
	}
	// Deleting the group needs it empty, then leaves nothing to load.
	for _, m := range []*cgm{m1, m2} {
		wantCode(t, "leave", e.cgHeartbeat("g", m, -1, nil, nil).ErrorCode, nil)
	}
	resp := e.c.DeleteGroups(context.Background(), &kmsg.DeleteGroupsRequest{Groups: []string{"g"}})
	wantCode(t, "delete", resp.Groups[0].ErrorCode, nil)
	e.stop()
	e.start()
	d := e.c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}})
	wantCode(t, "describe deleted", d.Groups[0].ErrorCode, kerr.GroupIDNotFound)
}

func (e *env) describeConsumer(group string) string {
	e.t.Helper()
	d := e.c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{group}})
	g := d.Groups[0]
	wantCode(e.t, "describe", g.ErrorCode, nil)
	out := g.State + " " + fmt.Sprint(g.Epoch) + "/" + fmt.Sprint(g.AssignmentEpoch)
	for _, m := range g.Members {
		out += "\n" + m.MemberID + " " + fmt.Sprint(m.MemberEpoch) + " " + fmt.Sprint(m.SubscribedTopics)
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				out += " " + tp.Topic + ":"
				for _, p := range tp.Partitions {
					out += fmt.Sprint(p) + ","
				}
			}
			out += " |"
		}
	}
	return out
}

// Static members: a static leave keeps the assignment for the instance, which
// comes back under a new member id with it; a second live holder is refused.
func TestConsumerStaticMember(t *testing.T) {
	e := newConsumerEnv(t)
	inst := "instance-1"
	m1 := &cgm{id: "a", owned: partSet{}, instance: &inst}
	e.cgBeat("g", m1, "t")
	other := e.cgJoin("g", "b", "t")
	e.cgBeat("g", m1)
	e.cgBeat("g", m1)
	e.cgBeat("g", other)
	held := m1.owned.clone()
	r := e.cgHeartbeat("g", &cgm{id: "c", instance: &inst}, 0, []string{"t"}, nil)
	wantCode(t, "second holder of the instance", r.ErrorCode, kerr.UnreleasedInstanceID)
	r = e.cgHeartbeat("g", &cgm{id: "a", instance: &inst}, -2, nil, nil)
	wantCode(t, "static leave", r.ErrorCode, nil)
	e.cgBeat("g", other)
	noOverlap(t, m1, other) // the partitions wait for the instance
	back := &cgm{id: "c", owned: partSet{}, instance: &inst}
	e.cgBeat("g", back, "t")
	if !back.owned.equal(held) {
		t.Fatalf("the instance came back with %v, had %v", back.owned, held)
	}
}

// The uniform assignor balances, keeps partitions where they were, and respects
// subscriptions; range gives contiguous ranges.
func TestAssignors(t *testing.T) {
	tID, uID := topicID("t"), topicID("u")
	subs := func(ids ...[16]byte) map[[16]byte]bool {
		m := map[[16]byte]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	in := assignInput{members: []string{"a", "b", "c"},
		subs:  map[string]map[[16]byte]bool{"a": subs(tID), "b": subs(tID), "c": subs(tID)},
		parts: map[[16]byte]int32{tID: 7}}
	out := assignUniform(in)
	counts := []int{len(out["a"]), len(out["b"]), len(out["c"])}
	slices.Sort(counts)
	if !slices.Equal(counts, []int{2, 2, 3}) {
		t.Fatalf("uniform counts %v", counts)
	}
	in.members = append(in.members, "d")
	in.subs["d"] = subs(tID)
	in.prev = out
	next := assignUniform(in)
	moved := 0
	for _, m := range []string{"a", "b", "c"} {
		for tp := range out[m] {
			if _, ok := next[m][tp]; !ok {
				moved++
			}
		}
	}
	if moved != len(next["d"]) || len(next["d"]) != 1 {
		t.Fatalf("a fourth member moved %d partitions, got %d", moved, len(next["d"]))
	}

	het := assignInput{members: []string{"a", "b"},
		subs:  map[string]map[[16]byte]bool{"a": subs(tID), "b": subs(tID, uID)},
		parts: map[[16]byte]int32{tID: 4, uID: 2}}
	out = assignUniform(het)
	for tp := range out["a"] {
		if tp.topic == uID {
			t.Fatal("a got a partition of a topic it does not subscribe to")
		}
	}
	if len(out["a"]) != 3 || len(out["b"]) != 3 {
		t.Fatalf("heterogeneous: %d and %d", len(out["a"]), len(out["b"]))
	}

	rng := assignRange(assignInput{members: []string{"a", "b"},
		subs:  map[string]map[[16]byte]bool{"a": subs(tID), "b": subs(tID)},
		parts: map[[16]byte]int32{tID: 5}})
	if got := rng["a"].byTopic()[tID]; !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("range gave a %v", got)
	}
	if got := rng["b"].byTopic()[tID]; !slices.Equal(got, []int32{3, 4}) {
		t.Fatalf("range gave b %v", got)
	}
}

// Regex subscriptions match whole topic names, internal topics too.
func TestConsumerRegex(t *testing.T) {
	e := newConsumerEnv(t)
	e.setTopic("__consumer_offsets", 1)
	e.setTopic("tt", 3)
	m := &cgm{id: "m", owned: partSet{}}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", "m", 30000
	req.SubscribedTopicRegex = kmsg.StringPtr("t|__consumer.*")
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	r := e.c.ConsumerGroupHeartbeat(context.Background(), Client{ID: "x"}, req)
	wantCode(t, "regex join", r.ErrorCode, nil)
	m.epoch = r.MemberEpoch
	got := map[[16]byte]int{}
	for _, tp := range r.Assignment.Topics {
		got[tp.TopicID] = len(tp.Partitions)
	}
	if got[topicID("t")] != 4 || got[topicID("__consumer_offsets")] != 1 || got[topicID("tt")] != 0 || len(got) != 2 {
		t.Fatalf("regex assigned %v", got)
	}
	req.MemberID = "m2"
	req.SubscribedTopicRegex = kmsg.StringPtr("(")
	wantCode(t, "bad regex", e.c.ConsumerGroupHeartbeat(context.Background(), Client{}, req).ErrorCode, kerr.InvalidRegularExpression)
}

// A regex matches only the topics the member's principal may DESCRIBE, as the
// rights are at each heartbeat: a right granted or taken moves the group epoch.
func TestConsumerRegexDescribeRights(t *testing.T) {
	e := newConsumerEnv(t)
	e.setTopic("ra", 2)
	e.setTopic("rb", 3)
	var mu sync.Mutex
	allowed := map[string]bool{"ra": true}
	cl := Client{ID: "x", MayDescribe: func(topic string) bool {
		mu.Lock()
		defer mu.Unlock()
		return allowed[topic]
	}}
	m := &cgm{id: "m", owned: partSet{}}
	beat := func(what string) {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "g", m.id, m.epoch
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for id, ps := range m.owned.byTopic() {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: ps})
		}
		if m.epoch == 0 {
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicRegex = kmsg.StringPtr("r.")
		}
		r := e.c.ConsumerGroupHeartbeat(context.Background(), cl, req)
		wantCode(t, what, r.ErrorCode, nil)
		m.epoch = r.MemberEpoch
		if r.Assignment != nil {
			m.owned = partSet{}
			for _, tp := range r.Assignment.Topics {
				for _, p := range tp.Partitions {
					m.owned[topicPart{tp.TopicID, p}] = struct{}{}
				}
			}
		}
	}
	count := func() map[string]int {
		out := map[string]int{}
		for tp := range m.owned {
			for _, n := range []string{"ra", "rb"} {
				if tp.topic == topicID(n) {
					out[n]++
				}
			}
		}
		return out
	}
	beat("join")
	if got := count(); got["ra"] != 2 || got["rb"] != 0 {
		t.Fatalf("with DESCRIBE on ra only: %v", got)
	}
	joined := m.epoch
	mu.Lock()
	allowed["rb"] = true
	mu.Unlock()
	beat("heartbeat after DESCRIBE on rb is granted")
	if got := count(); got["ra"] != 2 || got["rb"] != 3 || m.epoch <= joined {
		t.Fatalf("after granting rb: %v at epoch %d (joined at %d)", got, m.epoch, joined)
	}
	mu.Lock()
	delete(allowed, "ra")
	mu.Unlock()
	beat("heartbeat after DESCRIBE on ra is taken")
	beat("heartbeat after revoking ra")
	if got := count(); got["ra"] != 0 || got["rb"] != 3 {
		t.Fatalf("after taking ra: %v", got)
	}

	// Reloaded, the member's rights are not known until it heartbeats: another
	// member's heartbeat meanwhile leaves its regex's topics as they were.
	e.stop()
	e.start()
	other := e.cgJoin("g", "other", "rb")
	e.cgBeat("g", other)
	d := e.describeConsumer("g")
	if strings.Contains(d, "ra:") {
		t.Fatalf("a topic the member may not describe is assigned after a reload:\n%s", d)
	}
	beat("heartbeat after the reload")
	if got := count(); got["ra"] != 0 {
		t.Fatalf("after the reload: %v", got)
	}
}

// Offset commits to a consumer group carry the member epoch: the current one, or
// an older one for partitions the member still owns; a newer one is stale.
func TestConsumerOffsetCommit(t *testing.T) {
	e := newConsumerEnv(t)
	m1 := e.cgJoin("g", "m1", "t")
	m2 := e.cgJoin("g", "m2", "t")
	e.cgBeat("g", m1)
	e.cgBeat("g", m1) // revoked two: epoch 2
	e.cgBeat("g", m2)
	if m1.epoch != 2 || m2.epoch != 2 {
		t.Fatalf("epochs %d and %d", m1.epoch, m2.epoch)
	}
	mine, theirs := int32(-1), int32(-1)
	for tp := range m1.owned {
		mine = tp.partition
	}
	for tp := range m2.owned {
		theirs = tp.partition
	}
	code := func(member string, epoch, p int32) int16 {
		return e.commit(9, "g", member, epoch, "t", map[int32]int64{p: 5})[p]
	}
	wantCode(t, "member of the consumer protocol before v9", e.commit(8, "g", "m1", 2, "t", map[int32]int64{mine: 5})[mine], kerr.UnsupportedVersion)
	wantCode(t, "current epoch", code("m1", 2, mine), nil)
	wantCode(t, "newer epoch", code("m1", 3, mine), kerr.StaleMemberEpoch)
	wantCode(t, "older epoch, owned partition", code("m1", 1, mine), nil)
	wantCode(t, "older epoch, another member's partition", code("m1", 1, theirs), kerr.StaleMemberEpoch)
	wantCode(t, "unknown member", code("nobody", 2, mine), kerr.UnknownMemberID)
	wantCode(t, "outside the group while it has members", code("", -1, mine), kerr.UnknownMemberID)

	txn := func(version int16, member string, epoch, p int32) int16 {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.SetVersion(version)
		r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = "tx", "g", 7, 0
		r.MemberID, r.Generation = member, epoch
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, 6
		r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
		return e.c.TxnOffsetCommit(context.Background(), r, nil).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "transactional, newer epoch", txn(3, "m1", 3, mine), kerr.IllegalGeneration)
	wantCode(t, "transactional, older epoch, another member's partition", txn(3, "m1", 1, theirs), kerr.IllegalGeneration)
	wantCode(t, "transactional, unknown member", txn(3, "nobody", 2, mine), kerr.UnknownMemberID)
	wantCode(t, "transactional v2 (no member) while the group has members", txn(2, "", -1, mine), kerr.UnknownMemberID)
	wantCode(t, "transactional, current epoch", txn(3, "m1", 2, mine), nil)

	fetchCode := func(member *string, epoch int32) int16 { return e.c.OffsetFetchMemberCode("g", member, epoch) }
	wantCode(t, "fetch without a member", fetchCode(nil, -1), nil)
	wantCode(t, "fetch at the current epoch", fetchCode(&m1.id, 2), nil)
	wantCode(t, "fetch at an older epoch", fetchCode(&m1.id, 1), kerr.StaleMemberEpoch)
	wantCode(t, "fetch by an unknown member", fetchCode(kmsg.StringPtr("nobody"), 2), kerr.UnknownMemberID)
	wantCode(t, "fetch of a group not held", e.c.OffsetFetchMemberCode("no-such-group", &m1.id, 2), nil)
	for _, m := range []*cgm{m1, m2} {
		wantCode(t, "leave", e.cgHeartbeat("g", m, -1, nil, nil).ErrorCode, nil)
	}
	wantCode(t, "outside the group once it is empty", code("", -1, mine), nil)
	if got := e.fetch("g")["t/"+fmt.Sprint(mine)]; got != 5 {
		t.Fatalf("fetched %d", got)
	}
}

// Partitions added while the group was not loaded are assigned once it is: the
// stored metadata hash no longer matches.
func TestConsumerMetadataChangeAcrossReload(t *testing.T) {
	e := newConsumerEnv(t)
	m := e.cgJoin("g", "m", "t")
	e.cgBeat("g", m)
	if len(m.owned) != 4 {
		t.Fatalf("owns %d", len(m.owned))
	}
	before := m.epoch
	e.stop()
	e.setTopic("t", 6)
	e.start()
	e.cgBeat("g", m)
	if len(m.owned) != 6 || m.epoch != before+1 {
		t.Fatalf("after reload with 6 partitions: owns %d at epoch %d (was %d)", len(m.owned), m.epoch, before)
	}
	// Unchanged metadata across a reload moves nothing.
	e.stop()
	e.start()
	e.cgBeat("g", m)
	if m.epoch != before+1 {
		t.Fatalf("epoch moved to %d across a reload without changes", m.epoch)
	}
}
