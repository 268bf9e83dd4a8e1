package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// clusterResult is one 3-node cluster creating topics of replicated partitions,
// with what the first node's etcd member wrote meanwhile (etcd's own metrics).
type clusterResult struct {
	Build          string  `json:"build,omitempty"`
	Round          int     `json:"round"`
	Topics         int     `json:"topics"`
	Partitions     int     `json:"partitions_per_topic"`
	CreateSeconds  float64 `json:"create_seconds"`
	PutsPerTopic   float64 `json:"etcd_puts_per_topic"`
	PutBytesTopic  float64 `json:"etcd_put_bytes_per_topic"`
	WALBytesTopic  float64 `json:"etcd_wal_bytes_per_topic"`
	TxnsPerTopic   float64 `json:"etcd_txns_per_topic"`
	KeysAfter      float64 `json:"etcd_keys"`
	AllLedAndInISR bool    `json:"all_in_isr"`
}

// measureCluster starts three nodes (the first bootstraps, the others join
// it), creates topics of partitions partitions with three replicas each, ten
// per CreateTopics request, and waits until every partition has a leader and
// all three replicas in its ISR.
func measureCluster(ctx context.Context, cfg config, topics, partitions int) (res clusterResult, err error) {
	res.Topics, res.Partitions = topics, partitions
	var nodes []*node
	defer func() {
		for _, n := range nodes {
			if n.cmd != nil && n.cmd.ProcessState == nil {
				_, _ = n.stop(syscall.SIGKILL)
			}
		}
	}()
	for i := range 3 {
		n, err := newNode(cfg.bin, fmt.Sprintf("%s/data%d", cfg.work, i))
		if err != nil {
			return res, err
		}
		if i > 0 {
			n.extra = []string{"--join", nodes[0].etcdClient}
		}
		nodes = append(nodes, n)
		if _, err := n.start(ctx); err != nil {
			return res, err
		}
	}
	before, err := etcdMetrics(nodes[0].etcdClient)
	if err != nil {
		return res, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].kafka, nodes[1].kafka, nodes[2].kafka), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32((2 * time.Minute).Milliseconds()))
	want := map[string]int32{}
	var names []string
	for i := range topics {
		name := fmt.Sprintf("rf3-%05d", i)
		want[name] = int32(partitions)
		names = append(names, name)
	}
	began := time.Now()
	for len(names) > 0 {
		batch := names[:min(10, len(names))]
		names = names[len(batch):]
		if err := createRetrying(ctx, adm, batch, partitions); err != nil {
			return res, err
		}
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		md, err := adm.Metadata(ctx)
		if err == nil && allLed(md, want, nil) && allInISR(md, want) {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("partitions without a leader or a full ISR after 10 minutes (last error %v)", err)
		}
		time.Sleep(200 * time.Millisecond) // poll interval
	}
	res.CreateSeconds = time.Since(began).Seconds()
	res.AllLedAndInISR = true
	after, err := etcdMetrics(nodes[0].etcdClient)
	if err != nil {
		return res, err
	}
	per := func(name string) float64 { return (after[name] - before[name]) / float64(topics) }
	res.PutsPerTopic = per("etcd_mvcc_put_total")
	res.PutBytesTopic = per("etcd_debugging_mvcc_total_put_size_in_bytes")
	res.WALBytesTopic = per("etcd_disk_wal_write_bytes_total")
	res.TxnsPerTopic = per("etcd_mvcc_txn_total")
	res.KeysAfter = after["etcd_debugging_mvcc_keys_total"]
	for _, n := range nodes {
		if _, err := n.stop(syscall.SIGTERM); err != nil {
			return res, err
		}
	}
	return res, nil
}

// createRetrying creates the topics names, and again those refused because a
// broker's session lapsed meanwhile (INVALID_REPLICATION_FACTOR: on a loaded
// machine a node paused for seconds loses its session and registers again) or
// not served in time, for up to a minute; a topic that exists on a retry was
// created by the attempt before.
func createRetrying(ctx context.Context, adm *kadm.Client, names []string, partitions int) error {
	deadline := time.Now().Add(time.Minute)
	for first := true; ; first = false {
		resp, err := adm.CreateTopics(ctx, int32(partitions), 3, nil, names...)
		if err != nil {
			return err
		}
		var again []string
		for _, r := range resp.Sorted() {
			switch {
			case r.Err == nil, !first && errors.Is(r.Err, kerr.TopicAlreadyExists):
			case errors.Is(r.Err, kerr.InvalidReplicationFactor), errors.Is(r.Err, kerr.RequestTimedOut):
				again = append(again, r.Topic)
			default:
				return fmt.Errorf("create %s: %w", r.Topic, r.Err)
			}
		}
		if len(again) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topics %v still refused after a minute", again)
		}
		fmt.Fprintf(os.Stderr, "retrying the creation of %d topics\n", len(again))
		time.Sleep(500 * time.Millisecond) // a broker registers again within seconds
		names = again
	}
}

func allInISR(md kadm.Metadata, topics map[string]int32) bool {
	for t := range topics {
		for _, p := range md.Topics[t].Partitions {
			if len(p.ISR) != len(p.Replicas) {
				return false
			}
		}
	}
	return true
}

// etcdMetrics reads the unlabelled samples of an etcd member's /metrics.
func etcdMetrics(addr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = f
		}
	}
	return out, sc.Err()
}
