package e2e

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// The quota test: a client-id quota holds a client that tries far more
// to its quota, after the first burst, within 10%, and gives it throttle
// times, while a client without a quota on the same node is not slowed.

// A throttled client gets its bytes in steps of one request (a produce batch
// set, a fetch response) and then waits: counted over 18 s, a step of S bytes
// is an error of up to S/18 s. Both throttled clients keep their requests to
// quotaStep so that the count measures the broker's accuracy, not the step.
const (
	quotaStep      = 256 << 10
	quotaRate      = 1 << 20 // 1 MiB/s
	quotaRun       = 30 * time.Second
	quotaSteadyAt  = 12 * time.Second
	quotaValueSize = 16 << 10
)

// throttles counts the throttle times a client receives.
type throttles struct{ n, total atomic.Int64 }

func (h *throttles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	h.total.Add(int64(d))
}

// perSecond counts bytes by the second of the run they were counted in.
type perSecond struct {
	start time.Time
	mu    sync.Mutex
	secs  [120]int64
}

func (p *perSecond) add(n int) {
	i := int(time.Since(p.start) / time.Second)
	p.mu.Lock()
	if i >= 0 && i < len(p.secs) {
		p.secs[i] += int64(n)
	}
	p.mu.Unlock()
}

// rate is the bytes per second counted from one second of the run to another.
func (p *perSecond) rate(from, to time.Duration) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var sum int64
	for i := int(from / time.Second); i < int(to/time.Second); i++ {
		sum += p.secs[i]
	}
	return float64(sum) / (to - from).Seconds()
}

func setClientQuota(t *testing.T, addr, clientID, key string, value float64) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &clientID}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: value}},
	}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("set %s=%v for client-id %s: %v %+v", key, value, clientID, err, res)
	}
	got, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: &clientID}})
	if err != nil || len(got) != 1 || len(got[0].Values) != 1 || got[0].Values[0].Value != value {
		t.Fatalf("described quotas of %s: %+v %v", clientID, got, err)
	}
}

// checkQuotaHeld checks that the throttled client (producer or consumer) got
// within 10% of the quota from 12 s to 30 s of the run and throttle times,
// and that the free one got none, and logs its accuracy (target/achieved).
func checkQuotaHeld(t *testing.T, who string, got *perSecond, thr, free *throttles) {
	t.Helper()
	rate := got.rate(quotaSteadyAt, quotaRun)
	t.Logf("throttled %s: %.0f B/s from 12 s to 30 s, quota %d (target/achieved %.3f); first second %d B; %d throttle times, %v in all",
		who, rate, quotaRate, quotaRate/rate, got.secs[0], thr.n.Load(), time.Duration(thr.total.Load()))
	if math.Abs(rate-quotaRate)/quotaRate > 0.10 {
		t.Errorf("throttled %s got %.0f B/s from 12 s to 30 s, want within 10%% of %d", who, rate, quotaRate)
	}
	if thr.n.Load() == 0 {
		t.Errorf("the throttled %s received no throttle time", who)
	}
	if free.n.Load() != 0 {
		t.Errorf("the %s without a quota received %d throttle times", who, free.n.Load())
	}
}

// pacedProduce produces quotaValueSize records to topic at up to target
// bytes/s until ctx ends, counting acknowledged value bytes in acked.
func pacedProduce(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, target float64, acked *perSecond, failed *atomic.Int64) {
	value := make([]byte, quotaValueSize)
	for i := range value {
		value[i] = byte(i * 7)
	}
	start := time.Now()
	sent := 0.0
	for ctx.Err() == nil {
		if ahead := time.Duration(sent/target*float64(time.Second)) - time.Since(start); ahead > 0 {
			select {
			case <-time.After(ahead):
			case <-ctx.Done():
				return
			}
		}
		sent += quotaValueSize
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(r *kgo.Record, err error) {
			switch {
			case err == nil:
				acked.add(len(r.Value))
			case !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed):
				// A record still buffered when the run ends fails with the
				// run's context; any other failure counts.
				if failed.Add(1) == 1 {
					t.Logf("first failed record: %v", err)
				}
			}
		})
	}
}

// TestProducerQuota: a producer with a client-id quota of 1 MiB/s tries
// 50 MB/s; from 12 s to 30 s its acknowledged bytes are within 10% of the
// quota and it receives throttle times. A producer without a quota, paced at
// 4 MB/s on the same node, reaches the same rate as alone (a same-run
// baseline) and receives no throttle time.
func TestProducerQuota(t *testing.T) {
	n := testnode.Start(t)
	createTopic(t, n.Addr, "quota-produce", 3)
	setClientQuota(t, n.Addr, "throttled-producer", "producer_byte_rate", quotaRate)
	const freeTarget = 4e6
	freeOpts := []kgo.Opt{kgo.ClientID("free-producer"), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedBytes(8 << 20)}

	// Baseline: the free producer alone for 6 s.
	var failed atomic.Int64
	var freeThrottles throttles
	free := newClient(t, n.Addr, append(freeOpts, kgo.WithHooks(&freeThrottles))...)
	alone := &perSecond{start: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	pacedProduce(ctx, t, free, "quota-produce", freeTarget, alone, &failed)
	cancel()
	baseline := alone.rate(time.Second, 6*time.Second)

	var thr throttles
	throttled := newClient(t, n.Addr, kgo.ClientID("throttled-producer"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedBytes(8<<20), kgo.ProducerBatchMaxBytes(quotaStep/3), kgo.WithHooks(&thr))
	acked := &perSecond{start: time.Now()}
	beside := &perSecond{start: acked.start}
	ctx, cancel = context.WithTimeout(context.Background(), quotaRun)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pacedProduce(ctx, t, throttled, "quota-produce", 50e6, acked, &failed) }()
	go func() { defer wg.Done(); pacedProduce(ctx, t, free, "quota-produce", freeTarget, beside, &failed) }()
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d records failed", failed.Load())
	}
	checkQuotaHeld(t, "producer", acked, &thr, &freeThrottles)
	besideRate := beside.rate(quotaSteadyAt, quotaRun)
	t.Logf("free producer: %.0f B/s beside it, %.0f B/s alone (ratio %.3f)", besideRate, baseline, besideRate/baseline)
	if besideRate < 0.8*baseline {
		t.Errorf("the producer without a quota reached %.0f B/s beside the throttled one, %.0f B/s alone", besideRate, baseline)
	}
	// The node's metrics name the throttled entity, and only it.
	code, body, err := n.AdminGet("/metrics")
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	metrics := string(body)
	for _, want := range []string{
		`skiff_quota_throttle_seconds_total{client_id="throttled-producer",quota="producer_byte_rate",user=""}`,
		`skiff_quota_rate{client_id="throttled-producer",quota="producer_byte_rate",user=""}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	if strings.Contains(metrics, `client_id="free-producer"`) {
		t.Error("/metrics has quota series of the producer without a quota")
	}
}

// TestConsumerQuota: a consumer with a client-id quota of 1 MiB/s reads a
// topic holding far more; from 12 s to 30 s it receives within 10% of the
// quota and it receives throttle times. A consumer without a quota reading the
// same topic on the same node at the same time takes as long as alone (a
// same-run baseline) and receives no throttle time.
func TestConsumerQuota(t *testing.T) {
	n := testnode.Start(t)
	const topic = "quota-consume"
	createTopic(t, n.Addr, topic, 3)
	const total = 64 << 20
	prod := newClient(t, n.Addr, kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, quotaValueSize)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range total / quotaValueSize {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	setClientQuota(t, n.Addr, "throttled-consumer", "consumer_byte_rate", quotaRate)

	// readAll reads the whole topic as clientID and returns how long it took.
	var freeThrottles throttles
	readAll := func(run string) time.Duration {
		cl := newClient(t, n.Addr, kgo.ClientID("free-consumer"), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&freeThrottles))
		defer cl.Close()
		start, got := time.Now(), 0
		for got < total {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: read %d of %d B: %v", run, got, total, err)
			}
			fs.EachRecord(func(r *kgo.Record) { got += len(r.Value) })
		}
		return time.Since(start)
	}
	alone := readAll("alone")

	var thr throttles
	slow := newClient(t, n.Addr, kgo.ClientID("throttled-consumer"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(quotaStep), kgo.FetchMaxPartitionBytes(quotaStep/3),
		kgo.WithHooks(&thr))
	received := &perSecond{start: time.Now()}
	runCtx, stop := context.WithTimeout(ctx, quotaRun)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for runCtx.Err() == nil {
			slow.PollFetches(runCtx).EachRecord(func(r *kgo.Record) { received.add(len(r.Value)) })
		}
	}()
	// The free consumer reads the topic beside it, once at the start and once
	// in the steady state.
	var beside []time.Duration
	for _, at := range []time.Duration{0, quotaSteadyAt} {
		if d := time.Until(received.start.Add(at)); d > 0 {
			time.Sleep(d) // not a wait for a condition: the second read starts at 12 s of the run
		}
		beside = append(beside, readAll(fmt.Sprintf("beside at %v", at)))
	}
	<-done
	checkQuotaHeld(t, "consumer", received, &thr, &freeThrottles)
	t.Logf("free consumer: read %d MiB in %v alone, %v beside it", total>>20, alone, beside)
	for _, d := range beside {
		if d > 3*alone+2*time.Second {
			t.Errorf("the consumer without a quota read the topic in %v beside the throttled one, %v alone", d, alone)
		}
	}
}

// TestFetchRequestThrottle: a consumer over its request_percentage gets the
// throttle in its Fetch responses (not only the mute), as in other responses.
// A client without a quota fetching the same gets none.
func TestFetchRequestThrottle(t *testing.T) {
	n := testnode.Start(t)
	const topic = "quota-request-fetch"
	createTopic(t, n.Addr, topic, 1)
	// 0.0001% of a thread: a burst of 11 µs, less than one fetch takes.
	setClientQuota(t, n.Addr, "busy-consumer", "request_percentage", 0.0001)

	// fetchThrottle fetches until the answer carries a throttle or tries run out,
	// and returns the largest throttle seen.
	fetchThrottle := func(clientID string, tries int) int32 {
		cl := newClient(t, n.Addr, kgo.ClientID(clientID))
		defer cl.Close()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
		tp := kmsg.NewFetchRequestTopicPartition()
		tp.PartitionMaxBytes = 1 << 20
		req.Topics = []kmsg.FetchRequestTopic{{Topic: topic, Partitions: []kmsg.FetchRequestTopicPartition{tp}}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var most int32
		for range tries {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("%s: fetch: %v", clientID, err)
			}
			if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("%s: fetch answered %+v", clientID, resp.Topics)
			}
			most = max(most, resp.ThrottleMillis)
			if most > 0 {
				break
			}
		}
		return most
	}
	// The node applies the quota from its etcd watch, and the client's first
	// requests fall in its burst: a busy consumer is throttled within 1,000
	// fetches (each takes more than the 11 µs burst's share once it applies).
	if got := fetchThrottle("busy-consumer", 1000); got <= 0 {
		t.Errorf("a consumer over its request_percentage got Fetch throttle_time_ms %d, want > 0", got)
	}
	if got := fetchThrottle("free-consumer", 20); got != 0 {
		t.Errorf("a consumer without a quota got Fetch throttle_time_ms %d", got)
	}
}
