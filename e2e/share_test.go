package e2e

// Share groups (KIP-932) through franz-go's share consumer against real `skiff
// serve` processes: many members on one partition, acknowledgements, redelivery
// after a member dies, and failover of the node leading the partition.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// shareTally counts, per record key, what share consumers received and accepted.
type shareTally struct {
	mu       sync.Mutex
	accepted map[string]int   // key -> accepts
	by       map[string]int   // consumer -> records received
	counts   map[string]int32 // key -> highest delivery count seen
}

func newShareTally() *shareTally {
	return &shareTally{accepted: map[string]int{}, by: map[string]int{}, counts: map[string]int32{}}
}

func (s *shareTally) distinct(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.accepted {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// checkOnce fails for a record accepted more than once. The caller holds s.mu.
func (s *shareTally) checkOnce(t *testing.T) {
	t.Helper()
	for k, c := range s.accepted {
		if c != 1 {
			t.Errorf("record %s accepted %d times", k, c)
		}
	}
}

// shareConsumer polls as a share group member until ctx ends, accepting every
// record (explicitly, before the next poll) and tallying it.
func shareConsumer(ctx context.Context, t *testing.T, addr, topic, group, name string, tally *shareTally, opts ...kgo.Opt) *kgo.Client {
	all := append([]kgo.Opt{
		kgo.ClientID(name),
		kgo.ShareGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)
	cl := newClient(t, addr, all...)
	go func() {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				r.Ack(kgo.AckAccept)
				tally.mu.Lock()
				tally.accepted[string(r.Key)]++
				tally.by[name]++
				tally.counts[string(r.Key)] = max(tally.counts[string(r.Key)], r.DeliveryCount())
				tally.mu.Unlock()
			})
			if ctx.Err() == nil {
				cl.FlushAcks(ctx)
			}
		}
	}()
	return cl
}

// warmUp produces records keyed warm-N until one of them is accepted: the
// share-partition then exists, its start offset (share.auto.offset.reset latest)
// below every record produced afterwards.
func warmUp(t *testing.T, ctx context.Context, prod *kgo.Client, topic string, tally *shareTally) {
	t.Helper()
	for i := 0; tally.distinct("warm-") == 0; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("warm-" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("no share consumer got a record")
		case <-time.After(200 * time.Millisecond): // polling a condition with a deadline
		}
	}
}

// waitAccepted waits until n distinct keys with prefix were accepted.
func waitAccepted(t *testing.T, ctx context.Context, tally *shareTally, prefix string, n int) {
	t.Helper()
	for tally.distinct(prefix) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d records accepted", tally.distinct(prefix), n)
		case <-time.After(50 * time.Millisecond): // polling a condition with a deadline
		}
	}
}

// TestShareGroupFiveConsumersOnePartition: five share consumers on one partition
// all get records, and every record is accepted exactly once when none fails.
func TestShareGroupFiveConsumersOnePartition(t *testing.T) {
	n := testnode.Start(t)
	const topic, group, records = "share-five", "share-five-group", 2000
	createTopic(t, n.Addr, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tally := newShareTally()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	for i := range 5 {
		shareConsumer(cctx, t, n.Addr, topic, group, fmt.Sprintf("c%d", i), tally, kgo.ShareMaxRecords(10))
	}
	prod := newClient(t, n.Addr, kgo.ProducerLinger(0))
	warmUp(t, ctx, prod, topic, tally)
	for i := range records {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte("rec-" + strconv.Itoa(i))}, nil)
		if i%50 == 49 {
			if err := prod.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitAccepted(t, ctx, tally, "rec-", records)
	stop()
	tally.mu.Lock()
	defer tally.mu.Unlock()
	tally.checkOnce(t)
	for i := range 5 {
		if tally.by[fmt.Sprintf("c%d", i)] == 0 {
			t.Errorf("consumer c%d got no record (per consumer: %v)", i, tally.by)
		}
	}
	t.Logf("records per consumer: %v", tally.by)
}

// shareHolderEnv makes the test binary a share consumer that acquires records,
// prints their offsets and then holds them, never acknowledging, until killed
// (TestShareGroupKilledConsumerRedelivered).
const shareHolderEnv = "SKIFF_E2E_SHARE_HOLDER" // addr,topic,group

func TestMain(m *testing.M) {
	if spec := os.Getenv(shareHolderEnv); spec != "" {
		holdShareRecords(spec)
		return
	}
	os.Exit(m.Run())
}

func holdShareRecords(spec string) {
	parts := strings.SplitN(spec, ",", 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(parts[0]), kgo.ShareGroup(parts[2]), kgo.ConsumeTopics(parts[1]), kgo.ShareMaxRecords(5))
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	for {
		fs := cl.PollFetches(context.Background())
		if fs.NumRecords() == 0 {
			continue
		}
		fs.EachRecord(func(r *kgo.Record) { fmt.Printf("HELD %s %d\n", r.Key, r.DeliveryCount()) })
		select {} // hold them: never poll again, so never acknowledge
	}
}

// setShareGroupConfig sets one config of a share group (the GROUP resource).
func setShareGroupConfig(t testing.TB, cl *kgo.Client, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: name, Value: kmsg.StringPtr(value)}}
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("set %s=%s on share group %s: %v", name, value, group, err)
	}
}

// TestShareGroupKilledConsumerRedelivered: a member SIGKILLed while holding
// acquired records; another member gets them (released when the killed member's
// connection closes, at the latest when their locks end), delivered for the
// second time, and every record is accepted once.
func TestShareGroupKilledConsumerRedelivered(t *testing.T) {
	n := testnode.Start(t, "--group-share-record-lock-duration", "3s")
	const topic, group, records = "share-killed", "share-killed-group", 50
	createTopic(t, n.Addr, topic, 1)
	prod := newClient(t, n.Addr)
	setShareGroupConfig(t, prod, group, "share.auto.offset.reset", "earliest")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range records {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte("rec-" + strconv.Itoa(i))}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), shareHolderEnv+"="+n.Addr+","+topic+","+group)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var key string
		var dc int
		if _, err := fmt.Sscanf(sc.Text(), "HELD %s %d", &key, &dc); err != nil {
			t.Fatalf("holder said %q", sc.Text())
		}
		if dc != 1 {
			t.Errorf("holder got %s with delivery count %d, want 1", key, dc)
		}
		held[key] = true
		if len(held) == 5 {
			break
		}
	}
	if len(held) == 0 {
		t.Fatal("the holder got no record")
	}
	killedAt := time.Now()
	holder.Process.Kill() // SIGKILL
	holder.Wait()

	tally := newShareTally()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	shareConsumer(cctx, t, n.Addr, topic, group, "survivor", tally)
	waitAccepted(t, ctx, tally, "rec-", records)
	stop()
	tally.mu.Lock()
	defer tally.mu.Unlock()
	tally.checkOnce(t)
	for k := range held {
		if dc := tally.counts[k]; dc != 2 {
			t.Errorf("held record %s was delivered again with delivery count %d, want 2", k, dc)
		}
	}
	t.Logf("%d held records redelivered; all %d accepted %v after the kill", len(held), records, time.Since(killedAt).Round(time.Millisecond))
}
