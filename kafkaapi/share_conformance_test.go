package kafkaapi_test

// Conformance of the share-group keys (76..79): membership, then a share session
// that acquires, renews, releases and accepts records, at every advertised version.

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	conformanceTests[76] = conformShareGroupHeartbeat
	conformanceTests[77] = conformShareGroupDescribe
	conformanceTests[78] = conformShareFetch
	conformanceTests[79] = conformShareAcknowledge
}

// topicIDOf asks Metadata v12 for a topic's id.
func topicIDOf(t *testing.T, c *kconn, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := c.do(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || resp.Topics[0].TopicID == ([16]byte{}) {
		t.Fatalf("metadata v12 of %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].TopicID
}

func shareHeartbeat(c *kconn, v int16, group, member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.SetVersion(v)
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
	return c.do(req).(*kmsg.ShareGroupHeartbeatResponse)
}

func conformShareGroupHeartbeat(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 2, nil)
	id := topicIDOf(t, c, topic)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			group := topicName(t, "group")
			coordinatorFor(t, c, group)
			join := shareHeartbeat(c, v, group, "m1", 0, []string{topic})
			wantCode(t, "join", join.ErrorCode, 0)
			if join.MemberEpoch <= 0 || join.Assignment == nil || len(join.Assignment.TopicPartitions) != 1 {
				t.Fatalf("join: epoch %d assignment %+v, want an epoch and both partitions", join.MemberEpoch, join.Assignment)
			}
			if a := join.Assignment.TopicPartitions[0]; a.TopicID != id || len(a.Partitions) != 2 {
				t.Fatalf("assignment %+v, want partitions 0 and 1 of %x", a, id)
			}
			// A second member shares the same partitions.
			other := shareHeartbeat(c, v, group, "m2", 0, []string{topic})
			if other.Assignment == nil || len(other.Assignment.TopicPartitions[0].Partitions) != 2 {
				t.Fatalf("second member's assignment %+v, want both partitions too", other.Assignment)
			}
			beat := shareHeartbeat(c, v, group, "m1", join.MemberEpoch, nil)
			wantCode(t, "heartbeat", beat.ErrorCode, 0)
			if beat.MemberEpoch != join.MemberEpoch || beat.Assignment != nil {
				t.Errorf("heartbeat: epoch %d, assignment %+v; want %d and no new assignment", beat.MemberEpoch, beat.Assignment, join.MemberEpoch)
			}
			wantCode(t, "wrong epoch", shareHeartbeat(c, v, group, "m1", join.MemberEpoch+5, nil).ErrorCode, kerr.FencedMemberEpoch.Code)
			wantCode(t, "unknown member", shareHeartbeat(c, v, group, "nobody", 3, nil).ErrorCode, kerr.UnknownMemberID.Code)
			wantCode(t, "empty member id", shareHeartbeat(c, v, group, "", 0, []string{topic}).ErrorCode, kerr.InvalidRequest.Code)
			if leave := shareHeartbeat(c, v, group, "m1", -1, nil); leave.ErrorCode != 0 || leave.MemberEpoch != -1 {
				t.Errorf("leave: %s epoch %d", errName(leave.ErrorCode), leave.MemberEpoch)
			}
			wantCode(t, "after leaving", shareHeartbeat(c, v, group, "m1", join.MemberEpoch, nil).ErrorCode, kerr.UnknownMemberID.Code)
		})
	}
}

func conformShareGroupDescribe(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			group := topicName(t, "group")
			coordinatorFor(t, c, group)
			shareHeartbeat(c, 1, group, "m1", 0, []string{topic})
			req := kmsg.NewPtrShareGroupDescribeRequest()
			req.SetVersion(v)
			req.GroupIDs = []string{group, group + "-none"}
			resp := c.do(req).(*kmsg.ShareGroupDescribeResponse)
			if len(resp.Groups) != 2 {
				t.Fatalf("%d groups, want 2", len(resp.Groups))
			}
			g := resp.Groups[0]
			wantCode(t, "described group", g.ErrorCode, 0)
			if g.GroupState != "Stable" || len(g.Members) != 1 || g.Members[0].MemberID != "m1" ||
				len(g.Members[0].Assignment.TopicPartitions) != 1 || g.Members[0].Assignment.TopicPartitions[0].Topic != topic {
				t.Errorf("group %+v, want Stable with m1 assigned %s", g, topic)
			}
			wantCode(t, "unknown group", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound.Code)
		})
	}
}

// shareSession is a member's share session with the node, in one test.
type shareSession struct {
	t             *testing.T
	c             *kconn
	v             int16
	group, member string
	epoch         int32
	id            [16]byte
}

func (s *shareSession) fetch(wait time.Duration, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) kmsg.ShareFetchResponseTopicPartition {
	s.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(s.v)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(s.group), kmsg.StringPtr(s.member), s.epoch
	req.MaxWaitMillis, req.MaxRecords, req.BatchSize = int32(wait/time.Millisecond), 100, 100
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = s.id
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.AcknowledgementBatches = 1<<20, acks
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := s.c.do(req).(*kmsg.ShareFetchResponse)
	wantCode(s.t, "ShareFetch", resp.ErrorCode, 0)
	s.epoch++
	if s.v >= 1 && resp.AcquisitionLockTimeoutMillis <= 0 {
		s.t.Errorf("acquisition lock timeout %d ms", resp.AcquisitionLockTimeoutMillis)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			return p
		}
	}
	return kmsg.NewShareFetchResponseTopicPartition()
}

// acquire fetches until records arrive, within 10 s.
func (s *shareSession) acquire() kmsg.ShareFetchResponseTopicPartition {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := s.fetch(500 * time.Millisecond)
		wantCode(s.t, "fetch partition", p.ErrorCode, 0)
		if len(p.AcquiredRecords) > 0 {
			return p
		}
		if time.Now().After(deadline) {
			s.t.Fatal("no records acquired within 10 s")
		}
	}
}

// openShareSession makes a topic and a share session on it whose start offset is
// set (the first fetch loads the share-partition at the log end), then produces
// values to it in one batch.
func openShareSession(t *testing.T, c *kconn, v int16, values ...string) *shareSession {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	s := &shareSession{t: t, c: c, v: v, group: topicName(t, "group"), member: "m1", id: topicIDOf(t, c, topic)}
	s.fetch(0)
	// The start offset is fixed once the share-partition is loaded: fetch until
	// a record produced now is acquired.
	deadline := time.Now().Add(10 * time.Second)
	for {
		wantCode(t, "produce", c.do(produceRequest(7, -1, topic, 0, makeBatch(noProducer, "probe"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, 0)
		p := s.fetch(200 * time.Millisecond)
		if len(p.AcquiredRecords) > 0 {
			a := p.AcquiredRecords[0]
			s.fetch(0, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.FirstOffset, LastOffset: p.AcquiredRecords[len(p.AcquiredRecords)-1].LastOffset, AcknowledgeTypes: []int8{1}})
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the share-partition did not load within 10 s")
		}
	}
	wantCode(t, "produce", c.do(produceRequest(7, -1, topic, 0, makeBatch(noProducer, values...))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, 0)
	return s
}

func conformShareFetch(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			s := openShareSession(t, c, v, "a", "b", "c")
			p := s.acquire()
			if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].LastOffset-p.AcquiredRecords[0].FirstOffset != 2 || p.AcquiredRecords[0].DeliveryCount != 1 {
				t.Fatalf("acquired %+v, want 3 records delivered once", p.AcquiredRecords)
			}
			if len(p.Records) == 0 {
				t.Fatal("no record bytes")
			}
			first := p.AcquiredRecords[0].FirstOffset
			// Release the first, accept the rest: the first comes back, counted twice.
			p = s.fetch(2*time.Second, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{
				FirstOffset: first, LastOffset: first + 2, AcknowledgeTypes: []int8{2, 1, 1}})
			wantCode(t, "acknowledge", p.AcknowledgeErrorCode, 0)
			if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != first || p.AcquiredRecords[0].LastOffset != first || p.AcquiredRecords[0].DeliveryCount != 2 {
				t.Fatalf("after a release: %+v, want offset %d delivered twice", p.AcquiredRecords, first)
			}
			// Acknowledging a record not held is INVALID_RECORD_STATE.
			p = s.fetch(0, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: first + 1, LastOffset: first + 1, AcknowledgeTypes: []int8{1}})
			wantCode(t, "acknowledge of an accepted record", p.AcknowledgeErrorCode, kerr.InvalidRecordState.Code)
			// A wrong epoch is refused; a closing fetch accepts the last record.
			stale := *s
			stale.epoch += 5
			req := kmsg.NewPtrShareFetchRequest()
			req.SetVersion(v)
			req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(s.group), kmsg.StringPtr(s.member), stale.epoch
			wantCode(t, "wrong epoch", c.do(req).(*kmsg.ShareFetchResponse).ErrorCode, kerr.InvalidShareSessionEpoch.Code)
			s.epoch = -1
			p = s.fetch(0, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: first, AcknowledgeTypes: []int8{1}})
			wantCode(t, "closing acknowledgement", p.AcknowledgeErrorCode, 0)
			req.ShareSessionEpoch = 1
			wantCode(t, "after closing", c.do(req).(*kmsg.ShareFetchResponse).ErrorCode, kerr.ShareSessionNotFound.Code)
		})
	}
}

func conformShareAcknowledge(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			s := openShareSession(t, c, v, "a", "b")
			first := s.acquire().AcquiredRecords[0].FirstOffset
			ack := func(epoch int32, renew bool, types ...int8) *kmsg.ShareAcknowledgeResponse {
				req := kmsg.NewPtrShareAcknowledgeRequest()
				req.SetVersion(v)
				req.GroupID, req.MemberID, req.ShareSessionEpoch, req.IsRenewAck = kmsg.StringPtr(s.group), kmsg.StringPtr(s.member), epoch, renew
				rt := kmsg.NewShareAcknowledgeRequestTopic()
				rt.TopicID = s.id
				rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
				rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: first + 1, AcknowledgeTypes: types}}
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return c.do(req).(*kmsg.ShareAcknowledgeResponse)
			}
			wantCode(t, "epoch 0", ack(0, false, 1).ErrorCode, kerr.InvalidShareSessionEpoch.Code)
			if v >= 2 { // RENEW (KIP-1222) keeps both acquired
				resp := ack(s.epoch, true, 4)
				s.epoch++
				wantCode(t, "renew", resp.ErrorCode, 0)
				wantCode(t, "renew partition", resp.Topics[0].Partitions[0].ErrorCode, 0)
				if resp.AcquisitionLockTimeoutMillis <= 0 {
					t.Errorf("acquisition lock timeout %d", resp.AcquisitionLockTimeoutMillis)
				}
			}
			resp := ack(s.epoch, false, 1, 3) // accept one, reject the other
			s.epoch++
			wantCode(t, "accept and reject", resp.Topics[0].Partitions[0].ErrorCode, 0)
			resp = ack(s.epoch, false, 1)
			s.epoch++
			wantCode(t, "again", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRecordState.Code)
			// Nothing is delivered again.
			if p := s.fetch(300 * time.Millisecond); len(p.AcquiredRecords) != 0 {
				t.Errorf("acquired %+v after accepting and rejecting everything", p.AcquiredRecords)
			}
		})
	}
}

// groupConfigs asks DescribeConfigs v3 for a group's configs.
func groupConfigs(t *testing.T, c *kconn, group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(3)
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, res)
	resp := c.do(req).(*kmsg.DescribeConfigsResponse)
	wantCode(t, "describe group configs", resp.Resources[0].ErrorCode, 0)
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, rc := range resp.Resources[0].Configs {
		out[rc.Name] = rc
	}
	return out
}

// alterGroupConfigs sends IncrementalAlterConfigs v for a group's configs.
func alterGroupConfigs(c *kconn, v int16, group string, validate bool, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(v)
	req.ValidateOnly = validate
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.Configs = kmsg.ConfigResourceTypeGroupConfig, group, cfgs
	req.Resources = append(req.Resources, res)
	return c.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
}

// TestShareGroupConfigs: IncrementalAlterConfigs (v0, v1) and DescribeConfigs of the
// GROUP resource, a share group's configs.
func TestShareGroupConfigs(t *testing.T) {
	c := dial(t, sharedNode(t).KafkaAddr())
	for _, v := range []int16{0, 1} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			group := topicName(t, "group")
			alter := func(validate bool, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
				return alterGroupConfigs(c, v, group, validate, cfgs...)
			}
			set := func(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
				return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(value)}
			}
			if got := groupConfigs(t, c, group)["share.auto.offset.reset"]; got.Value == nil || *got.Value != "latest" || got.Source != kmsg.ConfigSourceDefaultConfig {
				t.Fatalf("default share.auto.offset.reset %+v, want latest", got)
			}
			wantCode(t, "validate only", alter(true, set("share.auto.offset.reset", "earliest")).ErrorCode, 0)
			if got := groupConfigs(t, c, group)["share.auto.offset.reset"]; *got.Value != "latest" {
				t.Fatalf("validate_only changed the config to %s", *got.Value)
			}
			wantCode(t, "set", alter(false, set("share.auto.offset.reset", "earliest"), set("share.record.lock.duration.ms", "15000")).ErrorCode, 0)
			got := groupConfigs(t, c, group)
			if rc := got["share.auto.offset.reset"]; *rc.Value != "earliest" || rc.Source != kmsg.ConfigSourceGroupConfig {
				t.Errorf("share.auto.offset.reset %+v, want earliest set on the group", rc)
			}
			if rc := got["share.record.lock.duration.ms"]; *rc.Value != "15000" {
				t.Errorf("share.record.lock.duration.ms %s, want 15000", *rc.Value)
			}
			wantCode(t, "bad value", alter(false, set("share.auto.offset.reset", "middle")).ErrorCode, kerr.InvalidConfig.Code)
			wantCode(t, "unknown name", alter(false, set("share.nonsense", "1")).ErrorCode, kerr.InvalidConfig.Code)
			wantCode(t, "twice", alter(false, set("share.auto.offset.reset", "latest"), set("share.auto.offset.reset", "earliest")).ErrorCode, kerr.InvalidRequest.Code)
			del := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "share.auto.offset.reset", Op: kmsg.IncrementalAlterConfigOpDelete}
			wantCode(t, "delete", alter(false, del).ErrorCode, 0)
			if rc := groupConfigs(t, c, group)["share.auto.offset.reset"]; *rc.Value != "latest" || rc.Source != kmsg.ConfigSourceDefaultConfig {
				t.Errorf("after delete: %+v, want the default", rc)
			}
		})
	}
}

func init() {
	conformanceTests[90] = conformDescribeShareGroupOffsets
	conformanceTests[91] = conformAlterShareGroupOffsets
	conformanceTests[92] = conformDeleteShareGroupOffsets
}

// shareOffsetsFixture is a topic of one partition holding 10 records and a share
// group coordinated by the node.
func shareOffsetsFixture(t *testing.T, c *kconn) (topic, group string) {
	topic, group = topicName(t, ""), topicName(t, "group")
	createTopic(t, c, topic, 1, nil)
	wantCode(t, "produce", c.do(produceRequest(7, -1, topic, 0, makeBatch(noProducer, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, 0)
	coordinatorFor(t, c, group)
	return topic, group
}

func alterShareOffset(c *kconn, v int16, group, topic string, offset int64) *kmsg.AlterShareGroupOffsetsResponse {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.SetVersion(v)
	req.GroupID = group
	req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: offset}}}}
	return c.do(req).(*kmsg.AlterShareGroupOffsetsResponse)
}

func describeShareOffset(t *testing.T, c *kconn, v int16, group, topic string) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.SetVersion(v)
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	if topic != "" {
		rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}
	}
	req.Groups = append(req.Groups, rg)
	resp := c.do(req).(*kmsg.DescribeShareGroupOffsetsResponse)
	wantCode(t, "describe group", resp.Groups[0].ErrorCode, 0)
	if len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("described %+v, want one partition", resp.Groups[0].Topics)
	}
	return resp.Groups[0].Topics[0].Partitions[0]
}

func conformDescribeShareGroupOffsets(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			topic, group := shareOffsetsFixture(t, c)
			req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			req.SetVersion(v)
			req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
			wantCode(t, "unknown group", c.do(req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound.Code)
			wantCode(t, "alter", alterShareOffset(c, 0, group, topic, 4).Topics[0].Partitions[0].ErrorCode, 0)
			for _, named := range []string{topic, ""} { // named, and every partition with a state
				p := describeShareOffset(t, c, v, group, named)
				if p.StartOffset != 4 || p.ErrorCode != 0 {
					t.Errorf("topic %q: %+v, want start offset 4", named, p)
				}
				if v >= 1 && p.Lag != 6 {
					t.Errorf("lag %d, want 6", p.Lag)
				}
			}
		})
	}
}

func conformAlterShareGroupOffsets(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			topic, group := shareOffsetsFixture(t, c)
			wantCode(t, "alter", alterShareOffset(c, v, group, topic, 7).Topics[0].Partitions[0].ErrorCode, 0)
			if p := describeShareOffset(t, c, 0, group, topic); p.StartOffset != 7 {
				t.Errorf("start offset %d, want 7", p.StartOffset)
			}
			wantCode(t, "beyond the end", alterShareOffset(c, v, group, topic, 11).Topics[0].Partitions[0].ErrorCode, kerr.OffsetOutOfRange.Code)
			wantCode(t, "unknown topic", alterShareOffset(c, v, group, topic+"-none", 0).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			// A member makes the group non-empty.
			shareHeartbeat(c, 1, group, "m1", 0, []string{topic})
			wantCode(t, "with a member", alterShareOffset(c, v, group, topic, 3).ErrorCode, kerr.NonEmptyGroup.Code)
		})
	}
}

func conformDeleteShareGroupOffsets(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			topic, group := shareOffsetsFixture(t, c)
			wantCode(t, "alter", alterShareOffset(c, 0, group, topic, 2).Topics[0].Partitions[0].ErrorCode, 0)
			req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
			req.SetVersion(v)
			req.GroupID, req.Topics = group, []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
			resp := c.do(req).(*kmsg.DeleteShareGroupOffsetsResponse)
			wantCode(t, "delete", resp.ErrorCode, 0)
			wantCode(t, "delete topic", resp.Topics[0].ErrorCode, 0)
			if p := describeShareOffset(t, c, 0, group, topic); p.StartOffset != -1 {
				t.Errorf("start offset %d after deletion, want -1", p.StartOffset)
			}
		})
	}
}

// TestMetadataByTopicID: from v10 a topic may be asked for by id alone; an
// unknown id answers UNKNOWN_TOPIC_ID.
func TestMetadataByTopicID(t *testing.T) {
	c := dial(t, sharedNode(t).KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 2, nil)
	id := topicIDOf(t, c, topic)
	for _, v := range []int16{10, 11, 12} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.MetadataRequestTopic{{TopicID: id}, {TopicID: [16]byte{1}}}
		resp := c.do(req).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %d topics, want 2", v, len(resp.Topics))
		}
		if rt := resp.Topics[0]; rt.Topic == nil || *rt.Topic != topic || rt.TopicID != id || len(rt.Partitions) != 2 {
			t.Errorf("v%d: by id: %+v, want %s with 2 partitions", v, rt, topic)
		}
		wantCode(t, fmt.Sprintf("v%d unknown id", v), resp.Topics[1].ErrorCode, kerr.UnknownTopicID.Code)
	}
}
