package cluster

import (
	"log/slog"
	"maps"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"skiff/acl"
	"skiff/quota"
)

// Snapshot is an immutable view of the metadata at one etcd revision. All
// of its methods are cheap reads without locks. Returned Topics and
// PartitionStates share memory with the snapshot: do not modify them.
type Snapshot struct {
	rev       int64
	clusterID string
	brokers   map[int32]Broker
	topics    map[string]*topicState
	names     []string // sorted keys of topics
	// candidates are the controller election's keys (key -> create revision and
	// broker id); the one with the lowest create revision is the controller.
	candidates map[string]candidate
	// draining holds the brokers whose replicas are being moved away.
	draining map[int32]bool
	// elections are the elections asked for and not yet planned (elections.go).
	elections map[TopicPartition]election
	// reassignments are the reassignments in progress (reassignments.go).
	reassignments map[TopicPartition]Reassignment
	// brokerConfigs holds the dynamic broker configs by broker id (ClusterDefault
	// for every broker).
	brokerConfigs map[int32]map[string]string
	// aclByKey are the ACLs by key; acls indexes them for the authorizer.
	aclByKey map[string]acl.Binding
	acls     *acl.Set
	// quotas are the client quotas by entity.
	quotas quota.Set
	// departed holds the brokers whose registration this cache saw end, and when,
	// until they register again (for ControllerConfig.DepartGrace).
	departed map[int32]departure

	// changed is closed when a newer snapshot replaces this one.
	changed chan struct{}
}

// topicState is a topic with its partition states; parts[p] is nil until
// the key of partition p is seen. A topicState is never modified once
// published: a change makes a new one.
type topicState struct {
	topic Topic
	parts []*PartitionState
}

type candidate struct {
	createRev int64
	broker    int32
}

var emptySnapshot = &Snapshot{changed: make(chan struct{})}

// BrokerEpoch returns the epoch of live broker id's registration, 0 if not live.
func (s *Snapshot) BrokerEpoch(id int32) int64 { return s.brokers[id].Epoch }

// departure is a broker whose registration ended, with when the cache saw it end.
type departure struct {
	b  Broker
	at time.Time
}

// graced returns s with the brokers that departed less than grace before now, and
// not by leaving (Broker.Leaving), counted as live, and when the first of those
// graces ends (zero: there is none).
func (s *Snapshot) graced(grace time.Duration, now time.Time) (*Snapshot, time.Time) {
	var until time.Time
	var extra []Broker
	for _, d := range s.departed {
		end := d.at.Add(grace)
		if d.b.Leaving || !now.Before(end) {
			continue
		}
		extra = append(extra, d.b)
		if until.IsZero() || end.Before(until) {
			until = end
		}
	}
	if len(extra) == 0 {
		return s, until
	}
	c := *s
	c.brokers = maps.Clone(s.brokers)
	if c.brokers == nil {
		c.brokers = map[int32]Broker{}
	}
	for _, b := range extra {
		c.brokers[b.ID] = b
	}
	return &c, until
}

// Controller returns the broker id of the elected controller, or NoLeader.
func (s *Snapshot) Controller() int32 {
	best, id := int64(0), NoLeader
	for _, c := range s.candidates {
		if best == 0 || c.createRev < best {
			best, id = c.createRev, c.broker
		}
	}
	return id
}

// Revision is the etcd revision this snapshot reflects: every change up to
// and including it is visible.
func (s *Snapshot) Revision() int64 { return s.rev }

// Changed is closed when a newer snapshot has replaced this one.
func (s *Snapshot) Changed() <-chan struct{} { return s.changed }

// ClusterID is the cluster id, "" before EnsureCluster ran.
func (s *Snapshot) ClusterID() string { return s.clusterID }

// Topic returns a topic by name.
func (s *Snapshot) Topic(name string) (Topic, bool) {
	ts, ok := s.topics[name]
	if !ok {
		return Topic{}, false
	}
	return ts.topic, true
}

// Topics returns every topic, sorted by name.
func (s *Snapshot) Topics() []Topic {
	out := make([]Topic, len(s.names))
	for i, n := range s.names {
		out[i] = s.topics[n].topic
	}
	return out
}

// SameTopic reports whether topic name, and the state of every one of its
// partitions, are in s as they were in prev (false when prev is nil or either
// lacks the topic). A snapshot copies a topic's state only when a change
// touches it, so this is one comparison, whatever the partitions.
func (s *Snapshot) SameTopic(prev *Snapshot, name string) bool {
	if prev == nil {
		return false
	}
	ts := s.topics[name]
	return ts != nil && ts == prev.topics[name]
}

// TopicNames returns the sorted topic names. The slice is shared: do not
// modify it.
func (s *Snapshot) TopicNames() []string { return s.names }

// Partition returns the state of one partition.
func (s *Snapshot) Partition(topic string, p int32) (PartitionState, bool) {
	ts, ok := s.topics[topic]
	if !ok || p < 0 || int(p) >= len(ts.parts) || ts.parts[p] == nil {
		return PartitionState{}, false
	}
	return *ts.parts[p], true
}

// ACLs returns the cluster's ACLs, indexed for acl.Authorizer (never nil).
func (s *Snapshot) ACLs() *acl.Set {
	if s.acls == nil {
		return emptyACLs
	}
	return s.acls
}

var emptyACLs = acl.NewSet(nil)

// Quotas returns the client quotas by entity; do not modify them.
func (s *Snapshot) Quotas() quota.Set { return s.quotas }

// Brokers returns the live brokers, sorted by id.
func (s *Snapshot) Brokers() []Broker {
	out := make([]Broker, 0, len(s.brokers))
	for _, b := range s.brokers {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Broker) int { return int(a.ID) - int(b.ID) })
	return out
}

// Broker returns a live broker by id.
func (s *Snapshot) Broker(id int32) (Broker, bool) {
	b, ok := s.brokers[id]
	return b, ok
}

// builder derives the next snapshot from a base by applying etcd events,
// copying only what changes (copy on write).
type builder struct {
	base, next    *Snapshot
	logger        *slog.Logger
	ownTopics     bool                                 // next.topics is a private copy
	ownBrokers    bool                                 // next.brokers is a private copy
	ownState      map[string]bool                      // next.topics[name] is a private copy
	ownACLs       bool                                 // next.aclByKey is a private copy, acls to be rebuilt
	orphans       map[string]map[int32]*PartitionState // partitions seen before their topic
	topicSetDirty bool                                 // names must be recomputed
}

func newBuilder(base *Snapshot, logger *slog.Logger) *builder {
	next := *base
	return &builder{base: base, next: &next, logger: logger, ownState: map[string]bool{}}
}

func (b *builder) topics() map[string]*topicState {
	if !b.ownTopics {
		b.next.topics = maps.Clone(b.next.topics)
		if b.next.topics == nil {
			b.next.topics = map[string]*topicState{}
		}
		b.ownTopics = true
	}
	return b.next.topics
}

func (b *builder) brokers() map[int32]Broker {
	if !b.ownBrokers {
		b.next.brokers = maps.Clone(b.next.brokers)
		if b.next.brokers == nil {
			b.next.brokers = map[int32]Broker{}
		}
		b.ownBrokers = true
	}
	return b.next.brokers
}

// state returns a private copy of a topic's state, or nil.
func (b *builder) state(name string) *topicState {
	ts := b.next.topics[name]
	if ts == nil || b.ownState[name] {
		return ts
	}
	cp := &topicState{topic: ts.topic, parts: slices.Clone(ts.parts)}
	b.topics()[name] = cp
	b.ownState[name] = true
	return cp
}

// apply applies one event (a put, or a delete when del is set).
func (b *builder) apply(kv *mvccpb.KeyValue, del bool) {
	key := string(kv.Key)
	kind, topic, p := parseKey(key)
	switch kind {
	case keyIsCluster:
		if del {
			b.next.clusterID = ""
			return
		}
		cv, err := decodeCluster(kv.Value)
		if err != nil {
			b.logger.Error("ignoring metadata key", "key", key, "err", err)
			return
		}
		b.next.clusterID = cv.ClusterID

	case keyIsDraining:
		b.next.draining = maps.Clone(b.next.draining)
		if b.next.draining == nil {
			b.next.draining = map[int32]bool{}
		}
		if del {
			delete(b.next.draining, p)
		} else {
			b.next.draining[p] = true
		}

	case keyIsElection:
		applyPartitionMark(b, &b.next.elections, TopicPartition{topic, p}, key, del, func() (election, error) {
			typ, err := decodeElection(key, kv.Value)
			return election{typ: typ, modRev: kv.ModRevision}, err
		})
	case keyIsReassignment:
		applyPartitionMark(b, &b.next.reassignments, TopicPartition{topic, p}, key, del, func() (Reassignment, error) {
			return decodeReassignment(key, kv.Value, kv.ModRevision)
		})

	case keyIsBrokerConfigs:
		b.next.brokerConfigs = maps.Clone(b.next.brokerConfigs)
		if b.next.brokerConfigs == nil {
			b.next.brokerConfigs = map[int32]map[string]string{}
		}
		if del {
			delete(b.next.brokerConfigs, p)
			return
		}
		cfgs, err := decodeBrokerConfigs(key, kv.Value)
		if err != nil {
			b.logger.Error("ignoring metadata key", "key", key, "err", err)
			return
		}
		b.next.brokerConfigs[p] = cfgs
	case keyIsACL:
		if !b.ownACLs {
			b.next.aclByKey = maps.Clone(b.next.aclByKey)
			if b.next.aclByKey == nil {
				b.next.aclByKey = map[string]acl.Binding{}
			}
			b.ownACLs = true
		}
		if del {
			delete(b.next.aclByKey, key)
			return
		}
		ab, err := decodeACL(key, kv.Value)
		if err != nil {
			delete(b.next.aclByKey, key)
			b.logger.Error("ignoring metadata key", "key", key, "err", err)
			return
		}
		b.next.aclByKey[key] = ab

	case keyIsQuota:
		e, _ := parseQuotaKey(key)
		b.next.quotas = maps.Clone(b.next.quotas)
		if b.next.quotas == nil {
			b.next.quotas = quota.Set{}
		}
		if del {
			delete(b.next.quotas, e)
			return
		}
		v, err := decodeQuotas(key, kv.Value)
		if err != nil {
			delete(b.next.quotas, e)
			b.logger.Error("ignoring metadata key", "key", key, "err", err)
			return
		}
		b.next.quotas[e] = v

	case keyIsCandidate:
		b.next.candidates = maps.Clone(b.next.candidates)
		if b.next.candidates == nil {
			b.next.candidates = map[string]candidate{}
		}
		if del {
			delete(b.next.candidates, key)
			return
		}
		id, err := parseBrokerID(string(kv.Value))
		if err != nil {
			b.logger.Error("ignoring metadata key", "key", key, "err", err)
			return
		}
		b.next.candidates[key] = candidate{createRev: kv.CreateRevision, broker: id}

	case keyIsBroker:
		b.next.departed = maps.Clone(b.next.departed)
		if b.next.departed == nil {
			b.next.departed = map[int32]departure{}
		}
		if del {
			if old, ok := b.next.brokers[p]; ok {
				b.next.departed[p] = departure{b: old, at: time.Now()}
			}
			delete(b.brokers(), p)
			return
		}
		delete(b.next.departed, p)
		br, err := decodeRegistration(key, kv.Value, kv.CreateRevision)
		if err != nil {
			b.logger.Error("ignoring metadata key", "key", key, "err", err)
			return
		}
		b.brokers()[br.ID] = br

	case keyIsTopic:
		if del {
			if _, ok := b.next.topics[topic]; ok {
				delete(b.topics(), topic)
				delete(b.ownState, topic)
				b.topicSetDirty = true
			}
			return
		}
		t, err := decodeTopic(key, kv.Value)
		if err != nil {
			b.logger.Error("ignoring metadata key", "key", key, "err", err)
			return
		}
		old := b.next.topics[topic]
		ts := &topicState{topic: t, parts: make([]*PartitionState, t.Partitions)}
		if old != nil && old.topic.ID == t.ID {
			copy(ts.parts, old.parts) // same topic, new configs or more partitions
		} else {
			b.topicSetDirty = true
		}
		for p, st := range b.orphans[topic] {
			if p < t.Partitions {
				ts.parts[p] = st
			}
		}
		delete(b.orphans, topic)
		b.topics()[topic] = ts
		b.ownState[topic] = true

	case keyIsPartition:
		var st *PartitionState
		if !del {
			s, err := decodePartition(key, kv.Value)
			if err != nil {
				b.logger.Error("ignoring metadata key", "key", key, "err", err)
				return
			}
			st = &s
		}
		ts := b.state(topic)
		if ts == nil || p >= int32(len(ts.parts)) {
			// Written before its topic in the same transaction, or (in a
			// re-list, sorted by key) listed before /skiff/topics/.
			if st != nil {
				if b.orphans == nil {
					b.orphans = map[string]map[int32]*PartitionState{}
				}
				if b.orphans[topic] == nil {
					b.orphans[topic] = map[int32]*PartitionState{}
				}
				b.orphans[topic][p] = st
			} else {
				delete(b.orphans[topic], p)
			}
			return
		}
		ts.parts[p] = st
	}
}

// build finishes the next snapshot at revision rev.
func (b *builder) build(rev int64) *Snapshot {
	for topic, ps := range b.orphans {
		if len(ps) > 0 {
			b.logger.Warn("partition state without its topic", "topic", topic, "partitions", len(ps))
		}
	}
	if b.topicSetDirty {
		b.next.names = slices.Sorted(maps.Keys(b.next.topics))
	}
	if b.ownACLs {
		b.next.acls = acl.NewSet(slices.Collect(maps.Values(b.next.aclByKey)))
	}
	b.next.rev = rev
	b.next.changed = make(chan struct{})
	return b.next
}

// EventKind is the kind of an Event.
type EventKind int

// Event kinds.
const (
	// TopicCreated: a topic appeared (Event.Topic), with all its partitions.
	TopicCreated EventKind = iota + 1
	// TopicDeleted: a topic went away (Event.Topic is its last state). A
	// topic deleted and created again under the same name between two
	// snapshots is reported as TopicDeleted then TopicCreated (new ID).
	TopicDeleted
	// TopicUpdated: same topic id, new configs, partition count or
	// assignment (Event.Topic is the new state).
	TopicUpdated
	// PartitionChanged: the state of Event.Partition of Event.Topic changed
	// from Event.Old to Event.New (not reported for created topics).
	PartitionChanged
	// BrokerRegistered: Event.Broker registered or changed its address.
	BrokerRegistered
	// BrokerGone: Event.Broker's registration went away.
	BrokerGone
)

func (k EventKind) String() string {
	switch k {
	case TopicCreated:
		return "TopicCreated"
	case TopicDeleted:
		return "TopicDeleted"
	case TopicUpdated:
		return "TopicUpdated"
	case PartitionChanged:
		return "PartitionChanged"
	case BrokerRegistered:
		return "BrokerRegistered"
	case BrokerGone:
		return "BrokerGone"
	}
	return "EventKind(?)"
}

// Event is one difference between two snapshots.
type Event struct {
	Kind      EventKind
	Topic     Topic
	Partition int32
	Old, New  PartitionState
	Broker    Broker
}

// Diff returns the events that turn snapshot a into b, in this order:
// deleted topics, created topics, updated topics, changed partitions, gone
// brokers, registered brokers; each group sorted by name (then partition)
// or id. a may be nil (no topics, no brokers).
func Diff(a, b *Snapshot) []Event {
	if a == nil {
		a = emptySnapshot
	}
	var deleted, created, updated, parts, gone, registered []Event
	for _, name := range a.names {
		ots := a.topics[name]
		nts, ok := b.topics[name]
		if !ok || nts.topic.ID != ots.topic.ID {
			deleted = append(deleted, Event{Kind: TopicDeleted, Topic: ots.topic})
		}
	}
	for _, name := range b.names {
		nts := b.topics[name]
		ots, ok := a.topics[name]
		if !ok || nts.topic.ID != ots.topic.ID {
			created = append(created, Event{Kind: TopicCreated, Topic: nts.topic})
			continue
		}
		if nts == ots {
			continue // untouched: shared by both snapshots
		}
		if !topicEqual(ots.topic, nts.topic) {
			updated = append(updated, Event{Kind: TopicUpdated, Topic: nts.topic})
		}
		for p, np := range nts.parts {
			var op *PartitionState
			if p < len(ots.parts) {
				op = ots.parts[p]
			}
			if np == op || np == nil || (op != nil && partitionEqual(*op, *np)) {
				continue
			}
			e := Event{Kind: PartitionChanged, Topic: nts.topic, Partition: int32(p), New: *np}
			if op != nil {
				e.Old = *op
			}
			parts = append(parts, e)
		}
	}
	for id, ob := range a.brokers {
		if _, ok := b.brokers[id]; !ok {
			gone = append(gone, Event{Kind: BrokerGone, Broker: ob})
		}
	}
	for id, nb := range b.brokers {
		if ob, ok := a.brokers[id]; !ok || !brokerEqual(ob, nb) {
			registered = append(registered, Event{Kind: BrokerRegistered, Broker: nb})
		}
	}
	byBroker := func(x, y Event) int { return int(x.Broker.ID) - int(y.Broker.ID) }
	slices.SortFunc(gone, byBroker)
	slices.SortFunc(registered, byBroker)
	return slices.Concat(deleted, created, updated, parts, gone, registered)
}

func topicEqual(a, b Topic) bool {
	return a.Name == b.Name && a.ID == b.ID && a.Partitions == b.Partitions &&
		a.ReplicationFactor == b.ReplicationFactor && maps.Equal(a.Configs, b.Configs) &&
		slices.EqualFunc(a.Assignment, b.Assignment, slices.Equal[[]int32])
}

func brokerEqual(a, b Broker) bool {
	return a.ID == b.ID && a.Host == b.Host && a.Port == b.Port && a.Rack == b.Rack &&
		a.DataDirID == b.DataDirID && a.Epoch == b.Epoch && slices.Equal(a.Listeners, b.Listeners)
}

func partitionEqual(a, b PartitionState) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch &&
		a.PartitionEpoch == b.PartitionEpoch && slices.Equal(a.ISR, b.ISR)
}
