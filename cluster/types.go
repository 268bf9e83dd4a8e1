package cluster

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Sentinel errors. Validation errors wrap the sentinel that names the Kafka
// error code a handler should answer with.
var (
	ErrTopicExists              = errors.New("cluster: topic already exists")       // TOPIC_ALREADY_EXISTS
	ErrUnknownTopic             = errors.New("cluster: unknown topic")              // UNKNOWN_TOPIC_OR_PARTITION
	ErrUnknownPartition         = errors.New("cluster: unknown partition")          // UNKNOWN_TOPIC_OR_PARTITION
	ErrInvalidTopicName         = errors.New("cluster: invalid topic name")         // INVALID_TOPIC_EXCEPTION
	ErrInvalidPartitions        = errors.New("cluster: invalid partition count")    // INVALID_PARTITIONS
	ErrInvalidReplicationFactor = errors.New("cluster: invalid replication factor") // INVALID_REPLICATION_FACTOR
	ErrInvalidReplicaAssignment = errors.New("cluster: invalid replica assignment") // INVALID_REPLICA_ASSIGNMENT
	ErrInvalidConfig            = errors.New("cluster: invalid topic config")       // INVALID_CONFIG
	ErrInvalidBroker            = errors.New("cluster: invalid broker")             // (startup configuration)
	ErrBrokerIDInUse            = errors.New("cluster: broker id registered by another session")
	ErrStalePartitionEpoch      = errors.New("cluster: stale partition epoch") // INVALID_UPDATE_VERSION / FENCED_LEADER_EPOCH
	ErrElectionNotNeeded        = errors.New("cluster: election not needed: the partition has the leader asked for")
	ErrNoEligibleLeader         = errors.New("cluster: no replica is eligible to lead")
	ErrFenced                   = errors.New("cluster: write fenced: no longer the controller") // the writer lost its election
	ErrInvalidPartitionState    = errors.New("cluster: invalid partition state")                // INVALID_REQUEST
	ErrUnsupportedFormat        = errors.New("cluster: unsupported metadata format")            // written by a newer Skiff
	ErrCorrupt                  = errors.New("cluster: undecodable metadata value")             // a value that does not parse
	ErrCacheClosed              = errors.New("cluster: cache closed")
)

// Limits.
const (
	// MaxTopicNameLen is Kafka's limit on topic names.
	MaxTopicNameLen = 249
	// MaxPartitions bounds the partitions of one topic: CreateTopic writes
	// them all in one etcd transaction of MaxPartitions+1 operations, which
	// must stay within the member's MaxTxnOps (embedetcd.DefaultMaxTxnOps)
	// and MaxRequestBytes.
	MaxPartitions = 10000
)

// NoLeader is the Leader of a partition that has none (Kafka's -1).
const NoLeader int32 = -1

// UUID is a Kafka UUID (topic and cluster ids).
type UUID = [16]byte

// Topic is the stored description of a topic. Values handed out by the
// cache share Configs and Assignment with its snapshot: treat them as
// read-only.
type Topic struct {
	Name string
	// ID is the topic id, a random UUID fixed at creation; a topic deleted
	// and created again under the same name gets a new id.
	ID UUID
	// Partitions is the partition count; partitions are 0..Partitions-1.
	Partitions        int32
	ReplicationFactor int16
	// Configs holds the topic-level overrides only (see configs.go for
	// defaults); nil or empty means all defaults.
	Configs map[string]string
	// Assignment[p] is the replica list of partition p, preferred leader
	// first. len(Assignment) == Partitions and every list has
	// ReplicationFactor distinct broker ids.
	Assignment [][]int32
}

// PartitionState is the leadership state of one partition, changed only by
// compare-and-swap (AlterPartition).
type PartitionState struct {
	// Leader is the leading broker, or NoLeader.
	Leader int32
	// LeaderEpoch increases with every change of leader; batches and fetch
	// requests carry it to fence stale leaders.
	LeaderEpoch int32
	// ISR is the in-sync replica set; it contains Leader unless Leader is
	// NoLeader, and only replicas from the topic's assignment.
	ISR []int32
	// ISREpochs holds, for each ISR member, the broker epoch (Broker.Epoch) of the
	// registration under which it was in sync; 0 or an empty slice means unknown. A
	// member whose broker has registered again since (a restart, perhaps with lost
	// storage) no longer counts as in sync: it must not lead or be elected until its
	// leader admits it again (Kafka's KIP-903).
	ISREpochs []int64
	// PartitionEpoch increases by one with every write of this state; it is
	// the compare token of AlterPartition (Kafka's partition epoch).
	PartitionEpoch int32
}

// Broker is a live broker as registered under its session lease.
type Broker struct {
	ID int32
	// Host and Port are the advertised address of the inter-broker listener,
	// which followers dial (and all a broker without Listeners advertises).
	Host string
	Port int32
	// Listeners are the advertised addresses of every listener, by listener
	// name; Metadata answers a client with those of the listener it came in on.
	// Empty: the broker has one listener, at Host and Port (registrations of
	// versions before listeners).
	Listeners []Endpoint
	Rack      string // empty: no rack
	// HTTP is the advertised host:port of the broker's HTTP port (metrics, admin
	// API, console), where the other nodes' consoles ask it for what only it knows.
	// Empty: not advertised (registrations of versions before the console).
	HTTP string
	// DataDirID is a random id of the broker's data directory, fixed when the
	// directory is first used. A registration held by another lease with the
	// same DataDirID is a previous run of this very broker (the data
	// directory lock rules out two at once), so RegisterBroker replaces it
	// instead of waiting for its lease to expire. Empty: never replaced.
	DataDirID string
	// Epoch is the broker epoch: the etcd create revision of the registration that
	// began this run of the broker. A broker that restarts gets a higher one, and is
	// out of every ISR until a leader admits it again (its storage may be new). A
	// running broker that registers again after losing its session (its lease
	// expired while it was paused, or was revoked) passes its epoch to
	// RegisterBroker, which stores it in the value: its storage is the one it had,
	// so its ISR memberships and leaderships stay valid. Set by the cache.
	Epoch int64
	// Leaving is set by a broker that is shutting down, just before it ends its
	// session: the controller then moves its partitions at once, without the grace
	// it gives a broker whose registration ended otherwise
	// (ControllerConfig.DepartGrace).
	Leaving bool
}

// Endpoint is the advertised address of one listener of a broker.
type Endpoint struct {
	Listener string // the listener's name: PLAINTEXT, SASL_SSL, or a name of listener.security.protocol.map
	Host     string
	Port     int32
}

// Address returns the advertised address of the broker's listener of that name;
// a broker registered without listeners answers Host and Port for any name.
func (b Broker) Address(listener string) (host string, port int32, ok bool) {
	if len(b.Listeners) == 0 {
		return b.Host, b.Port, true
	}
	for _, e := range b.Listeners {
		if e.Listener == listener {
			return e.Host, e.Port, true
		}
	}
	return "", 0, false
}

// EpochOf returns the broker epoch recorded for ISR member b (0: unknown or not a member).
func (s PartitionState) EpochOf(b int32) int64 {
	for i, r := range s.ISR {
		if r == b && i < len(s.ISREpochs) {
			return s.ISREpochs[i]
		}
	}
	return 0
}

// WithISR returns s with ISR isr and its members' broker epochs from epochs (brokers
// missing from it: 0, unknown).
func (s PartitionState) WithISR(isr []int32, epochs func(int32) int64) PartitionState {
	s.ISR = isr
	s.ISREpochs = make([]int64, len(isr))
	for i, b := range isr {
		s.ISREpochs[i] = epochs(b)
	}
	return s
}

// ValidTopicName reports whether name is a legal Kafka topic name: 1 to 249
// characters from [a-zA-Z0-9._-], and neither "." nor "..". The error wraps
// ErrInvalidTopicName.
func ValidTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopicName)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopicName, name)
	case len(name) > MaxTopicNameLen:
		return fmt.Errorf("%w: %d characters, more than %d", ErrInvalidTopicName, len(name), MaxTopicNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains %q; only [a-zA-Z0-9._-] are allowed", ErrInvalidTopicName, name, c)
		}
	}
	return nil
}

// NewUUID returns a random (version 4) UUID usable as a Kafka id: not one of
// Kafka's reserved ids (all zero, or 1), and its string form does not start
// with '-' (Kafka's tools would read it as a flag), as Kafka's
// Uuid.randomUuid ensures.
func NewUUID() UUID {
	for {
		u := UUID(uuid.New())
		if u != (UUID{}) && u != (UUID{15: 1}) && FormatUUID(u)[0] != '-' {
			return u
		}
	}
}

// FormatUUID returns Kafka's string form of a UUID: the 16 bytes in
// URL-safe base64 without padding (22 characters), as Kafka prints topic
// and cluster ids.
func FormatUUID(u UUID) string {
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// ParseUUID parses Kafka's string form of a UUID.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(u) {
		return u, fmt.Errorf("cluster: bad uuid %q", s)
	}
	copy(u[:], b)
	return u, nil
}

// validateTopic checks a topic before it is written. The replica lists of partitions
// from on must have exactly ReplicationFactor replicas; earlier ones (already stored)
// may hold one more while they are being reassigned.
func validateTopic(t Topic, from int) error {
	if err := ValidTopicName(t.Name); err != nil {
		return err
	}
	if t.Partitions < 1 || t.Partitions > MaxPartitions {
		return fmt.Errorf("%w: %d partitions for topic %s; want 1 to %d", ErrInvalidPartitions, t.Partitions, t.Name, MaxPartitions)
	}
	if t.ReplicationFactor < 1 {
		return fmt.Errorf("%w: %d for topic %s", ErrInvalidReplicationFactor, t.ReplicationFactor, t.Name)
	}
	if int32(len(t.Assignment)) != t.Partitions {
		return fmt.Errorf("%w: topic %s has %d partitions but %d replica lists", ErrInvalidReplicaAssignment, t.Name, t.Partitions, len(t.Assignment))
	}
	for p, replicas := range t.Assignment {
		extra := 0
		if p < from {
			extra = 1 // a partition being reassigned holds an extra replica for a while
		}
		if len(replicas) < int(t.ReplicationFactor) || len(replicas) > int(t.ReplicationFactor)+extra {
			return fmt.Errorf("%w: partition %d of %s has %d replicas, replication factor is %d",
				ErrInvalidReplicaAssignment, p, t.Name, len(replicas), t.ReplicationFactor)
		}
		for i, b := range replicas {
			if b < 0 {
				return fmt.Errorf("%w: partition %d of %s: broker id %d", ErrInvalidReplicaAssignment, p, t.Name, b)
			}
			for _, o := range replicas[:i] {
				if o == b {
					return fmt.Errorf("%w: partition %d of %s lists broker %d twice", ErrInvalidReplicaAssignment, p, t.Name, b)
				}
			}
		}
	}
	return ValidateTopicConfigs(t.Configs)
}

// validatePartitionState checks a proposed state against the partition's
// replicas and its current state.
func validatePartitionState(next, cur PartitionState, replicas []int32) error {
	in := func(list []int32, b int32) bool {
		for _, x := range list {
			if x == b {
				return true
			}
		}
		return false
	}
	for i, b := range next.ISR {
		if !in(replicas, b) {
			return fmt.Errorf("%w: ISR member %d is not a replica %v", ErrInvalidPartitionState, b, replicas)
		}
		if in(next.ISR[:i], b) {
			return fmt.Errorf("%w: ISR lists %d twice", ErrInvalidPartitionState, b)
		}
	}
	if len(next.ISREpochs) != 0 && len(next.ISREpochs) != len(next.ISR) {
		return fmt.Errorf("%w: %d ISR members but %d broker epochs", ErrInvalidPartitionState, len(next.ISR), len(next.ISREpochs))
	}
	if next.Leader != NoLeader && !in(next.ISR, next.Leader) {
		return fmt.Errorf("%w: leader %d not in ISR %v", ErrInvalidPartitionState, next.Leader, next.ISR)
	}
	if next.LeaderEpoch < cur.LeaderEpoch {
		return fmt.Errorf("%w: leader epoch %d below current %d", ErrInvalidPartitionState, next.LeaderEpoch, cur.LeaderEpoch)
	}
	if next.Leader != cur.Leader && next.LeaderEpoch == cur.LeaderEpoch {
		return fmt.Errorf("%w: leader changes from %d to %d without a new leader epoch", ErrInvalidPartitionState, cur.Leader, next.Leader)
	}
	return nil
}
