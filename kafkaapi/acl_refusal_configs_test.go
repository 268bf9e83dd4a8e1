package kafkaapi_test

// The refusal cases of DeleteRecords, AlterConfigs and IncrementalAlterConfigs
// (TestACLRefusals).

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func configRefusals() []refusal {
	return []refusal{
		{name: "DeleteRecords needs DELETE", want: kerr.TopicAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDeleteRecordsRequest()
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = r.topic
				rt.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 1}}
				req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
				return req
			},
			codes: topLevel(func(r *kmsg.DeleteRecordsResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }),
			unchanged: func(t *testing.T, r *refusalRun) {
				offs, err := r.adm.ListStartOffsets(refusalCtx(t), r.topic)
				if o, ok := offs.Lookup(r.topic, 0); err != nil || !ok || o.Offset != 0 {
					t.Fatalf("log start after the refusal: %+v %v, want 0", o, err)
				}
			},
			grants: []string{"ALLOW DELETE TOPIC LITERAL TOPIC_NAME"}},
		{name: "AlterConfigs of a topic needs ALTER_CONFIGS", want: kerr.TopicAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrAlterConfigsRequest()
				res := kmsg.NewAlterConfigsRequestResource()
				res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, r.topic
				res.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("3600000")}}
				req.Resources = append(req.Resources, res)
				return req
			},
			codes:     topLevel(func(r *kmsg.AlterConfigsResponse) int16 { return r.Resources[0].ErrorCode }),
			unchanged: retentionUnset,
			grants:    []string{"ALLOW ALTER_CONFIGS TOPIC LITERAL TOPIC_NAME"}},
		{name: "IncrementalAlterConfigs of a topic needs ALTER_CONFIGS", want: kerr.TopicAuthorizationFailed.Code,
			req:       incrementalAlterReq(kmsg.ConfigResourceTypeTopic, "retention.ms", "3600000"),
			codes:     topLevel(func(r *kmsg.IncrementalAlterConfigsResponse) int16 { return r.Resources[0].ErrorCode }),
			unchanged: retentionUnset,
			grants:    []string{"ALLOW ALTER_CONFIGS TOPIC PREFIXED TOPIC_NAME"}},
		{name: "IncrementalAlterConfigs of a broker needs ALTER_CONFIGS on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			req:   incrementalAlterReq(kmsg.ConfigResourceTypeBroker, "log.retention.check.interval.ms", "300000"),
			codes: topLevel(func(r *kmsg.IncrementalAlterConfigsResponse) int16 { return r.Resources[0].ErrorCode }),
			unchanged: func(t *testing.T, r *refusalRun) {
				cs, err := r.adm.DescribeBrokerConfigs(refusalCtx(t), aclNode.node.ID())
				if err != nil {
					t.Fatal(err)
				}
				c, err := cs.On(strconv.Itoa(int(aclNode.node.ID())), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, cf := range c.Configs {
					if cf.Key == "log.retention.check.interval.ms" && cf.Source == kmsg.ConfigSourceDynamicBrokerConfig {
						t.Fatalf("log.retention.check.interval.ms was set for the broker: %+v", cf)
					}
				}
			},
			grants: []string{"ALLOW ALTER_CONFIGS CLUSTER LITERAL kafka-cluster"}},
	}
}

// incrementalAlterReq sets one config of the case's topic, or of the ACL node's
// broker.
func incrementalAlterReq(rt kmsg.ConfigResourceType, name, value string) func(r *refusalRun) kmsg.Request {
	return func(r *refusalRun) kmsg.Request {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = rt, r.topic
		if rt == kmsg.ConfigResourceTypeBroker {
			res.ResourceName = strconv.Itoa(int(aclNode.node.ID()))
		}
		res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(value)}}
		req.Resources = append(req.Resources, res)
		return req
	}
}

// retentionUnset checks that the case's topic does not set retention.ms.
func retentionUnset(t *testing.T, r *refusalRun) {
	cs, err := r.adm.DescribeTopicConfigs(refusalCtx(t), r.topic)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cs.On(r.topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cf := range c.Configs {
		if cf.Key == "retention.ms" && cf.Source == kmsg.ConfigSourceDynamicTopicConfig {
			t.Fatalf("retention.ms was set: %+v", cf)
		}
	}
}
