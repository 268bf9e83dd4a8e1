package kafkaapi_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopicsErrors checks each CreateTopics refusal, per topic, in one request
// alongside a topic that is created, and that nothing refused exists afterwards.
func TestCreateTopicsErrors(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	good := topicName(t, "good")
	dup := topicName(t, "dup")
	cfg := func(name, value string) []kmsg.CreateTopicsRequestTopicConfig {
		return []kmsg.CreateTopicsRequestTopicConfig{{Name: name, Value: kmsg.StringPtr(value)}}
	}
	tests := []struct {
		topic kmsg.CreateTopicsRequestTopic
		want  int16
	}{
		{kmsg.CreateTopicsRequestTopic{Topic: good, NumPartitions: 2, ReplicationFactor: 1}, 0},
		{kmsg.CreateTopicsRequestTopic{Topic: dup, NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidRequest.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: dup, NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidRequest.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: topicName(t, "rf2"), NumPartitions: 1, ReplicationFactor: 2}, kerr.InvalidReplicationFactor.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: topicName(t, "rf0"), NumPartitions: 1, ReplicationFactor: 0}, kerr.InvalidReplicationFactor.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: topicName(t, "p0"), NumPartitions: 0, ReplicationFactor: 1}, kerr.InvalidPartitions.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: topicName(t, "badcfg"), NumPartitions: 1, ReplicationFactor: 1, Configs: cfg("retention.ms", "soon")}, kerr.InvalidConfig.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: topicName(t, "unknowncfg"), NumPartitions: 1, ReplicationFactor: 1, Configs: cfg("no.such.config", "1")}, kerr.InvalidConfig.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: topicName(t, "compacted"), NumPartitions: 1, ReplicationFactor: 1, Configs: cfg("cleanup.policy", "compacted")}, kerr.InvalidConfig.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: topicName(t, "assign"), NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{7}}}}, kerr.InvalidReplicaAssignment.Code},
		// Partition numbers outside 0..n-1 (these crashed the node, and a huge one
		// allocated a list of that length).
		{kmsg.CreateTopicsRequestTopic{Topic: topicName(t, "assign-neg"), NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: -1, Replicas: []int32{1}}}}, kerr.InvalidReplicaAssignment.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: topicName(t, "assign-huge"), NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 1 << 30, Replicas: []int32{1}}}}, kerr.InvalidReplicaAssignment.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: topicName(t, "assign-twice"), NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}, {Partition: 0, Replicas: []int32{1}}}}, kerr.InvalidReplicaAssignment.Code},
		{kmsg.CreateTopicsRequestTopic{Topic: "__consumer_offsets", NumPartitions: 1, ReplicationFactor: 1}, kerr.InvalidRequest.Code},
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(4)
	req.TimeoutMillis = 30000
	for _, tc := range tests {
		req.Topics = append(req.Topics, tc.topic)
	}
	resp := c.do(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != len(tests) {
		t.Fatalf("%d answers to %d topics", len(resp.Topics), len(tests))
	}
	for i, tc := range tests {
		got := resp.Topics[i]
		if got.Topic != tc.topic.Topic {
			t.Fatalf("answer %d names %s, want %s", i, got.Topic, tc.topic.Topic)
		}
		if got.ErrorCode != tc.want {
			t.Errorf("%s: %s, want %s", tc.topic.Topic, errName(got.ErrorCode), errName(tc.want))
		}
		if tc.want != 0 && got.ErrorMessage == nil {
			t.Errorf("%s: refused without an error message", tc.topic.Topic)
		}
		if tc.topic.Topic == "__consumer_offsets" {
			continue
		}
		md := metadataTopic(t, c, tc.topic.Topic)
		if exists := md.ErrorCode == 0; exists != (tc.want == 0) {
			t.Errorf("%s: exists %v after the answer %s", tc.topic.Topic, exists, errName(got.ErrorCode))
		}
	}

	// A manual assignment on this broker is accepted.
	assigned := topicName(t, "assigned")
	req = kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(4)
	req.TimeoutMillis = 30000
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: assigned, NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}, {Partition: 1, Replicas: []int32{1}}}}}
	wantCode(t, "create with a replica assignment", c.do(req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, 0)
	if md := metadataTopic(t, c, assigned); len(md.Partitions) != 2 {
		t.Errorf("%s has %d partitions, want 2 as assigned", assigned, len(md.Partitions))
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(3)
	del.TopicNames = []string{"__consumer_offsets"}
	wantCode(t, "delete __consumer_offsets", c.do(del).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.InvalidRequest.Code)
}

// TestDescribeConfigsErrors checks the resources DescribeConfigs refuses, each in its
// own entry of one answer.
func TestDescribeConfigsErrors(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(3)
	req.Resources = []kmsg.DescribeConfigsRequestResource{
		{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "2"},
		{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "1"},
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topicName(t, "missing")},
		{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1", ConfigNames: []string{"num.partitions"}},
	}
	resp := c.do(req).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 4 {
		t.Fatalf("%d answers to 4 resources", len(resp.Resources))
	}
	for i, want := range []int16{kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.UnknownTopicOrPartition.Code, 0} {
		if got := resp.Resources[i].ErrorCode; got != want {
			t.Errorf("resource %d (%v %q): %s, want %s", i, req.Resources[i].ResourceType, req.Resources[i].ResourceName, errName(got), errName(want))
		}
	}
	if cfgs := resp.Resources[3].Configs; len(cfgs) != 1 || cfgs[0].Name != "num.partitions" || cfgs[0].Value == nil || *cfgs[0].Value != "1" {
		t.Errorf("broker num.partitions: %+v, want the one config, 1", cfgs)
	}
}
