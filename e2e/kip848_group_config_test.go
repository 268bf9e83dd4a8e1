package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// TestKIP848GroupConfigs: a consumer group's consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms set with a franz-go client on the GROUP
// resource (kadm v1.20 has no group-config helper, so the request is sent as
// kadm would) are described, survive a restart, and rule the group: its
// heartbeat answers carry the group's interval and a silent member is removed
// at the group's session timeout, well before the broker's 45 s.
func TestKIP848GroupConfigs(t *testing.T) {
	n := testnode.Start(t, "--group-consumer-min-session-timeout", "2s", "--group-consumer-min-heartbeat-interval", "100ms")
	const topic, group = "kip848-configs", "kip848-configs-group"
	createTopic(t, n.Addr, topic, 2)
	cl := newClient(t, n.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		{Name: "consumer.session.timeout.ms", Value: kmsg.StringPtr("1000")},
	}
	alter.Resources = append(alter.Resources, res)
	resp, err := alter.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Resources[0].ErrorCode; code != kerr.InvalidConfig.Code {
		t.Fatalf("a session timeout under the broker's minimum: %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}
	alter.Resources[0].Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		{Name: "consumer.session.timeout.ms", Value: kmsg.StringPtr("3000")},
		{Name: "consumer.heartbeat.interval.ms", Value: kmsg.StringPtr("400")},
	}
	if resp, err = alter.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("set the group's configs: %v", err)
	}

	n.Stop()
	n.Restart()
	cl = newClient(t, n.Addr)
	// A member joins and goes silent; the coordinator may take a moment to read
	// the configs back after the restart (nothing else asked for them yet), so
	// it joins until it is told 400 ms.
	var joined *kmsg.ConsumerGroupHeartbeatResponse
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch = group, "silent-member-0000000000", 0
		hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 30000, []string{topic}
		hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		r, err := hb.RequestWith(ctx, cl)
		if err == nil && r.ErrorCode == 0 && r.HeartbeatIntervalMillis == 400 {
			joined = r
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never told the group's heartbeat interval: %+v, %v", r, err)
		}
		// A join at epoch 0 again is the same member admitted again in place.
	}
	silentSince := time.Now()
	adm := kadm.NewClient(cl)
	for {
		ds, err := adm.DescribeConsumerGroups(ctx, group)
		if err == nil && ds[group].Err == nil && len(ds[group].Members) == 0 {
			break
		}
		if time.Since(silentSince) > 40*time.Second {
			t.Fatalf("member %s (epoch %d) still in the group %v after the group's 3 s session: %v", "silent", joined.MemberEpoch, time.Since(silentSince), err)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
	// Described only now: a DescribeConfigs would start this node's reading of
	// the configs itself, and the coordinator must read them on its own.
	describe := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	describe.Resources = append(describe.Resources, dr)
	dresp, err := describe.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		if c.Value != nil && c.Source == kmsg.ConfigSourceGroupConfig {
			got[c.Name] = *c.Value
		}
	}
	if got["consumer.session.timeout.ms"] != "3000" || got["consumer.heartbeat.interval.ms"] != "400" {
		t.Fatalf("group configs after a restart: %v", got)
	}
}
