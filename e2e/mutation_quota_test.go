package e2e

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

const (
	mutationRate = 20 // partitions/s
	mutationRun  = 25 * time.Second
	mutationStep = 5 // partitions added per request: few requests, so that the node keeps up under load
)

// growTo is a CreatePartitions v3 (strict) growing topic to count partitions.
func growTo(topic string, count int32) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.SetVersion(3)
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	return req
}

// growFlatOut adds mutationStep partitions to topic per CreatePartitions (v3,
// strict) until ctx ends, counting by the second the partitions added, the
// answers with a throttle and the refusals (THROTTLING_QUOTA_EXCEEDED). kgo
// waits out each throttle before its next request, as KIP-219 asks, so that
// its requests rarely find it in debt: the throttle, not refusals, holds it.
func growFlatOut(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, added, throttled, refused *perSecond) {
	count := int32(1)
	for ctx.Err() == nil {
		resp, err := growTo(topic, count+mutationStep).RequestWith(ctx, cl)
		if ctx.Err() != nil {
			return
		}
		if err != nil || len(resp.Topics) != 1 {
			t.Errorf("create partitions of %s: %v", topic, err)
			return
		}
		if resp.ThrottleMillis > 0 {
			throttled.add(1)
		}
		switch err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); {
		case err == nil:
			count += mutationStep
			added.add(mutationStep)
		case errors.Is(err, kerr.ThrottlingQuotaExceeded):
			refused.add(1)
		default:
			t.Errorf("create partitions of %s: %v", topic, err)
			return
		}
	}
}

// TestControllerMutationQuota: a client with a controller_mutation_rate of 20/s
// that adds partitions flat out is held to the quota within 10% once its burst
// is spent, and throttled; a client
// without a quota adding partitions beside it is neither.
func TestControllerMutationQuota(t *testing.T) {
	n := testnode.Start(t)
	createTopic(t, n.Addr, "mutations-throttled", 1)
	createTopic(t, n.Addr, "mutations-free", 1)
	setClientQuota(t, n.Addr, "mutating-admin", "controller_mutation_rate", mutationRate)

	var thr, freeThr throttles
	throttled := newClient(t, n.Addr, kgo.ClientID("mutating-admin"), kgo.WithHooks(&thr))
	free := newClient(t, n.Addr, kgo.ClientID("free-admin"), kgo.WithHooks(&freeThr))
	added := &perSecond{start: time.Now()}
	refused := &perSecond{start: added.start}
	throttledAt := &perSecond{start: added.start}
	freeAdded := &perSecond{start: added.start}
	freeRefused := &perSecond{start: added.start}
	ctx, cancel := context.WithTimeout(context.Background(), mutationRun)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The free client adds a partition per request, at most 2 per second.
		for ctx.Err() == nil {
			growPaced(ctx, t, free, "mutations-free", freeAdded, freeRefused)
		}
	}()
	growFlatOut(ctx, t, throttled, "mutations-throttled", added, throttledAt, refused)
	<-done

	// The burst (11 s of quota) is spent once the first answer is throttled;
	// the rate is counted from the second after that to the end of the run.
	first := -1
	for i, r := range throttledAt.secs {
		if r > 0 {
			first = i
			break
		}
	}
	if first < 0 || first+11 > int(mutationRun/time.Second) {
		t.Fatalf("first throttle in second %d of the run: no time left to measure the rate", first)
	}
	from := time.Duration(first+1) * time.Second
	rate := added.rate(from, mutationRun)
	var burst, refusals int64
	for i := range added.secs {
		if i <= first {
			burst += added.secs[i]
		}
		refusals += refused.secs[i]
	}
	t.Logf("throttled admin: %.2f partitions/s from %v to %v, quota %d (target/achieved %.3f); %d partitions before; %d throttle times, %v in all; %d refusals",
		rate, from, mutationRun, mutationRate, mutationRate/rate, burst, thr.n.Load(), time.Duration(thr.total.Load()), refusals)
	if math.Abs(rate-mutationRate)/mutationRate > 0.10 {
		t.Errorf("throttled admin added %.2f partitions/s, want within 10%% of %d", rate, mutationRate)
	}
	if thr.n.Load() == 0 {
		t.Error("the throttled admin received no throttle time")
	}
	var freeTotal, freeRefusals int64
	for i := range freeAdded.secs {
		freeTotal += freeAdded.secs[i]
		freeRefusals += freeRefused.secs[i]
	}
	if freeTotal == 0 || freeRefusals != 0 || freeThr.n.Load() != 0 {
		t.Errorf("the admin without a quota added %d partitions, was refused %d times and throttled %d times", freeTotal, freeRefusals, freeThr.n.Load())
	}
	code, body, err := n.AdminGet("/metrics")
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	want := `skiff_quota_throttle_seconds_total{client_id="mutating-admin",quota="controller_mutation_rate",user=""}`
	if !strings.Contains(string(body), want) {
		t.Errorf("/metrics has no %s", want)
	}
}

// growPaced adds one partition to topic, then waits half a second.
func growPaced(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, added, refused *perSecond) {
	mdReq := kmsg.NewPtrMetadataRequest()
	mdReq.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	md, err := mdReq.RequestWith(ctx, cl)
	if ctx.Err() != nil {
		return
	}
	if err != nil || len(md.Topics) != 1 {
		t.Errorf("metadata of %s: %v", topic, err)
		return
	}
	resp, err := growTo(topic, int32(len(md.Topics[0].Partitions))+1).RequestWith(ctx, cl)
	if ctx.Err() != nil {
		return
	}
	switch {
	case err != nil || len(resp.Topics) != 1:
		t.Errorf("create partitions of %s: %v", topic, err)
	case resp.Topics[0].ErrorCode == kerr.ThrottlingQuotaExceeded.Code:
		refused.add(1)
	case resp.Topics[0].ErrorCode != 0:
		t.Errorf("create partitions of %s: %v", topic, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	default:
		added.add(1)
	}
	select {
	case <-ctx.Done():
	case <-time.After(500 * time.Millisecond): // pacing, not a wait for a condition
	}
}
