package cluster

// Key layout and value encodings under /skiff/. This file is the code of
// docs/format/etcd-keys.md; the two change together. Key names and the JSON
// field names below must not change: a field is only ever added, and a value
// a Skiff version cannot read carries a higher "version".

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	// Prefix holds every Skiff key.
	Prefix = "/skiff/"

	keyCluster       = Prefix + "cluster"
	keyProducerIDs   = Prefix + "producer-ids"
	keyNodeIDs       = Prefix + "node-ids"
	prefixBrokers    = Prefix + "brokers/"
	prefixNodes      = Prefix + "nodes/"
	prefixTopics     = Prefix + "topics/"
	prefixPartitions = Prefix + "partitions/"
	// prefixController holds the controller election (concurrency.Election):
	// one key per candidate, on its broker's lease, valued with its broker id.
	prefixController = Prefix + "controller/"

	// FormatVersion is the version of the key layout, stored in
	// /skiff/cluster. A node refuses a cluster with a higher one.
	FormatVersion = 1
	// valueVersion is the version every value is written with and the
	// highest one this code reads.
	valueVersion = 1
)

func brokerKey(id int32) string { return prefixBrokers + strconv.FormatInt(int64(id), 10) }
func nodeKey(id int32) string   { return prefixNodes + strconv.FormatInt(int64(id), 10) }
func topicKey(name string) string {
	return prefixTopics + name
}
func partitionPrefix(topic string) string { return prefixPartitions + topic + "/" }
func partitionKey(topic string, p int32) string {
	return partitionPrefix(topic) + strconv.FormatInt(int64(p), 10)
}

// clusterValue is /skiff/cluster.
type clusterValue struct {
	Version       int       `json:"version"`
	FormatVersion int       `json:"format_version"`
	ClusterID     string    `json:"cluster_id"`
	Created       time.Time `json:"created"`
}

// brokerValue is /skiff/brokers/<id>.
type brokerValue struct {
	Version int    `json:"version"`
	ID      int32  `json:"id"`
	Host    string `json:"host"`
	Port    int32  `json:"port"`
	Rack    string `json:"rack,omitempty"`
	// HTTP is the advertised HTTP address (see Broker.HTTP).
	HTTP string `json:"http,omitempty"`
	// Listeners are the advertised listeners (see Broker.Listeners).
	Listeners []endpointValue `json:"listeners,omitempty"`
	// DataDirID identifies the broker's data directory (see Broker.DataDirID).
	DataDirID string `json:"data_dir_id,omitempty"`
	// Epoch is the broker epoch a running broker's new registration continues (see
	// Broker.Epoch); omitted on the first registration of a run.
	Epoch int64 `json:"epoch,omitempty"`
	// Leaving is set by a broker that is shutting down, just before it ends its
	// session (see Broker.Leaving).
	Leaving bool `json:"leaving,omitempty"`
}

// endpointValue is one advertised listener of a broker.
type endpointValue struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// nodeValue is /skiff/nodes/<id>.
type nodeValue struct {
	Version    int    `json:"version"`
	ID         int32  `json:"id"`
	MemberName string `json:"member_name"`
	// MemberID is the etcd member id in hex, as etcdctl prints it.
	MemberID string `json:"member_id"`
}

// topicValue is /skiff/topics/<name>.
type topicValue struct {
	Version           int               `json:"version"`
	ID                string            `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
	Assignment        [][]int32         `json:"assignment"`
}

// partitionValue is /skiff/partitions/<topic>/<p>.
type partitionValue struct {
	Version        int     `json:"version"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	ISR            []int32 `json:"isr"`
	ISREpochs      []int64 `json:"isr_broker_epochs,omitempty"`
	PartitionEpoch int32   `json:"partition_epoch"`
}

// producerIDsValue is /skiff/producer-ids.
type producerIDsValue struct {
	Version int   `json:"version"`
	Next    int64 `json:"next"`
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("cluster: encode %T: %v", v, err)) // only plain structs are encoded
	}
	return string(b)
}

// decode parses a value and checks its version.
func decode(key string, data []byte, v any, version func() int) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
	}
	switch n := version(); {
	case n > valueVersion:
		return fmt.Errorf("%w: %s has value version %d, this node reads up to %d", ErrUnsupportedFormat, key, n, valueVersion)
	case n < 1:
		return fmt.Errorf("%w: %s has no version", ErrCorrupt, key)
	}
	return nil
}

func encodeTopic(t Topic) string {
	return encode(topicValue{
		Version:           valueVersion,
		ID:                FormatUUID(t.ID),
		Partitions:        t.Partitions,
		ReplicationFactor: t.ReplicationFactor,
		Configs:           t.Configs,
		Assignment:        t.Assignment,
	})
}

func decodeTopic(key string, data []byte) (Topic, error) {
	var v topicValue
	if err := decode(key, data, &v, func() int { return v.Version }); err != nil {
		return Topic{}, err
	}
	id, err := ParseUUID(v.ID)
	if err != nil {
		return Topic{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
	}
	t := Topic{
		Name:              strings.TrimPrefix(key, prefixTopics),
		ID:                id,
		Partitions:        v.Partitions,
		ReplicationFactor: v.ReplicationFactor,
		Configs:           v.Configs,
		Assignment:        v.Assignment,
	}
	if int32(len(t.Assignment)) != t.Partitions {
		return Topic{}, fmt.Errorf("%w: %s: %d partitions, %d replica lists", ErrCorrupt, key, t.Partitions, len(t.Assignment))
	}
	return t, nil
}

func encodePartition(s PartitionState) string {
	isr := s.ISR
	if isr == nil {
		isr = []int32{}
	}
	return encode(partitionValue{
		Version:        valueVersion,
		Leader:         s.Leader,
		LeaderEpoch:    s.LeaderEpoch,
		ISR:            isr,
		ISREpochs:      s.ISREpochs,
		PartitionEpoch: s.PartitionEpoch,
	})
}

func decodePartition(key string, data []byte) (PartitionState, error) {
	var v partitionValue
	if err := decode(key, data, &v, func() int { return v.Version }); err != nil {
		return PartitionState{}, err
	}
	st := PartitionState{Leader: v.Leader, LeaderEpoch: v.LeaderEpoch, ISR: v.ISR, ISREpochs: v.ISREpochs, PartitionEpoch: v.PartitionEpoch}
	if len(st.ISREpochs) != 0 && len(st.ISREpochs) != len(st.ISR) {
		return PartitionState{}, fmt.Errorf("%w: %s: %d ISR members, %d broker epochs", ErrCorrupt, key, len(st.ISR), len(st.ISREpochs))
	}
	return st, nil
}

func encodeBroker(b Broker) string {
	v := brokerValue{Version: valueVersion, ID: b.ID, Host: b.Host, Port: b.Port, Rack: b.Rack, HTTP: b.HTTP, DataDirID: b.DataDirID, Epoch: b.Epoch, Leaving: b.Leaving}
	for _, e := range b.Listeners {
		v.Listeners = append(v.Listeners, endpointValue{Name: e.Listener, Host: e.Host, Port: e.Port})
	}
	return encode(v)
}

func decodeBroker(key string, data []byte) (Broker, error) {
	var v brokerValue
	if err := decode(key, data, &v, func() int { return v.Version }); err != nil {
		return Broker{}, err
	}
	if brokerKey(v.ID) != key {
		return Broker{}, fmt.Errorf("%w: %s holds broker id %d", ErrCorrupt, key, v.ID)
	}
	b := Broker{ID: v.ID, Host: v.Host, Port: v.Port, Rack: v.Rack, HTTP: v.HTTP, DataDirID: v.DataDirID, Epoch: v.Epoch, Leaving: v.Leaving}
	for _, e := range v.Listeners {
		b.Listeners = append(b.Listeners, Endpoint{Listener: e.Name, Host: e.Host, Port: e.Port})
	}
	return b, nil
}

// decodeRegistration decodes broker key's value as written at createRevision.
// Its epoch (Broker.Epoch) is the one the value carries, the first
// registration's of the broker's run, when the broker registered again; else
// createRevision. The controller's snapshot and the ISR stamped on new
// partitions must agree on it, or a new partition's ISR looks restarted.
func decodeRegistration(key string, data []byte, createRevision int64) (Broker, error) {
	b, err := decodeBroker(key, data)
	if err == nil && b.Epoch == 0 {
		b.Epoch = createRevision
	}
	return b, err
}

func encodeNode(n NodeMember) string {
	return encode(nodeValue{Version: valueVersion, ID: n.NodeID, MemberName: n.MemberName, MemberID: strconv.FormatUint(n.MemberID, 16)})
}

func decodeNode(key string, data []byte) (NodeMember, error) {
	var v nodeValue
	if err := decode(key, data, &v, func() int { return v.Version }); err != nil {
		return NodeMember{}, err
	}
	if nodeKey(v.ID) != key {
		return NodeMember{}, fmt.Errorf("%w: %s holds node id %d", ErrCorrupt, key, v.ID)
	}
	id, err := strconv.ParseUint(v.MemberID, 16, 64)
	if err != nil {
		return NodeMember{}, fmt.Errorf("%w: %s: member id %q", ErrCorrupt, key, v.MemberID)
	}
	return NodeMember{NodeID: v.ID, MemberName: v.MemberName, MemberID: id}, nil
}

func decodeCluster(data []byte) (clusterValue, error) {
	var v clusterValue
	if err := decode(keyCluster, data, &v, func() int { return v.Version }); err != nil {
		return v, err
	}
	if v.FormatVersion > FormatVersion {
		return v, fmt.Errorf("%w: cluster format version %d, this node supports up to %d", ErrUnsupportedFormat, v.FormatVersion, FormatVersion)
	}
	return v, nil
}

// parseKey classifies a key under Prefix. For partition keys it returns the
// topic and partition; for topic keys the name; for broker keys the id.
type keyKind int

const (
	keyOther keyKind = iota
	keyIsCluster
	keyIsBroker
	keyIsTopic
	keyIsPartition
	keyIsCandidate     // a controller election candidacy
	keyIsDraining      // a broker being drained (its id in part)
	keyIsBrokerConfigs // dynamic configs of a broker (its id in part; ClusterDefault for all)
	keyIsACL           // an ACL binding
	keyIsElection      // an election asked for (ElectLeaders)
	keyIsReassignment  // a reassignment in progress
	keyIsQuota         // the client quotas of one entity
)

func parseKey(key string) (kind keyKind, topic string, part int32) {
	switch {
	case key == keyCluster:
		return keyIsCluster, "", 0
	case strings.HasPrefix(key, prefixController):
		return keyIsCandidate, "", 0
	case strings.HasPrefix(key, prefixACLs):
		if parseACLKey(key) {
			return keyIsACL, "", 0
		}
		return keyOther, "", 0
	case strings.HasPrefix(key, prefixElections):
		if topic, p, ok := parseElectionKey(key); ok {
			return keyIsElection, topic, p
		}
		return keyOther, "", 0
	case strings.HasPrefix(key, prefixReassignments):
		if topic, p, ok := parseReassignmentKey(key); ok {
			return keyIsReassignment, topic, p
		}
		return keyOther, "", 0
	case strings.HasPrefix(key, prefixQuotas):
		if _, ok := parseQuotaKey(key); ok {
			return keyIsQuota, "", 0
		}
		return keyOther, "", 0
	case strings.HasPrefix(key, prefixDraining):
		if id, ok := parseDrainingKey(key); ok {
			return keyIsDraining, "", id
		}
		return keyOther, "", 0
	case strings.HasPrefix(key, prefixBrokerConfigs):
		if id, ok := parseBrokerConfigsKey(key); ok {
			return keyIsBrokerConfigs, "", id
		}
		return keyOther, "", 0
	case strings.HasPrefix(key, prefixBrokers):
		id, ok := parseKeyNumber(key[len(prefixBrokers):])
		if !ok {
			return keyOther, "", 0
		}
		return keyIsBroker, "", id
	case strings.HasPrefix(key, prefixTopics):
		return keyIsTopic, key[len(prefixTopics):], 0
	case strings.HasPrefix(key, prefixPartitions):
		rest := key[len(prefixPartitions):]
		i := strings.LastIndexByte(rest, '/')
		if i < 0 {
			return keyOther, "", 0
		}
		p, ok := parseKeyNumber(rest[i+1:])
		if !ok || p < 0 {
			return keyOther, "", 0
		}
		return keyIsPartition, rest[:i], p
	}
	return keyOther, "", 0
}

// parseKeyNumber parses a number in a key, written as the key builders write
// it (decimal, no sign but '-', no padding): a key spelled otherwise is not one
// of ours, and must not stand for the one that is (see FuzzParseKey).
func parseKeyNumber(s string) (int32, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err == nil && strconv.FormatInt(n, 10) == s
}
