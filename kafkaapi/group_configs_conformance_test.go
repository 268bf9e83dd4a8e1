package kafkaapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroupConfigs: the GROUP resource's consumer group configs through
// IncrementalAlterConfigs (v0, v1) and DescribeConfigs: described with the
// broker's values as defaults, validated against the broker's bounds with
// INVALID_CONFIG, and used by the coordinator (the heartbeat interval a
// ConsumerGroupHeartbeat, v0 and v1, carries).
func TestConsumerGroupConfigs(t *testing.T) {
	c := dial(t, sharedNode(t).KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 2, nil)
	for _, v := range []int16{0, 1} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			group := topicName(t, "group")
			alter := func(cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
				return alterGroupConfigs(c, v, group, false, cfgs...)
			}
			set := func(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
				return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(value)}
			}
			got := groupConfigs(t, c, group)
			for name, def := range map[string]string{"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "5000"} {
				if rc := got[name]; rc.Value == nil || *rc.Value != def || rc.Source != kmsg.ConfigSourceDefaultConfig || rc.ConfigType != kmsg.ConfigTypeInt {
					t.Fatalf("default %s: %+v, want %s", name, rc, def)
				}
			}
			coordinatorFor(t, c, group)
			joined := cgJoin(c, v, group, "m-"+group, topic)
			wantCode(t, "join", joined.ErrorCode, 0)
			if joined.HeartbeatIntervalMillis != 5000 {
				t.Fatalf("heartbeat interval %d before the group's config", joined.HeartbeatIntervalMillis)
			}

			for _, bad := range []struct{ name, value, msg string }{
				{"consumer.session.timeout.ms", "30000", "must be greater than or equal to group.consumer.min.session.timeout.ms"},
				{"consumer.session.timeout.ms", "60001", "must be less than or equal to group.consumer.max.session.timeout.ms"},
				{"consumer.heartbeat.interval.ms", "16000", "must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
				{"consumer.heartbeat.interval.ms", "often", "Invalid value often"},
			} {
				r := alter(set(bad.name, bad.value))
				if r.ErrorCode != kerr.InvalidConfig.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, bad.msg) {
					t.Errorf("%s=%s: %v %v, want INVALID_CONFIG %q", bad.name, bad.value, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, bad.msg)
				}
			}
			wantCode(t, "set", alter(set("consumer.session.timeout.ms", "50000"), set("consumer.heartbeat.interval.ms", "7000"), set("share.auto.offset.reset", "earliest")).ErrorCode, 0)
			got = groupConfigs(t, c, group)
			for name, want := range map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "7000", "share.auto.offset.reset": "earliest"} {
				if rc := got[name]; rc.Value == nil || *rc.Value != want || rc.Source != kmsg.ConfigSourceGroupConfig {
					t.Errorf("%s: %+v, want %s set on the group", name, rc, want)
				}
			}
			beat := cgBeat(c, v, group, "m-"+group, joined.MemberEpoch, joined.Assignment)
			wantCode(t, "heartbeat", beat.ErrorCode, 0)
			if beat.HeartbeatIntervalMillis != 7000 {
				t.Errorf("heartbeat interval %d, want the group's 7000", beat.HeartbeatIntervalMillis)
			}
			del := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "consumer.heartbeat.interval.ms", Op: kmsg.IncrementalAlterConfigOpDelete}
			wantCode(t, "delete", alter(del).ErrorCode, 0)
			if rc := groupConfigs(t, c, group)["consumer.heartbeat.interval.ms"]; *rc.Value != "5000" || rc.Source != kmsg.ConfigSourceDefaultConfig {
				t.Errorf("after delete: %+v, want the default", rc)
			}
		})
	}
}
