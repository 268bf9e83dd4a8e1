package kafkaapi_test

// controller_mutation_rate (KIP-599) at every advertised version of CreateTopics,
// DeleteTopics and CreatePartitions: strict versions refuse a topic asked for while
// the client is in debt with THROTTLING_QUOTA_EXCEEDED, older ones accept it; both
// answer the throttle and mute the connection.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/quota"
)

// mutationBurst is the bucket of a client with a controller_mutation_rate of 1:
// quota.window.num (11) windows of 1 s. A topic of mutationBurst+1 partitions takes
// it one partition into debt: a throttle of 1 s.
const mutationBurst = 11

// mutationQuotaConn sets a controller_mutation_rate of 1 for client id id, waits
// until the node applies it, and dials a connection as that client.
func mutationQuotaConn(t *testing.T, c *kconn, addr, id string) *kconn {
	t.Helper()
	entity := []quotaPart{{quota.TypeClientID, strp(id)}}
	wantCode(t, "set quota", alterQuotas(t, c, 1, false, entity, quotaOp(quota.ControllerMutationRate, 1)), 0)
	comp := kmsg.NewDescribeClientQuotasRequestComponent()
	comp.EntityType, comp.MatchType, comp.Match = quota.TypeClientID, 0, strp(id)
	for deadline := time.Now().Add(10 * time.Second); ; {
		// DescribeClientQuotas answers from the node's metadata cache, which the
		// quotas are enforced from.
		if _, got := describeQuotas(t, c, 1, true, comp); got["client-id="+id][quota.ControllerMutationRate] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the quota of %s is not applied after 10 s", id)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	return dialAs(t, addr, id)
}

// checkMuted checks that the connection reads no request until the throttle
// answered (ms; -1 for a version without it, whose throttle is about 2 s) ends.
func checkMuted(t *testing.T, qc *kconn, ms int32) {
	t.Helper()
	least := 500 * time.Millisecond
	if ms >= 0 {
		// The mute runs from the answer's hand-off to the writer, which a loaded
		// machine may deliver late: half the throttle, not thousands of requests
		// a second as an unmuted connection answers.
		least = time.Duration(ms) * time.Millisecond / 2
	}
	start := time.Now()
	req := kmsg.NewPtrApiVersionsRequest()
	qc.do(req)
	if waited := time.Since(start); waited < least {
		t.Errorf("the next request was answered after %v: the connection was not muted for its throttle (%d ms)", waited, ms)
	}
}

// wantThrottled checks the throttle of a request that took the client into debt
// and returns it (-1 before version from, which has none): 1 s per partition of
// debt, 1 when the second topic was refused, 2 when it was accepted too, less
// what the bucket refilled while the request was handled (up to 1.5 s allowed,
// for a loaded machine).
func wantThrottled(t *testing.T, v, from int16, strict bool, ms int32) int32 {
	t.Helper()
	if v < from {
		return -1
	}
	want := int32(2000)
	if strict {
		want = 1000
	}
	if ms <= 0 || ms > want || ms < want-1500 {
		t.Errorf("throttle_time_ms %d, want about %d", ms, want)
	}
	return ms
}

// wantQuotaRefusal checks a strict refusal: THROTTLING_QUOTA_EXCEEDED with a message.
func wantQuotaRefusal(t *testing.T, what string, code int16, msg *string) {
	t.Helper()
	wantCode(t, what, code, kerr.ThrottlingQuotaExceeded.Code)
	if msg == nil {
		t.Errorf("%s: no error message", what)
	}
}

func TestControllerMutationQuota(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	profile := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range advertisedProfile(t, c) {
		profile[k.ApiKey] = k
	}
	for _, tc := range []struct {
		key    int16
		strict int16 // first strict version
		test   func(t *testing.T, c, qc *kconn, v int16, strict bool) int32
	}{
		{19, 6, mutationCreateTopics},
		{20, 5, mutationDeleteTopics},
		{37, 3, mutationCreatePartitions},
	} {
		k, ok := profile[tc.key]
		if !ok {
			t.Fatalf("key %d not advertised", tc.key)
		}
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			t.Run(fmt.Sprintf("%s/v%d", kmsg.NameForKey(tc.key), v), func(t *testing.T) {
				qc := mutationQuotaConn(t, c, n.KafkaAddr(), fmt.Sprintf("mutations-%d-v%d", tc.key, v))
				checkMuted(t, qc, tc.test(t, c, qc, v, v >= tc.strict))
			})
		}
	}
}

func mutationCreateTopics(t *testing.T, c, qc *kconn, v int16, strict bool) int32 {
	create := func(validateOnly bool, topics map[string]int32, names ...string) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(v)
		req.TimeoutMillis = 30000
		req.ValidateOnly = validateOnly
		for _, name := range names {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, topics[name], 1
			req.Topics = append(req.Topics, rt)
		}
		resp := qc.do(req).(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != len(names) {
			t.Fatalf("%d answers for %d topics", len(resp.Topics), len(names))
		}
		return resp
	}
	big, small, dup := topicName(t, "big"), topicName(t, "small"), topicName(t, "dup")
	createTopic(t, c, dup, 1, nil)
	sizes := map[string]int32{big: mutationBurst + 1, small: 1, dup: 1}
	if v >= 1 { // validate_only does not count
		resp := create(true, map[string]int32{big: 1000}, big)
		wantCode(t, "validate_only", resp.Topics[0].ErrorCode, 0)
		if resp.ThrottleMillis != 0 {
			t.Fatalf("validate_only of 1000 partitions throttled %d ms", resp.ThrottleMillis)
		}
	}
	resp := create(false, sizes, big, small, dup)
	wantCode(t, "the topic asked for within the quota", resp.Topics[0].ErrorCode, 0)
	// In debt or not, a topic's own error comes first, as in Kafka.
	wantCode(t, "an existing topic asked for in debt", resp.Topics[2].ErrorCode, kerr.TopicAlreadyExists.Code)
	ms := wantThrottled(t, v, 2, strict, resp.ThrottleMillis)
	if strict {
		wantQuotaRefusal(t, "the topic asked for in debt", resp.Topics[1].ErrorCode, resp.Topics[1].ErrorMessage)
		wantCode(t, "metadata of the refused topic", metadataTopic(t, c, small).ErrorCode, kerr.UnknownTopicOrPartition.Code)
	} else {
		wantCode(t, "the topic asked for in debt (not strict)", resp.Topics[1].ErrorCode, 0)
		wantCode(t, "metadata of the second topic", metadataTopic(t, c, small).ErrorCode, 0)
	}
	return ms
}

func mutationDeleteTopics(t *testing.T, c, qc *kconn, v int16, strict bool) int32 {
	big, small := topicName(t, "big"), topicName(t, "small")
	createTopic(t, c, big, mutationBurst+1, nil)
	createTopic(t, c, small, 1, nil)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(v)
	req.TimeoutMillis = 30000
	for _, name := range []string{big, small} {
		if v >= 6 {
			req.Topics = append(req.Topics, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)})
		} else {
			req.TopicNames = append(req.TopicNames, name)
		}
	}
	resp := qc.do(req).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("%d answers for 2 topics", len(resp.Topics))
	}
	wantCode(t, "the topic deleted within the quota", resp.Topics[0].ErrorCode, 0)
	ms := wantThrottled(t, v, 1, strict, resp.ThrottleMillis)
	if strict {
		wantQuotaRefusal(t, "the topic deleted in debt", resp.Topics[1].ErrorCode, resp.Topics[1].ErrorMessage)
		wantCode(t, "metadata of the topic kept", metadataTopic(t, c, small).ErrorCode, 0)
	} else {
		wantCode(t, "the topic deleted in debt (not strict)", resp.Topics[1].ErrorCode, 0)
		wantCode(t, "metadata of the second topic", metadataTopic(t, c, small).ErrorCode, kerr.UnknownTopicOrPartition.Code)
	}
	return ms
}

func mutationCreatePartitions(t *testing.T, c, qc *kconn, v int16, strict bool) int32 {
	big, small, shrunk := topicName(t, "big"), topicName(t, "small"), topicName(t, "shrunk")
	createTopic(t, c, big, 1, nil)
	createTopic(t, c, small, 1, nil)
	createTopic(t, c, shrunk, 2, nil)
	vo := qc.do(createPartitionsRequest(v, true, growTopic(big, 1000))).(*kmsg.CreatePartitionsResponse)
	wantCode(t, "validate_only", vo.Topics[0].ErrorCode, 0)
	if vo.ThrottleMillis != 0 {
		t.Fatalf("validate_only of 999 partitions throttled %d ms", vo.ThrottleMillis)
	}
	resp := qc.do(createPartitionsRequest(v, false, growTopic(big, mutationBurst+2), growTopic(small, 2), growTopic(shrunk, 1))).(*kmsg.CreatePartitionsResponse)
	if len(resp.Topics) != 3 {
		t.Fatalf("%d answers for 3 topics", len(resp.Topics))
	}
	wantCode(t, "the partitions added within the quota", resp.Topics[0].ErrorCode, 0)
	// In debt or not, a request's own error comes first, as in Kafka.
	wantCode(t, "a count not above the current one, in debt", resp.Topics[2].ErrorCode, kerr.InvalidPartitions.Code)
	ms := wantThrottled(t, v, 0, strict, resp.ThrottleMillis)
	want := int32(2)
	if strict {
		wantQuotaRefusal(t, "the partitions added in debt", resp.Topics[1].ErrorCode, resp.Topics[1].ErrorMessage)
		want = 1
	} else {
		wantCode(t, "the partitions added in debt (not strict)", resp.Topics[1].ErrorCode, 0)
	}
	if got := len(metadataTopic(t, c, small).Partitions); got != int(want) {
		t.Errorf("%s has %d partitions, want %d", small, got, want)
	}
	return ms
}

// TestControllerMutationQuotaKadm: kadm's CreateTopics, CreatePartitions and
// DeleteTopics from a client with a quota have the second topic of each request
// refused with THROTTLING_QUOTA_EXCEEDED once the first takes the client into debt
// (kgo waits out each throttle, after which the client is no longer in debt); a
// client without a quota beside it is not throttled.
func TestControllerMutationQuotaKadm(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	mutationQuotaConn(t, c, n.KafkaAddr(), "mutations-kadm")
	var throttled, freeThrottled atomic.Int32
	client := func(id string, seen *atomic.Int32) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ClientID(id), kgo.WithHooks(throttleHook(func(time.Duration) { seen.Add(1) })))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	adm, free := client("mutations-kadm", &throttled), client("mutations-free", &freeThrottled)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b, one, spare := topicName(t, "a"), topicName(t, "b"), topicName(t, "one"), topicName(t, "spare")
	if _, err := free.CreateTopics(ctx, 1, 1, nil, one, spare); err != nil {
		t.Fatal(err)
	}

	// The bucket holds 11 partitions: a's 12 take it into debt, b is refused.
	created, err := adm.CreateTopics(ctx, mutationBurst+1, 1, nil, a, b)
	if err != nil || created[a].Err != nil || !errors.Is(created[b].Err, kerr.ThrottlingQuotaExceeded) {
		t.Fatalf("create a and b: %v %+v, want a created and b THROTTLING_QUOTA_EXCEEDED", err, created)
	}
	grown, err := adm.CreatePartitions(ctx, 1, a, one)
	if err != nil || grown[a].Err != nil || !errors.Is(grown[one].Err, kerr.ThrottlingQuotaExceeded) {
		t.Fatalf("grow a and %s: %v %+v, want a grown and the other THROTTLING_QUOTA_EXCEEDED", one, err, grown)
	}
	deleted, err := adm.DeleteTopics(ctx, one, a)
	if err != nil || deleted[one].Err != nil || !errors.Is(deleted[a].Err, kerr.ThrottlingQuotaExceeded) {
		t.Fatalf("delete %s and a: %v %+v, want the first deleted and a THROTTLING_QUOTA_EXCEEDED", one, err, deleted)
	}
	if throttled.Load() < 3 {
		t.Errorf("the client with a quota saw %d throttles, want one per request", throttled.Load())
	}

	// Beside it, a client without a quota creates, grows and deletes 30 partitions
	// at once and is neither refused nor throttled.
	if _, err := free.CreateTopic(ctx, 30, 1, nil, b); err != nil {
		t.Fatalf("create without a quota: %v", err)
	}
	if resp, err := free.CreatePartitions(ctx, 30, b); err != nil || resp[b].Err != nil {
		t.Fatalf("create partitions without a quota: %v %+v", err, resp)
	}
	if resp, err := free.DeleteTopics(ctx, a, b, spare); err != nil || resp.Error() != nil {
		t.Fatalf("delete without a quota: %v %v", err, resp.Error())
	}
	if got := freeThrottled.Load(); got != 0 {
		t.Errorf("the client without a quota was throttled %d times", got)
	}
}

// throttleHook calls f with each throttle a broker answers.
type throttleHook func(time.Duration)

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) { h(d) }
