package kafkaapi_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/kafkaapi"
)

// conformance tests one API key at each version in versions (its advertised range).
type conformance func(t *testing.T, c *kconn, versions []int16)

// conformanceTests has a test for every API key Skiff may advertise. An advertised
// key without one fails TestConformance.
var conformanceTests = map[int16]conformance{
	0:  conformProduce,
	1:  conformFetch,
	2:  conformListOffsets,
	3:  conformMetadata,
	18: conformApiVersions,
	19: conformCreateTopics,
	20: conformDeleteTopics,
	21: conformDeleteRecords,
	22: conformInitProducerID,
	23: conformOffsetForLeaderEpoch,
	32: conformDescribeConfigs,
	33: conformAlterConfigs,
	37: conformCreatePartitions,
	44: conformIncrementalAlterConfigs,
}

// advertisedProfile asks ApiVersions v3 for the advertised keys and ranges.
func advertisedProfile(t *testing.T, c *kconn) []kmsg.ApiVersionsResponseApiKey {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "skiff-kafkaapi-test", "1.0"
	resp := c.do(req).(*kmsg.ApiVersionsResponse)
	wantCode(t, "ApiVersions v3", resp.ErrorCode, 0)
	if len(resp.ApiKeys) == 0 {
		t.Fatal("ApiVersions v3 lists no keys")
	}
	return resp.ApiKeys
}

// TestConformance sends every advertised API key at every advertised version, built
// with kmsg, and checks that each answer has the request's correlation id, parses as
// exactly one response at that version, and means what the request asked for.
func TestConformance(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	profile := advertisedProfile(t, c)

	t.Run("ProfileMatchesPROTOCOL.md", func(t *testing.T) { checkProfileAgainstDoc(t, profile) })

	for i, k := range profile {
		if i > 0 && k.ApiKey <= profile[i-1].ApiKey {
			t.Errorf("ApiVersions lists key %d after %d: keys must be listed once, in order", k.ApiKey, profile[i-1].ApiKey)
		}
		if k.MinVersion < 0 || k.MinVersion > k.MaxVersion {
			t.Errorf("key %d: range %d..%d", k.ApiKey, k.MinVersion, k.MaxVersion)
		}
	}
	for _, k := range profile {
		test, ok := conformanceTests[k.ApiKey]
		if !ok {
			t.Errorf("key %d (%s) is advertised but has no conformance test", k.ApiKey, kmsg.NameForKey(k.ApiKey))
			continue
		}
		var versions []int16
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			versions = append(versions, v)
		}
		t.Run(kmsg.NameForKey(k.ApiKey), func(t *testing.T) {
			test(t, dial(t, n.KafkaAddr()), versions)
		})
	}
}

// checkProfileAgainstDoc compares the advertised ranges with the table "Advertised
// ranges (the profile)" of PROTOCOL.md.
func checkProfileAgainstDoc(t *testing.T, profile []kmsg.ApiVersionsResponseApiKey) {
	checkProfileAgainstDocWith(t, profile, false)
}

// checkProfileAgainstDocWith is checkProfileAgainstDoc, for a node with
// transaction version 2 when txnV2 is set: the rows of PROTOCOL.md's table
// "With transaction version 2" then replace the profile's.
func checkProfileAgainstDocWith(t *testing.T, profile []kmsg.ApiVersionsResponseApiKey, txnV2 bool) {
	path := kafkaapi.FindProtocolDoc()
	doc := kafkaapi.ReadProfileTable(t, path)
	if len(doc) < 9 {
		t.Fatalf("%s: the profile table has only %d rows; did its format change?", path, len(doc))
	}
	if txnV2 {
		rows := kafkaapi.ReadTxnV2Table(t, path)
		if len(rows) == 0 {
			t.Fatalf("%s: no transaction version 2 table; did its format change?", path)
		}
		for key, d := range rows {
			if _, ok := doc[key]; !ok {
				t.Errorf("key %d (%s) is in the transaction version 2 table of %s but not in its profile", key, d.Name, path)
			}
			doc[key] = d
		}
	}
	got := make(map[int16]kmsg.ApiVersionsResponseApiKey)
	for _, k := range profile {
		got[k.ApiKey] = k
	}
	for key, d := range doc {
		g, ok := got[key]
		switch {
		case !ok:
			t.Errorf("key %d (%s) %d..%d is in PROTOCOL.md but not advertised", key, d.Name, d.Min, d.Max)
		case g.MinVersion != d.Min || g.MaxVersion != d.Max:
			t.Errorf("key %d (%s): advertised %d..%d, PROTOCOL.md says %d..%d", key, d.Name, g.MinVersion, g.MaxVersion, d.Min, d.Max)
		}
	}
	for _, k := range profile {
		if _, ok := doc[k.ApiKey]; !ok {
			t.Errorf("key %d (%s) %d..%d is advertised but not in PROTOCOL.md's table", k.ApiKey, kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion)
		}
	}
}

func conformApiVersions(t *testing.T, c *kconn, versions []int16) {
	var want []kmsg.ApiVersionsResponseApiKey
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(v)
			req.ClientSoftwareName, req.ClientSoftwareVersion = "skiff-kafkaapi-test", "1.0"
			resp := c.do(req).(*kmsg.ApiVersionsResponse)
			wantCode(t, "ApiVersions", resp.ErrorCode, 0)
			if v >= 1 && resp.ThrottleMillis != 0 {
				t.Errorf("throttle %d ms, want 0", resp.ThrottleMillis)
			}
			if want == nil {
				want = resp.ApiKeys
			}
			if !sameKeys(resp.ApiKeys, want) {
				t.Errorf("keys %+v, want the same profile at every version: %+v", resp.ApiKeys, want)
			}
			for _, k := range resp.ApiKeys {
				if k.ApiKey == 71 || k.ApiKey == 72 {
					t.Errorf("telemetry key %d is advertised", k.ApiKey)
				}
			}
		})
	}
}

func conformMetadata(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 3, nil)
	host, portStr, _ := net.SplitHostPort(c.nc.RemoteAddr().String())
	port, _ := strconv.Atoi(portStr)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			metadata := func(topics []string, null, allow bool) *kmsg.MetadataResponse {
				req := kmsg.NewPtrMetadataRequest()
				req.SetVersion(v)
				req.AllowAutoTopicCreation = allow
				if !null {
					req.Topics = []kmsg.MetadataRequestTopic{}
				}
				for _, name := range topics {
					rt := kmsg.NewMetadataRequestTopic()
					rt.Topic = kmsg.StringPtr(name)
					req.Topics = append(req.Topics, rt)
				}
				return c.do(req).(*kmsg.MetadataResponse)
			}
			find := func(resp *kmsg.MetadataResponse, name string) *kmsg.MetadataResponseTopic {
				for i := range resp.Topics {
					if rt := &resp.Topics[i]; rt.Topic != nil && *rt.Topic == name {
						return rt
					}
				}
				return nil
			}

			// All topics: an empty list at v0, null from v1 on.
			all := metadata(nil, v >= 1, false)
			if len(all.Brokers) != 1 {
				t.Fatalf("brokers %+v, want this one node", all.Brokers)
			}
			if b := all.Brokers[0]; b.NodeID != 1 || b.Host != host || b.Port != int32(port) {
				t.Errorf("broker %d at %s:%d, want 1 at %s:%d (the address dialled)", b.NodeID, b.Host, b.Port, host, port)
			}
			if v >= 1 && all.ControllerID != 1 {
				t.Errorf("controller %d, want 1", all.ControllerID)
			}
			if v >= 2 && (all.ClusterID == nil || *all.ClusterID == "") {
				t.Errorf("cluster id %v, want one", all.ClusterID)
			}
			rt := find(all, topic)
			if rt == nil {
				t.Fatalf("all topics: %s is missing from %d topics", topic, len(all.Topics))
			}
			wantCode(t, "topic "+topic, rt.ErrorCode, 0)
			if len(rt.Partitions) != 3 {
				t.Fatalf("%s has %d partitions, want 3", topic, len(rt.Partitions))
			}
			for i, p := range rt.Partitions {
				if p.Partition != int32(i) || p.ErrorCode != 0 || p.Leader != 1 ||
					!slices.Equal(p.Replicas, []int32{1}) || !slices.Equal(p.ISR, []int32{1}) {
					t.Errorf("partition %+v, want partition %d led by 1 with replicas and ISR [1]", p, i)
				}
				if v >= 7 && p.LeaderEpoch < 0 {
					t.Errorf("partition %d: leader epoch %d", i, p.LeaderEpoch)
				}
				if v >= 5 && len(p.OfflineReplicas) != 0 {
					t.Errorf("partition %d: offline replicas %v", i, p.OfflineReplicas)
				}
			}

			// v1+: an empty list means no topics.
			if v >= 1 {
				if none := metadata(nil, false, false); len(none.Topics) != 0 {
					t.Errorf("an empty topic list returned %d topics", len(none.Topics))
				}
			}

			// Auto-creation: always allowed at v0..v3; v4+ obeys the flag.
			auto := topicName(t, "auto")
			if v >= 4 {
				resp := metadata([]string{auto}, false, false)
				rt := find(resp, auto)
				if rt == nil {
					t.Fatalf("no answer for %s", auto)
				}
				wantCode(t, "unknown topic without auto-creation", rt.ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}
			resp := metadata([]string{auto, topic}, false, true)
			if rt := find(resp, auto); rt == nil || rt.ErrorCode != 0 || len(rt.Partitions) != 1 {
				t.Fatalf("auto-created %s: %+v, want it created with 1 partition", auto, rt)
			}
			if rt := find(resp, topic); rt == nil || len(rt.Partitions) != 3 {
				t.Fatalf("%s alongside an auto-created topic: %+v", topic, rt)
			}
			if got := metadataTopic(t, c, auto); got.ErrorCode != 0 {
				t.Fatalf("%s after auto-creation: %s", auto, errName(got.ErrorCode))
			}

			// v10+: topic ids, and topics named by id alone.
			if v >= 10 {
				id := find(all, topic).TopicID
				if id == [16]byte{} {
					t.Fatalf("%s has no topic id at v%d", topic, v)
				}
				req := kmsg.NewPtrMetadataRequest()
				req.SetVersion(v)
				for _, want := range [][16]byte{id, {1, 2, 3}} {
					rt := kmsg.NewMetadataRequestTopic()
					rt.TopicID = want
					req.Topics = append(req.Topics, rt)
				}
				byID := c.do(req).(*kmsg.MetadataResponse)
				if len(byID.Topics) != 2 || byID.Topics[0].Topic == nil || *byID.Topics[0].Topic != topic || byID.Topics[0].TopicID != id {
					t.Fatalf("by id: %+v", byID.Topics)
				}
				wantCode(t, "unknown topic id", byID.Topics[1].ErrorCode, kerr.UnknownTopicID.Code)
			}
		})
	}
}

func conformCreateTopics(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			create := func(name string, partitions int32, validateOnly bool) kmsg.CreateTopicsResponseTopic {
				req := kmsg.NewPtrCreateTopicsRequest()
				req.SetVersion(v)
				req.TimeoutMillis = 30000
				req.ValidateOnly = validateOnly
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
				if partitions == -1 {
					rt.ReplicationFactor = -1
				}
				cfg := kmsg.NewCreateTopicsRequestTopicConfig()
				cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("3600000")
				rt.Configs = append(rt.Configs, cfg)
				req.Topics = append(req.Topics, rt)
				resp := c.do(req).(*kmsg.CreateTopicsResponse)
				if len(resp.Topics) != 1 || resp.Topics[0].Topic != name {
					t.Fatalf("create %s: answer %+v", name, resp.Topics)
				}
				return resp.Topics[0]
			}
			name := topicName(t, "")
			got := create(name, 2, false)
			wantCode(t, "create", got.ErrorCode, 0)
			if got.ErrorMessage != nil {
				t.Errorf("error message %q on success", *got.ErrorMessage)
			}
			if md := metadataTopic(t, c, name); md.ErrorCode != 0 || len(md.Partitions) != 2 {
				t.Fatalf("metadata after create: %s, %d partitions, want 2", errName(md.ErrorCode), len(md.Partitions))
			}
			if off := logEnd(t, c, name, 1); off != 0 {
				t.Errorf("new partition 1 ends at %d", off)
			}
			if v >= 5 {
				checkCreatedConfigs(t, got)
			}
			if v >= 7 && got.TopicID == [16]byte{} {
				t.Error("no topic id in the answer")
			}

			again := create(name, 2, false)
			wantCode(t, "create again", again.ErrorCode, kerr.TopicAlreadyExists.Code)
			if v >= 1 && again.ErrorMessage == nil {
				t.Error("no error message for an existing topic")
			}

			if v >= 1 {
				vo := topicName(t, "validate")
				wantCode(t, "validate_only", create(vo, 4, true).ErrorCode, 0)
				wantCode(t, "metadata after validate_only", metadataTopic(t, c, vo).ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}
			if v >= 4 {
				def := topicName(t, "defaults")
				wantCode(t, "create with -1 partitions and replication factor", create(def, -1, false).ErrorCode, 0)
				if md := metadataTopic(t, c, def); len(md.Partitions) != 1 {
					t.Errorf("%s has %d partitions, want num.partitions (1)", def, len(md.Partitions))
				}
			}
		})
	}
}

// checkCreatedConfigs: from v5 the answer lists the new topic's configs, the one the
// request set as a dynamic topic config (source 1) and the others as defaults.
func checkCreatedConfigs(t *testing.T, got kmsg.CreateTopicsResponseTopic) {
	t.Helper()
	if got.NumPartitions != 2 || got.ReplicationFactor != 1 {
		t.Errorf("answer gives %d partitions, replication factor %d, want 2 and 1", got.NumPartitions, got.ReplicationFactor)
	}
	var retention, cleanup bool
	for _, cfg := range got.Configs {
		switch {
		case cfg.Name == "retention.ms":
			retention = cfg.Value != nil && *cfg.Value == "3600000" && cfg.Source == 1
		case cfg.Name == "cleanup.policy":
			cleanup = cfg.Value != nil && *cfg.Value == "delete" && cfg.Source != 1
		}
	}
	if !retention || !cleanup {
		t.Errorf("configs in the answer %+v: want retention.ms 3600000 (topic config) and cleanup.policy delete (default)", got.Configs)
	}
}

func conformDeleteTopics(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			name := topicName(t, "")
			createTopic(t, c, name, 2, nil)
			mustProduce(t, c, name, 1, makeBatch(noProducer, "doomed"))
			dir := filepath.Join(shared.dir, "topics", name+"-1")
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("partition folder before delete: %v", err)
			}
			del := func(names ...string) []kmsg.DeleteTopicsResponseTopic {
				req := kmsg.NewPtrDeleteTopicsRequest()
				req.SetVersion(v)
				req.TimeoutMillis = 30000
				req.TopicNames = names
				if v >= 6 {
					for _, n := range names {
						req.Topics = append(req.Topics, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(n)})
					}
				}
				resp := c.do(req).(*kmsg.DeleteTopicsResponse)
				if len(resp.Topics) != len(names) {
					t.Fatalf("delete %v: %d answers", names, len(resp.Topics))
				}
				for i, rt := range resp.Topics {
					if rt.Topic == nil || *rt.Topic != names[i] {
						t.Fatalf("delete %v: answer %d names %v", names, i, rt.Topic)
					}
				}
				return resp.Topics
			}
			got := del(name, topicName(t, "never-created"))
			wantCode(t, "delete", got[0].ErrorCode, 0)
			wantCode(t, "delete an unknown topic", got[1].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			wantCode(t, "metadata after delete", metadataTopic(t, c, name).ErrorCode, kerr.UnknownTopicOrPartition.Code)
			wantCode(t, "list offsets after delete", listOffsetsAt(t, c, 5, name, 1, -1).ErrorCode, kerr.UnknownTopicOrPartition.Code)
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("partition folder %s after delete: %v, want it gone", dir, err)
			}
			wantCode(t, "delete again", del(name)[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			if v >= 6 {
				conformDeleteTopicsByID(t, c, v)
			}
		})
	}
}

// conformDeleteTopicsByID: from v6 a topic is deleted by its id, and the answer
// names it; an unknown id is UNKNOWN_TOPIC_ID, a name with an id INVALID_REQUEST.
func conformDeleteTopicsByID(t *testing.T, c *kconn, v int16) {
	name := topicName(t, "by-id")
	createTopic(t, c, name, 1, nil)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12) // topic ids from v10
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(name)}}
	mresp := c.do(md).(*kmsg.MetadataResponse)
	if len(mresp.Topics) != 1 || mresp.Topics[0].TopicID == [16]byte{} {
		t.Fatalf("metadata of %s: %+v, want its id", name, mresp.Topics)
	}
	id := mresp.Topics[0].TopicID
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(v)
	req.TimeoutMillis = 30000
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(name), TopicID: id}, {TopicID: id}, {TopicID: [16]byte{9, 9}}}
	resp := c.do(req).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 3 {
		t.Fatalf("%d answers for 3 topics", len(resp.Topics))
	}
	wantCode(t, "name and id", resp.Topics[0].ErrorCode, kerr.InvalidRequest.Code)
	wantCode(t, "by id", resp.Topics[1].ErrorCode, 0)
	if rt := resp.Topics[1]; rt.Topic == nil || *rt.Topic != name || rt.TopicID != id {
		t.Errorf("by id: answer names %v %x, want %s %x", rt.Topic, rt.TopicID, name, id)
	}
	wantCode(t, "an unknown id", resp.Topics[2].ErrorCode, kerr.UnknownTopicID.Code)
	wantCode(t, "metadata after delete by id", metadataTopic(t, c, name).ErrorCode, kerr.UnknownTopicOrPartition.Code)
}

func conformInitProducerID(t *testing.T, c *kconn, versions []int16) {
	seen := make(map[int64]bool)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			for range 3 {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.SetVersion(v)
				req.TransactionTimeoutMillis = 60000
				resp := c.do(req).(*kmsg.InitProducerIDResponse)
				wantCode(t, "init producer id", resp.ErrorCode, 0)
				if resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
					t.Fatalf("producer id %d epoch %d, want an id >= 0 at epoch 0", resp.ProducerID, resp.ProducerEpoch)
				}
				if seen[resp.ProducerID] {
					t.Fatalf("producer id %d handed out twice", resp.ProducerID)
				}
				seen[resp.ProducerID] = true
			}
			// A transactional id: the same producer id at a new epoch each time.
			id := topicName(t, "txn")
			pid, epoch := initTxnAt(t, c, v, id)
			pid2, epoch2 := initTxnAt(t, c, v, id)
			if pid2 != pid || epoch2 != epoch+1 {
				t.Fatalf("second init of %s: producer %d epoch %d, want %d epoch %d", id, pid2, epoch2, pid, epoch+1)
			}
			req := kmsg.NewPtrInitProducerIDRequest()
			req.SetVersion(v)
			req.TransactionalID = &id
			req.TransactionTimeoutMillis = 1 << 30
			wantCode(t, "timeout over the maximum", c.do(req).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.InvalidTransactionTimeout.Code)
			if v >= 3 {
				req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = 60000, pid, epoch // fenced by the second init
				want := kerr.ProducerFenced.Code
				if v < 4 {
					want = kerr.InvalidProducerEpoch.Code // PRODUCER_FENCED is v4+
				}
				wantCode(t, "stale producer", c.do(req).(*kmsg.InitProducerIDResponse).ErrorCode, want)
			}
		})
	}
}

// conformOffsetForLeaderEpoch: a single node leads at epoch 0 from offset 0, so epoch
// 0 ends at the log end; a newer epoch is unknown (-1, -1); a missing partition gets
// UNKNOWN_TOPIC_OR_PARTITION; current_leader_epoch (v2+) above ours gets
// UNKNOWN_LEADER_EPOCH.
func conformOffsetForLeaderEpoch(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	produce(t, c, topic, 0, makeBatch(noProducer, "a", "b", "c"))
	ask := func(v int16, partition, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(v)
		req.ReplicaID = -1
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = partition, current, epoch
		req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{rp}}}
		resp := c.do(req).(*kmsg.OffsetForLeaderEpochResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("answer %+v", resp.Topics)
		}
		return resp.Topics[0].Partitions[0]
	}
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			p := ask(v, 0, -1, 0)
			wantCode(t, "epoch 0", p.ErrorCode, 0)
			if p.EndOffset != 3 || (v >= 1 && p.LeaderEpoch != 0) {
				t.Fatalf("epoch 0: end offset %d, epoch %d; want 3 and 0", p.EndOffset, p.LeaderEpoch)
			}
			if p := ask(v, 0, -1, 7); p.ErrorCode != 0 || p.EndOffset != -1 {
				t.Fatalf("unknown epoch 7: error %d end offset %d, want -1", p.ErrorCode, p.EndOffset)
			}
			wantCode(t, "missing partition", ask(v, 5, -1, 0).ErrorCode, kerr.UnknownTopicOrPartition.Code)
			if v >= 2 {
				wantCode(t, "future current epoch", ask(v, 0, 9, 0).ErrorCode, kerr.UnknownLeaderEpoch.Code)
			}
		})
	}
}

func conformDescribeConfigs(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, map[string]string{"retention.ms": "3600000"})
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			describe := func(typ kmsg.ConfigResourceType, name string, names ...string) kmsg.DescribeConfigsResponseResource {
				req := kmsg.NewPtrDescribeConfigsRequest()
				req.SetVersion(v)
				req.IncludeSynonyms = v >= 1
				req.IncludeDocumentation = v >= 3
				r := kmsg.NewDescribeConfigsRequestResource()
				r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, names
				req.Resources = append(req.Resources, r)
				resp := c.do(req).(*kmsg.DescribeConfigsResponse)
				if len(resp.Resources) != 1 || resp.Resources[0].ResourceName != name || resp.Resources[0].ResourceType != typ {
					t.Fatalf("describe %v %q: answer %+v", typ, name, resp.Resources)
				}
				return resp.Resources[0]
			}
			config := func(r kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
				for _, cfg := range r.Configs {
					if cfg.Name == name {
						return cfg
					}
				}
				t.Fatalf("%s is not listed among %d configs", name, len(r.Configs))
				return kmsg.DescribeConfigsResponseResourceConfig{}
			}
			value := func(cfg kmsg.DescribeConfigsResponseResourceConfig) string {
				if cfg.Value == nil {
					return "<null>"
				}
				return *cfg.Value
			}

			tr := describe(kmsg.ConfigResourceTypeTopic, topic)
			wantCode(t, "describe topic", tr.ErrorCode, 0)
			ret := config(tr, "retention.ms")
			if value(ret) != "3600000" {
				t.Errorf("retention.ms = %s, want the override 3600000", value(ret))
			}
			mm := config(tr, "max.message.bytes")
			if value(mm) != "1048588" {
				t.Errorf("max.message.bytes = %s, want the default 1048588", value(mm))
			}
			if v == 0 {
				if ret.IsDefault || !mm.IsDefault {
					t.Errorf("is_default: retention.ms %v, max.message.bytes %v; want false, true", ret.IsDefault, mm.IsDefault)
				}
			} else {
				if ret.Source != kmsg.ConfigSourceDynamicTopicConfig || mm.Source != kmsg.ConfigSourceDefaultConfig {
					t.Errorf("sources: retention.ms %v, max.message.bytes %v; want DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG", ret.Source, mm.Source)
				}
				if len(ret.ConfigSynonyms) == 0 {
					t.Error("no synonyms for retention.ms although they were asked for")
				}
			}
			if v >= 3 && ret.ConfigType != kmsg.ConfigTypeLong {
				t.Errorf("retention.ms type %v, want LONG", ret.ConfigType)
			}
			if v >= 3 && (ret.Documentation == nil || *ret.Documentation == "") {
				t.Error("no documentation for retention.ms although it was asked for")
			}
			if one := describe(kmsg.ConfigResourceTypeTopic, topic, "retention.ms"); len(one.Configs) != 1 || one.Configs[0].Name != "retention.ms" {
				t.Errorf("config_names [retention.ms] listed %d configs", len(one.Configs))
			}

			for _, name := range []string{"", "1"} {
				br := describe(kmsg.ConfigResourceTypeBroker, name)
				wantCode(t, fmt.Sprintf("describe broker %q", name), br.ErrorCode, 0)
				if id := config(br, "broker.id"); value(id) != "1" || !id.ReadOnly {
					t.Errorf("broker.id = %s (read-only %v), want 1, read-only", value(id), id.ReadOnly)
				}
				if got := value(config(br, "socket.request.max.bytes")); got != strconv.Itoa(sharedMaxRequestBytes) {
					t.Errorf("socket.request.max.bytes = %s, want %d", got, sharedMaxRequestBytes)
				}
			}
			wantCode(t, "describe an unknown topic", describe(kmsg.ConfigResourceTypeTopic, topicName(t, "missing")).ErrorCode,
				kerr.UnknownTopicOrPartition.Code)
		})
	}
}

func conformProduce(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	var want []string
	next := int64(0)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			vals := []string{fmt.Sprintf("v%d-a", v), fmt.Sprintf("v%d-b", v), fmt.Sprintf("v%d-c", v)}
			for _, acks := range []int16{-1, 1} {
				resp := c.do(produceRequest(v, acks, topic, 0, makeBatch(noProducer, vals...))).(*kmsg.ProduceResponse)
				if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("answer %+v", resp.Topics)
				}
				p := resp.Topics[0].Partitions[0]
				wantCode(t, fmt.Sprintf("produce acks=%d", acks), p.ErrorCode, 0)
				if p.Partition != 0 || p.BaseOffset != next {
					t.Fatalf("acks=%d: partition %d base offset %d, want 0 and %d (right after the previous batch)", acks, p.Partition, p.BaseOffset, next)
				}
				if p.LogAppendTime != -1 {
					t.Errorf("log append time %d on a CreateTime topic, want -1", p.LogAppendTime)
				}
				if v >= 5 && p.LogStartOffset != 0 {
					t.Errorf("log start offset %d, want 0", p.LogStartOffset)
				}
				if resp.ThrottleMillis != 0 {
					t.Errorf("throttle %d ms", resp.ThrottleMillis)
				}
				next += int64(len(vals))
				want = append(want, vals...)
			}
		})
	}
	if got := logEnd(t, c, topic, 0); got != next {
		t.Fatalf("log end %d after producing %d records", got, next)
	}
	_, recs := decodeBatches(t, fetchedPartition(t, fetchNow(t, c, 1<<20, fetchPart{topic: topic}), topic, 0).RecordBatches)
	if !slices.Equal(values(recs), want) {
		t.Fatalf("read back %q, want %q", values(recs), want)
	}
	for i, r := range recs {
		if r.offset != int64(i) {
			t.Fatalf("record %d has offset %d", i, r.offset)
		}
	}
}

func conformFetch(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 2, nil)
	var want0 []string
	for b := range 3 {
		vals := []string{fmt.Sprintf("p0-b%d-r0", b), fmt.Sprintf("p0-b%d-r1", b)}
		mustProduce(t, c, topic, 0, makeBatch(noProducer, vals...))
		want0 = append(want0, vals...)
	}
	mustProduce(t, c, topic, 1, makeBatch(noProducer, "p1-only"))
	epoch := metadataTopic(t, c, topic).Partitions[0].LeaderEpoch

	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			fetch := func(parts ...fetchPart) *kmsg.FetchResponse {
				resp := c.do(fetchRequest(v, 0, 0, 1<<20, parts...)).(*kmsg.FetchResponse)
				if resp.ThrottleMillis != 0 || (v >= 7 && (resp.ErrorCode != 0 || resp.SessionID != 0)) {
					t.Fatalf("throttle %d, error %d, session %d; want zeros", resp.ThrottleMillis, resp.ErrorCode, resp.SessionID)
				}
				return resp
			}
			check := func(p kmsg.FetchResponseTopicPartition, hw int64) {
				t.Helper()
				wantCode(t, fmt.Sprintf("partition %d", p.Partition), p.ErrorCode, 0)
				if p.HighWatermark != hw || p.LastStableOffset != hw {
					t.Errorf("partition %d: high watermark %d, last stable %d; want %d", p.Partition, p.HighWatermark, p.LastStableOffset, hw)
				}
				if v >= 5 && p.LogStartOffset != 0 {
					t.Errorf("partition %d: log start %d, want 0", p.Partition, p.LogStartOffset)
				}
				if p.AbortedTransactions != nil {
					t.Errorf("partition %d: aborted transactions %v, want null", p.Partition, p.AbortedTransactions)
				}
				if v >= 11 && p.PreferredReadReplica != -1 {
					t.Errorf("partition %d: preferred read replica %d, want -1", p.Partition, p.PreferredReadReplica)
				}
			}

			le := int32(0)
			if v >= 9 {
				le = epoch // the leader epoch Metadata reports must be accepted
			}
			resp := fetch(fetchPart{topic: topic, partition: 0, leaderEpoch: le}, fetchPart{topic: topic, partition: 1, leaderEpoch: le})
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
				t.Fatalf("answer %+v, want one topic with two partitions", resp.Topics)
			}
			p0 := fetchedPartition(t, resp, topic, 0)
			check(p0, 6)
			batches, recs := decodeBatches(t, p0.RecordBatches)
			if len(batches) != 3 || !slices.Equal(values(recs), want0) {
				t.Fatalf("partition 0: %d batches %q, want 3 batches %q", len(batches), values(recs), want0)
			}
			for i, r := range recs {
				if r.offset != int64(i) {
					t.Fatalf("partition 0: record %d at offset %d", i, r.offset)
				}
			}
			p1 := fetchedPartition(t, resp, topic, 1)
			check(p1, 1)
			if _, recs := decodeBatches(t, p1.RecordBatches); !slices.Equal(values(recs), []string{"p1-only"}) {
				t.Fatalf("partition 1: %q", values(recs))
			}

			// From the middle of the second batch: that whole batch comes first.
			mid := fetchedPartition(t, fetch(fetchPart{topic: topic, offset: 3}), topic, 0)
			check(mid, 6)
			_, recs = decodeBatches(t, mid.RecordBatches)
			if len(recs) != 4 || recs[0].offset != 2 || recs[1].offset != 3 || recs[3].offset != 5 {
				t.Fatalf("fetch from offset 3: records %+v, want offsets 2..5", recs)
			}

			// At the high watermark: nothing, no error.
			end := fetchedPartition(t, fetch(fetchPart{topic: topic, offset: 6}), topic, 0)
			check(end, 6)
			if len(end.RecordBatches) != 0 {
				t.Fatalf("fetch at the high watermark returned %d bytes", len(end.RecordBatches))
			}
		})
	}
}

func conformListOffsets(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	base := time.Now().Add(-time.Hour).UnixMilli()
	// Four batches of two records: offsets 0,2,4,6 at timestamps base, +1000, +2000, +3000.
	for b := range 4 {
		mustProduce(t, c, topic, 0, makeBatch(batchOpts{producerID: -1, epoch: -1, seq: -1, timestamp: base + int64(b)*1000}, "x", "y"))
	}
	epoch := metadataTopic(t, c, topic).Partitions[0].LeaderEpoch
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			list := func(ts int64) kmsg.ListOffsetsResponseTopicPartition {
				t.Helper()
				p := listOffsetsAt(t, c, v, topic, 0, ts)
				wantCode(t, fmt.Sprintf("timestamp %d", ts), p.ErrorCode, 0)
				if v == 0 {
					// v0 answers with old-style offsets only.
					if len(p.OldStyleOffsets) > 1 {
						t.Fatalf("timestamp %d: old-style offsets %v", ts, p.OldStyleOffsets)
					}
					p.Offset = -1
					if len(p.OldStyleOffsets) == 1 {
						p.Offset = p.OldStyleOffsets[0]
					}
				}
				if v >= 4 && p.LeaderEpoch != epoch {
					t.Errorf("timestamp %d: leader epoch %d, want %d", ts, p.LeaderEpoch, epoch)
				}
				return p
			}
			if got := list(-1).Offset; got != 8 {
				t.Errorf("latest (-1) = %d, want 8", got)
			}
			if got := list(-2).Offset; got != 0 {
				t.Errorf("earliest (-2) = %d, want 0", got)
			}
			for _, tc := range []struct {
				ts, offset int64
			}{{base - 5000, 0}, {base + 1000, 2}, {base + 1001, 2}, {base + 1500, 4}, {base + 3001, 6}, {base + 3002, -1}} {
				p := list(tc.ts)
				if p.Offset != tc.offset {
					t.Errorf("timestamp base%+d: offset %d, want %d", tc.ts-base, p.Offset, tc.offset)
				}
				if v >= 1 {
					switch {
					case tc.offset == -1 && p.Timestamp != -1:
						t.Errorf("timestamp base%+d: found timestamp %d, want -1", tc.ts-base, p.Timestamp)
					case tc.offset >= 0 && (p.Timestamp < tc.ts || p.Timestamp > base+tc.offset/2*1000+1):
						t.Errorf("timestamp base%+d: found timestamp base%+d, want the batch's", tc.ts-base, p.Timestamp-base)
					}
				}
			}
			if v >= 2 {
				req := listOffsetsRequest(v, topic, 0, -1)
				req.IsolationLevel = 1 // read_committed: the last stable offset, the same without transactions
				p := c.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
				if p.ErrorCode != 0 || p.Offset != 8 {
					t.Errorf("read_committed latest: %s, offset %d; want 8", errName(p.ErrorCode), p.Offset)
				}
			}
			if v >= 4 {
				req := listOffsetsRequest(v, topic, 0, -1)
				req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch + 1
				p := c.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
				wantCode(t, "newer current leader epoch", p.ErrorCode, kerr.UnknownLeaderEpoch.Code)
			}
		})
	}
}

// sameKeys compares two ApiVersions key lists (keys and ranges, in order).
func sameKeys(a, b []kmsg.ApiVersionsResponseApiKey) bool {
	return slices.EqualFunc(a, b, func(x, y kmsg.ApiVersionsResponseApiKey) bool {
		return x.ApiKey == y.ApiKey && x.MinVersion == y.MinVersion && x.MaxVersion == y.MaxVersion
	})
}
