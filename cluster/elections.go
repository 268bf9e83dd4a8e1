package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Elections on demand (Kafka's ElectLeaders): a broker asked for one writes a
// mark per partition under /skiff/elections/; the controller, at its next plan,
// runs the preferred-leader rebalance (preferred) or lets an out-of-sync replica
// lead (unclean) for the marked partitions only, as it would for all of them
// every RebalanceInterval or under unclean.leader.election.enable, and then
// deletes the marks it planned from. The broker waits for the outcome in its
// metadata cache.

const prefixElections = Prefix + "elections/"

// ElectionType is the kind of election asked for, as Kafka numbers it.
type ElectionType int8

const (
	ElectPreferred ElectionType = 0
	ElectUnclean   ElectionType = 1
)

func electionKey(topic string, p int32) string {
	return prefixElections + topic + "/" + formatBrokerID(p)
}

// electionValue is /skiff/elections/<topic>/<p>.
type electionValue struct {
	Version   int       `json:"version"`
	Type      string    `json:"type"` // "preferred" or "unclean"
	Requested time.Time `json:"requested"`
}

func (e ElectionType) String() string {
	if e == ElectUnclean {
		return "unclean"
	}
	return "preferred"
}

// election is a pending mark as the cache saw it.
type election struct {
	typ    ElectionType
	modRev int64
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// RequestElections marks parts for an election of type typ and returns the
// revision of the write, which the caller's cache must reach before it reads the
// outcome.
func (s *Store) RequestElections(ctx context.Context, typ ElectionType, parts []TopicPartition) (int64, error) {
	v := encode(electionValue{Version: valueVersion, Type: typ.String(), Requested: time.Now().UTC()})
	var rev int64
	for chunk := range slices.Chunk(parts, electionsPerTxn) {
		ops := make([]clientv3.Op, 0, len(chunk))
		for _, tp := range chunk {
			ops = append(ops, clientv3.OpPut(electionKey(tp.Topic, tp.Partition), v))
		}
		resp, err := s.client.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: request %s elections: %w", typ, err)
		}
		rev = resp.Header.Revision
	}
	return rev, nil
}

// electionsPerTxn keeps a request for many partitions within etcd's limit of
// operations per transaction (embedetcd.DefaultMaxTxnOps).
const electionsPerTxn = 128

// PendingElection reports whether an election of topic/p is asked for and not
// yet planned by the controller.
func (s *Snapshot) PendingElection(topic string, p int32) bool {
	_, ok := s.elections[TopicPartition{topic, p}]
	return ok
}

// electionAsked returns the election asked for topic/p, if any.
func (s *Snapshot) electionAsked(topic string, p int32) (ElectionType, bool) {
	e, ok := s.elections[TopicPartition{topic, p}]
	return e.typ, ok
}

func parseElectionKey(key string) (string, int32, bool) {
	return parseTopicPartitionKey(strings.TrimPrefix(key, prefixElections))
}

// parseTopicPartitionKey parses "<topic>/<p>", the end of a key per partition.
func parseTopicPartitionKey(rest string) (string, int32, bool) {
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return "", 0, false
	}
	p, ok := parseKeyNumber(rest[i+1:])
	return rest[:i], p, ok && p >= 0
}

func decodeElection(key string, data []byte) (ElectionType, error) {
	var v electionValue
	if err := decode(key, data, &v, func() int { return v.Version }); err != nil {
		return 0, err
	}
	switch v.Type {
	case "preferred":
		return ElectPreferred, nil
	case "unclean":
		return ElectUnclean, nil
	}
	return 0, fmt.Errorf("%w: %s: election type %q", ErrCorrupt, key, v.Type)
}

// applyPartitionMark records a put (the value decode returns) or a delete of a
// mark per partition (an election, a reassignment) in *marks, a copy of the
// previous snapshot's map. A value that does not decode leaves the mark as it was.
func applyPartitionMark[V any](b *builder, marks *map[TopicPartition]V, tp TopicPartition, key string, del bool, decode func() (V, error)) {
	*marks = maps.Clone(*marks)
	if *marks == nil {
		*marks = map[TopicPartition]V{}
	}
	if del {
		delete(*marks, tp)
		return
	}
	v, err := decode()
	if err != nil {
		b.logger.Error("ignoring metadata key", "key", key, "err", err)
		return
	}
	(*marks)[tp] = v
}

// clearMarks deletes the marks (elections, finished reassignments) keyed with
// the mod revision the controller planned from, each only if it was not written
// again since, fenced like every controller write.
func (c *Controller) clearMarks(ctx context.Context, marks map[string]int64, fence clientv3.Cmp) (int64, error) {
	var rev int64
	for key, modRev := range marks {
		resp, err := c.store.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", modRev), fence).
			Then(clientv3.OpDelete(key)).Commit()
		if err != nil {
			return rev, fmt.Errorf("cluster: clear %s: %w", key, err)
		}
		if resp.Succeeded {
			rev = max(rev, resp.Header.Revision)
		}
	}
	return rev, nil
}

// electionMarks are the keys of snap's election marks.
func electionMarks(snap *Snapshot) map[string]int64 {
	marks := make(map[string]int64, len(snap.elections))
	for tp, e := range snap.elections {
		marks[electionKey(tp.Topic, tp.Partition)] = e.modRev
	}
	return marks
}

// ElectionNeeded reports whether an election of typ for topic/p is needed and
// can be held now: nil, or ErrUnknownPartition, ErrElectionNotNeeded (preferred:
// the preferred replica leads; unclean: some replica leads) or
// ErrNoEligibleLeader (preferred: the preferred replica is not live and in sync;
// unclean: no replica is live).
func (s *Snapshot) ElectionNeeded(topic string, p int32, typ ElectionType) error {
	st, replicas, ok := s.partitionWithReplicas(topic, p)
	if !ok {
		return fmt.Errorf("%w: %s/%d", ErrUnknownPartition, topic, p)
	}
	if s.ElectionDone(topic, p, typ) {
		return ErrElectionNotNeeded
	}
	if typ == ElectPreferred {
		if len(replicas) == 0 || !s.inSync(st, replicas[0]) {
			return ErrNoEligibleLeader
		}
		return nil
	}
	for _, r := range replicas {
		if _, live := s.brokers[r]; live {
			return nil
		}
	}
	return ErrNoEligibleLeader
}

// ElectionDone reports whether topic/p has the leader an election of typ
// wants: its preferred replica, or (unclean) any leader.
func (s *Snapshot) ElectionDone(topic string, p int32, typ ElectionType) bool {
	st, replicas, ok := s.partitionWithReplicas(topic, p)
	if !ok || st.Leader == NoLeader {
		return false
	}
	return typ == ElectUnclean || len(replicas) > 0 && st.Leader == replicas[0]
}

func (s *Snapshot) partitionWithReplicas(topic string, p int32) (PartitionState, []int32, bool) {
	t, ok := s.Topic(topic)
	if !ok || p < 0 || int(p) >= len(t.Assignment) {
		return PartitionState{}, nil, false
	}
	st, ok := s.Partition(topic, p)
	return st, t.Assignment[p], ok
}
