package cluster

import (
	"encoding/hex"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"skiff/acl"
	"skiff/auth"
)

// FuzzParseKey checks the classification of etcd keys under /skiff/
// (docs/format/etcd-keys.md). Invariants:
//   - parseKey never panics;
//   - a key it classifies as a broker, draining, topic or partition key is
//     exactly the key the builders make from what it returned (numbers are
//     decimal without padding), so any other spelling is ignored, as the
//     format says;
//   - the keys the builders make classify back to what they were made from:
//     brokerKey(id), drainingKey(id) for id >= 0, and topicKey(topic) and
//     partitionKey(topic, p) for a valid topic name and p >= 0;
//   - an ACL key is the prefix and 32 lower-case hex digits, and aclKey makes
//     one.
//
// Seeds are real keys of each kind and near misses (padded, signed, empty or
// out-of-range numbers, a slash in a topic name).
func FuzzParseKey(f *testing.F) {
	for _, k := range []string{
		keyCluster, keyProducerIDs, keyNodeIDs, brokerKey(1), nodeKey(2), topicKey("orders"),
		partitionKey("orders", 10), drainingKey(3), prefixController + "694d9a8b5c1f2e03",
		prefixBrokers + "01", prefixBrokers + "+1", prefixBrokers + "-0", prefixBrokers, prefixBrokers + "2147483648",
		prefixPartitions + "orders/007", prefixPartitions + "orders/", prefixPartitions + "a/b/1", prefixDraining + "-1", prefixBrokerConfigs + "default", prefixBrokerConfigs + "-1", prefixBrokerConfigs + "01",
		topicKey(""), Prefix, "/other", aclKey(acl.Binding{Name: "orders"}), prefixACLs + "0123", prefixACLs + "0123456789ABCDEF0123456789abcdef",
	} {
		f.Add(k, int32(4), "t.x-1_", int32(9))
	}
	f.Fuzz(func(t *testing.T, key string, id int32, topic string, part int32) {
		switch kind, name, n := parseKey(key); kind {
		case keyIsBroker:
			if brokerKey(n) != key {
				t.Fatalf("%q read as broker %d, whose key is %q", key, n, brokerKey(n))
			}
		case keyIsDraining:
			if drainingKey(n) != key || n < 0 {
				t.Fatalf("%q read as draining broker %d, whose key is %q", key, n, drainingKey(n))
			}
		case keyIsBrokerConfigs:
			if brokerConfigsKey(n) != key || (n < 0 && n != ClusterDefault) {
				t.Fatalf("%q read as the configs of broker %d, whose key is %q", key, n, brokerConfigsKey(n))
			}
		case keyIsTopic:
			if topicKey(name) != key {
				t.Fatalf("%q read as topic %q, whose key is %q", key, name, topicKey(name))
			}
		case keyIsPartition:
			if partitionKey(name, n) != key || n < 0 {
				t.Fatalf("%q read as partition %d of %q, whose key is %q", key, n, name, partitionKey(name, n))
			}
		case keyIsACL:
			id := strings.TrimPrefix(key, prefixACLs)
			if _, err := hex.DecodeString(id); err != nil || len(id) != 32 || strings.ToLower(id) != id {
				t.Fatalf("%q read as an ACL key", key)
			}
		}
		if k, _, _ := parseKey(aclKey(acl.Binding{Name: topic, Principal: auth.User(topic)})); k != keyIsACL {
			t.Fatalf("aclKey of %q is not an ACL key", topic)
		}

		check := func(key string, kind keyKind, name string, n int32) {
			t.Helper()
			if k, gotName, gotN := parseKey(key); k != kind || gotName != name || gotN != n {
				t.Fatalf("parseKey(%q) = %v, %q, %d; want %v, %q, %d", key, k, gotName, gotN, kind, name, n)
			}
		}
		check(brokerKey(id), keyIsBroker, "", id)
		if id >= 0 {
			check(drainingKey(id), keyIsDraining, "", id)
			check(brokerConfigsKey(id), keyIsBrokerConfigs, "", id)
		}
		check(brokerConfigsKey(ClusterDefault), keyIsBrokerConfigs, "", ClusterDefault)
		if ValidTopicName(topic) == nil {
			check(topicKey(topic), keyIsTopic, topic, 0)
			if part >= 0 {
				check(partitionKey(topic, part), keyIsPartition, topic, part)
			}
		}
	})
}

// FuzzDecodeValue checks the JSON values under /skiff/ (docs/format/etcd-keys.md)
// by giving each decoder the same key and bytes. Invariants:
//   - no decoder panics;
//   - every failure is ErrCorrupt or ErrUnsupportedFormat;
//   - whatever decodes, encoded again by the code that writes it, decodes to the
//     same value (nil and empty lists and maps count as equal: the encoding
//     does not tell them apart); a broker or node value decodes only under its
//     own key, and a topic is named after its key;
//   - an ACL decodes only as a valid binding (acl.Binding.Validate), and only
//     under the key named after it.
//
// Seeds are the values the store writes for each key, the examples of
// etcd-keys.md, and values with a higher version, no version or the wrong types.
func FuzzDecodeValue(f *testing.F) {
	id := UUID{0x32, 0x45, 0x37, 0x38}
	for key, v := range map[string]string{
		keyCluster: encode(clusterValue{Version: valueVersion, FormatVersion: FormatVersion, ClusterID: FormatUUID(id), Created: time.Date(2026, 11, 29, 15, 50, 40, 0, time.UTC)}),
		brokerKey(1): encodeBroker(Broker{ID: 1, Host: "kafka-1.example", Port: 9092, Rack: "r1", DataDirID: "tY2C0m3xQhWb1x0yq9wJbA",
			Listeners: []Endpoint{{Listener: "SASL_SSL", Host: "kafka-1.example", Port: 9092}, {Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9095}}}),
		brokerKey(2): encodeBroker(Broker{ID: 2, Host: "h", Port: 1}),
		nodeKey(3):   encodeNode(NodeMember{NodeID: 3, MemberName: "skiff-3", MemberID: 0x694d9a8b5c1f2e03}),
		topicKey("orders"): encodeTopic(Topic{Name: "orders", ID: id, Partitions: 3, ReplicationFactor: 2,
			Configs: map[string]string{"retention.ms": "86400000"}, Assignment: [][]int32{{1, 2}, {2, 3}, {3, 1}}}),
		topicKey("empty"):         encodeTopic(Topic{Name: "empty", ID: id}),
		partitionKey("orders", 0): encodePartition(PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2}, ISREpochs: []int64{17, 23}, PartitionEpoch: 9}),
		partitionKey("orders", 1): encodePartition(PartitionState{Leader: NoLeader}),
		keyProducerIDs:            encode(producerIDsValue{Version: valueVersion, Next: 1000}),
		userKey("alice", "SCRAM-SHA-512"): encodeScram(auth.ScramCredential{Mechanism: "SCRAM-SHA-512", Salt: []byte("salt"), Iterations: 4096,
			StoredKey: []byte("stored"), ServerKey: []byte("server")}),
		aclKey(seedACL):           encodeACL(seedACL),
		aclKey(seedACL) + "x":     encodeACL(seedACL),
		aclKey(acl.Binding{}):     `{"version":1,"resource_type":"TOPIC","resource_name":"","pattern_type":"MATCH","principal":"alice","host":"localhost","operation":"ANY","permission":"ANY"}`,
		brokerKey(5):              `{"version":2,"id":5}`,
		nodeKey(6):                `{"id":6,"member_id":"1"}`,
		topicKey("bad"):           `{"version":1,"id":"x","partitions":"3"}`,
		partitionKey("orders", 2): `{"version":1,"isr":[1,2],"isr_broker_epochs":[5]}`,
		keyCluster + "/":          `{"version":1,"format_version":2,"created":"2026-11-29T15:50:40+01:00"}`,
	} {
		f.Add(key, []byte(v))
	}
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		check := func(what string, err error, roundTrip func() (any, any, error)) {
			t.Helper()
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedFormat) {
					t.Fatalf("%s: %v is neither ErrCorrupt nor ErrUnsupportedFormat", what, err)
				}
				return
			}
			if got, want, err := roundTrip(); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s of %q: decoded %+v, encoded again it decodes to %+v, %v", what, data, want, got, err)
			}
		}

		tp, err := decodeTopic(key, data)
		check("topic", err, func() (any, any, error) {
			got, err := decodeTopic(key, []byte(encodeTopic(tp)))
			return normalTopic(got), normalTopic(tp), err
		})
		if err == nil && topicKey(tp.Name) != key && key[:min(len(key), len(prefixTopics))] == prefixTopics {
			t.Fatalf("topic under %q named %q", key, tp.Name)
		}
		ps, err := decodePartition(key, data)
		check("partition", err, func() (any, any, error) {
			got, err := decodePartition(key, []byte(encodePartition(ps)))
			return normalPartition(got), normalPartition(ps), err
		})
		b, err := decodeBroker(key, data)
		check("broker", err, func() (any, any, error) {
			if brokerKey(b.ID) != key {
				t.Fatalf("broker %d decoded under %q", b.ID, key)
			}
			got, err := decodeBroker(key, []byte(encodeBroker(b)))
			return got, b, err
		})
		n, err := decodeNode(key, data)
		check("node", err, func() (any, any, error) {
			if nodeKey(n.NodeID) != key {
				t.Fatalf("node %d decoded under %q", n.NodeID, key)
			}
			got, err := decodeNode(key, []byte(encodeNode(n)))
			return got, n, err
		})
		cv, err := decodeCluster(data)
		check("cluster", err, func() (any, any, error) {
			got, err := decodeCluster([]byte(encode(cv)))
			if err == nil && got.Created.Equal(cv.Created) {
				got.Created = cv.Created // the same instant; the zone may be spelled differently
			}
			return got, cv, err
		})
		_, sc, _, err := decodeScram(key, data)
		check("scram credential", err, func() (any, any, error) {
			_, got, _, err := decodeScram(key, []byte(encodeScram(sc)))
			return got, sc, err
		})
		ab, err := decodeACL(key, data)
		check("acl", err, func() (any, any, error) {
			if err := ab.Validate(); err != nil || aclKey(ab) != key {
				t.Fatalf("ACL %v decoded under %q: %v", ab, key, err)
			}
			got, err := decodeACL(key, []byte(encodeACL(ab)))
			return got, ab, err
		})
		var pv producerIDsValue
		err = decode(key, data, &pv, func() int { return pv.Version })
		check("producer ids", err, func() (any, any, error) {
			var got producerIDsValue
			err := decode(key, []byte(encode(pv)), &got, func() int { return got.Version })
			return got, pv, err
		})
	})
}

// seedACL is the ACL of the seeds, as etcd-keys.md shows it.
var seedACL = acl.Binding{Resource: acl.ResourceTopic, Name: "orders-", Pattern: acl.PatternPrefixed, Principal: auth.User("alice"),
	Host: "*", Operation: acl.OpWrite, Permission: acl.Allow}

func normalTopic(t Topic) Topic {
	if len(t.Configs) == 0 {
		t.Configs = nil
	}
	t.Configs = maps.Clone(t.Configs)
	t.Assignment = slices.Clone(t.Assignment)
	for i, r := range t.Assignment {
		if len(r) == 0 {
			t.Assignment[i] = nil
		}
	}
	if len(t.Assignment) == 0 {
		t.Assignment = nil
	}
	return t
}

func normalPartition(s PartitionState) PartitionState {
	if len(s.ISR) == 0 {
		s.ISR = nil
	}
	if len(s.ISREpochs) == 0 {
		s.ISREpochs = nil
	}
	return s
}
