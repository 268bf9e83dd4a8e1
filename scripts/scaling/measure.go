package main

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type config struct {
	bin, work     string // work: a fresh folder for the data directory and the log
	partitions    int
	idle, produce time.Duration
	extra         []string // more serve flags
}

// result is one round at one partition count.
type result struct {
	Build         string  `json:"build,omitempty"` // "base" or "new" with -baseline
	Partitions    int     `json:"partitions"`
	Round         int     `json:"round"`
	CreateSeconds float64 `json:"create_seconds"`
	// CreatePerTopicSeconds: the last CreateTopics request (up to ten topics of
	// 100) on a node holding all the other partitions, to every partition led,
	// per topic: what one more topic costs at this count.
	CreatePerTopicSeconds float64 `json:"create_per_topic_seconds"`
	IdleRSSMB             float64 `json:"idle_rss_mb"`
	IdleCPUPercent        float64 `json:"idle_cpu_percent"` // of one core
	OpenFiles             int     `json:"open_files"`
	Threads               int64   `json:"threads"`
	ProduceMBps           float64 `json:"produce_mb_per_s"`
	StopSeconds           float64 `json:"sigterm_stop_seconds"`
	RestartSeconds        float64 `json:"restart_ready_seconds"`
	KillSeconds           float64 `json:"sigkill_ready_seconds"`
}

const partitionsPerTopic = 100

func measure(ctx context.Context, cfg config) (res result, err error) {
	res.Partitions = cfg.partitions
	n, err := newNode(cfg.bin, cfg.work+"/data")
	if err != nil {
		return res, err
	}
	if _, err := n.start(ctx); err != nil {
		return res, err
	}
	defer func() {
		if n.cmd.ProcessState == nil {
			_, _ = n.stop(syscall.SIGKILL)
		}
	}()
	topics, err := createTopics(ctx, n.kafka, cfg.partitions, &res, nil)
	if err != nil {
		return res, err
	}
	if err := idleStats(n, cfg.idle, &res); err != nil {
		return res, err
	}
	if res.ProduceMBps, err = produceAll(ctx, n.kafka, topics, cfg.produce); err != nil {
		return res, err
	}
	d, err := n.stop(syscall.SIGTERM)
	if err != nil {
		return res, err
	}
	res.StopSeconds = d.Seconds()
	if d, err = n.start(ctx); err != nil {
		return res, err
	}
	res.RestartSeconds = d.Seconds()
	if _, err := n.stop(syscall.SIGKILL); err != nil {
		return res, err
	}
	if d, err = n.start(ctx); err != nil {
		return res, err
	}
	res.KillSeconds = d.Seconds()
	_, err = n.stop(syscall.SIGTERM)
	return res, err
}

// createTopics creates topics of up to 100 partitions holding count partitions
// in all, and waits until every partition has a leader. It returns each topic's
// partition count.
func createTopics(ctx context.Context, addr string, count int, res *result, configs map[string]*string) (map[string]int32, error) {
	// A short metadata age: kadm answers Metadata from a response up to this
	// old, which added 5 s (the default) to every wait for leaders.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32((2 * time.Minute).Milliseconds())) // ten topics of 100 on a slow node
	topics := map[string]int32{}
	for i := 0; count > 0; i++ {
		p := int32(min(count, partitionsPerTopic))
		topics[fmt.Sprintf("scale-%05d", i)] = p
		count -= int(p)
	}
	began := time.Now()
	const perRequest = 10
	var names []string
	for t := range topics {
		names = append(names, t)
	}
	slices.Sort(names)
	for len(names) > 0 {
		batch := names[:min(perRequest, len(names))]
		names = names[len(batch):]
		last := len(names) == 0
		if last {
			// Time the last request alone: the earlier ones first have every
			// partition led.
			if err := waitLed(ctx, adm, topics, batch); err != nil {
				return nil, err
			}
		}
		lastBegan := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		resp, err := adm.CreateTopics(cctx, topics[batch[0]], 1, configs, batch...)
		cancel()
		if err != nil {
			return nil, err
		}
		if err := resp.Error(); err != nil {
			return nil, err
		}
		if last {
			if err := waitLed(ctx, adm, topics, nil); err != nil {
				return nil, err
			}
			res.CreatePerTopicSeconds = time.Since(lastBegan).Seconds() / float64(len(batch))
		}
	}
	res.CreateSeconds = time.Since(began).Seconds()
	return topics, nil
}

// waitLed polls Metadata until every partition of topics but those named in
// except has a leader.
func waitLed(ctx context.Context, adm *kadm.Client, topics map[string]int32, except []string) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		md, err := adm.Metadata(ctx)
		if err == nil && allLed(md, topics, except) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("partitions without a leader after 5 minutes (last error %v)", err)
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

func allLed(md kadm.Metadata, topics map[string]int32, except []string) bool {
	for t, n := range topics {
		if slices.Contains(except, t) {
			continue
		}
		td, ok := md.Topics[t]
		if !ok || td.Err != nil || int32(len(td.Partitions)) != n {
			return false
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || p.Err != nil {
				return false
			}
		}
	}
	return true
}

// idleStats lets the node settle, then reads its RSS, open files and threads and
// its CPU use over d.
func idleStats(n *node, d time.Duration, res *result) error {
	time.Sleep(5 * time.Second) // settle after the creation burst: a fixed pause, not a wait for a condition
	a, err := n.stat()
	if err != nil {
		return err
	}
	began := time.Now()
	time.Sleep(d) // the measurement window
	b, err := n.stat()
	if err != nil {
		return err
	}
	cpu := float64(b.cpuTicks-a.cpuTicks) / ticksPerSecond
	res.IdleCPUPercent = 100 * cpu / time.Since(began).Seconds()
	res.IdleRSSMB = float64(b.rssKB) / 1024
	res.OpenFiles, res.Threads = b.fds, b.threads
	return nil
}

const recordSize = 1024

// produceAll produces 1 KiB records for d from one franz-go client (its defaults:
// acks=all, idempotent, linger 10 ms), to every partition in turn, and returns the
// acknowledged MB/s of record values.
func produceAll(ctx context.Context, addr string, topics map[string]int32, d time.Duration) (float64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(64<<10))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	type tp struct {
		topic string
		p     int32
	}
	var all []tp
	for t, n := range topics {
		for p := range n {
			all = append(all, tp{t, p})
		}
	}
	value := make([]byte, recordSize)
	var acked atomic.Int64
	var failed atomic.Value
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	began := time.Now()
	for i := 0; pctx.Err() == nil; i++ {
		dst := all[i%len(all)]
		cl.Produce(pctx, &kgo.Record{Topic: dst.topic, Partition: dst.p, Value: value}, func(_ *kgo.Record, err error) {
			switch {
			case err == nil:
				acked.Add(1)
			case pctx.Err() == nil:
				failed.Store(err)
			}
		})
	}
	elapsed := time.Since(began)
	if err, ok := failed.Load().(error); ok {
		return 0, fmt.Errorf("produce: %w", err)
	}
	return float64(acked.Load()*recordSize) / 1e6 / elapsed.Seconds(), nil
}
