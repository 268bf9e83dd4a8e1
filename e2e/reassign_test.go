package e2e

import (
	"context"
	cryptorand "crypto/rand"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// createAssigned creates topic with partitions placed on replicas (RF
// len(replicas), min.insync.replicas 2) and waits until each ISR is complete.
func createAssigned(t *testing.T, addr, topic string, partitions int32, replicas []int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range partitions {
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: p, Replicas: replicas})
	}
	rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr("2")}}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, newClient(t, addr))
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s on %v: %v %+v", topic, replicas, err, resp)
	}
	poll(t, 30*time.Second, "complete ISRs of "+topic, func() bool {
		ps := leadersOf(t, addr, topic)
		for _, p := range ps {
			if len(p.ISR) != len(replicas) || p.Leader < 0 {
				return false
			}
		}
		return len(ps) == int(partitions)
	})
}

// TestReassignWhileProducing moves every replica of a topic from nodes 1 and 2
// to nodes 2 and 3 with kadm's AlterPartitionAssignments while an idempotent
// acks=all producer and a consumer run, throttled as kafka-reassign-partitions.sh
// --throttle does it (both rates on every broker, the moved partitions' current
// replicas listed in leader.replication.throttled.replicas and the new ones in
// follower.replication.throttled.replicas): ListPartitionReassignments shows the
// moves until they end, every partition ends on 2 and 3 with both in sync, node
// 3 copies the topic at the throttle's rate (within 10%, measured by its
// DescribeLogDirs sizes), and the history check finds every acknowledged record
// in the log exactly once.
func TestReassignWhileProducing(t *testing.T) { reassignWhileProducing(t, true, true) }

// TestReassignLeaderThrottle is TestReassignWhileProducing with only the
// leader's side of the throttle set: the leaders alone hold the copy to the rate.
func TestReassignLeaderThrottle(t *testing.T) { reassignWhileProducing(t, true, false) }

// TestReassignFollowerThrottle is TestReassignWhileProducing with only the
// follower's side of the throttle set.
func TestReassignFollowerThrottle(t *testing.T) { reassignWhileProducing(t, false, true) }

func reassignWhileProducing(t *testing.T, leaderSide, followerSide bool) {
	const throttle = 2 << 20 // bytes per second
	nodes := testnode.StartCluster(t, 3, faultArgs...)
	ids := []int32{nodes[0].ID, nodes[1].ID, nodes[2].ID}
	from, to := []int32{ids[0], ids[1]}, []int32{ids[1], ids[2]}
	createAssigned(t, nodes[0].Addr, faultTopic, 4, from)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// 24 MiB to move: about 12 s at the throttle.
	fill := newClient(t, nodes[0].Addr, kgo.DefaultProduceTopic(faultTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	var fillErr atomic.Value
	for i := range 2400 {
		value := fmt.Appendf(nil, "fill %d ", i) // unique for the history check, and not a workload record
		value = append(value, make([]byte, 10<<10)...)
		cryptorand.Read(value[len(value)-10<<10:]) // incompressible
		fill.Produce(ctx, &kgo.Record{Partition: int32(i % 4), Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				fillErr.CompareAndSwap(nil, err)
			}
		})
	}
	if err := fill.Flush(ctx); err != nil || fillErr.Load() != nil {
		t.Fatalf("fill: %v %v", err, fillErr.Load())
	}
	w := startWorkloadWith(t, nodes, workloadConfig{rate: 200})
	w.progress(200, time.Minute)

	adm := kadm.NewClient(newClient(t, nodes[1].Addr))
	rate := strconv.Itoa(throttle)
	var ls, fs []string
	for p := range 4 {
		ls = append(ls, fmt.Sprintf("%d:%d", p, from[0]), fmt.Sprintf("%d:%d", p, from[1]))
		fs = append(fs, fmt.Sprintf("%d:%d", p, ids[2]))
	}
	leaders, followers := strings.Join(ls, ","), strings.Join(fs, ",")
	var rates, lists []kadm.AlterConfig
	if leaderSide {
		rates = append(rates, kadm.AlterConfig{Name: "leader.replication.throttled.rate", Value: &rate})
		lists = append(lists, kadm.AlterConfig{Name: "leader.replication.throttled.replicas", Value: &leaders})
	}
	if followerSide {
		rates = append(rates, kadm.AlterConfig{Name: "follower.replication.throttled.rate", Value: &rate})
		lists = append(lists, kadm.AlterConfig{Name: "follower.replication.throttled.replicas", Value: &followers})
	}
	if _, err := adm.AlterBrokerConfigs(ctx, rates); err != nil {
		t.Fatal(err)
	}
	if rs, err := adm.AlterTopicConfigs(ctx, lists, faultTopic); err != nil || rs[0].Err != nil {
		t.Fatalf("throttled replicas: %v %+v", err, rs)
	}
	var req kadm.AlterPartitionAssignmentsReq
	for p := range int32(4) {
		req.Assign(faultTopic, p, to)
	}
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || rs.Error() != nil {
		t.Fatalf("reassign: %v %v", err, rs.Error())
	}
	type sample struct {
		at    time.Time
		bytes int64
	}
	var samples []sample
	listed := false
	took := poll(t, 2*time.Minute, "the reassignments end", func() bool {
		if dirs, err := adm.DescribeBrokerLogDirs(ctx, ids[2], kadm.TopicsSet{faultTopic: {0: {}, 1: {}, 2: {}, 3: {}}}); err == nil {
			var n int64
			dirs.Each(func(d kadm.DescribedLogDir) { d.Topics.Each(func(p kadm.DescribedLogDirPartition) { n += p.Size }) })
			samples = append(samples, sample{time.Now(), n})
		}
		ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{faultTopic: {0: {}, 1: {}, 2: {}, 3: {}}})
		if err != nil {
			return false
		}
		ls.Each(func(r kadm.ListPartitionReassignmentsResponse) {
			if r.Topic == faultTopic && slices.Equal(r.AddingReplicas, []int32{ids[2]}) && slices.Equal(r.RemovingReplicas, []int32{ids[0]}) {
				listed = true
			}
		})
		ps := leadersOf(t, nodes[1].Addr, faultTopic)
		for _, p := range ps {
			if !slices.Equal(p.Replicas, to) || len(p.ISR) != 2 || !slices.Contains(to, p.Leader) {
				return false
			}
		}
		return len(ls) == 0 && len(ps) == 4
	})
	if !listed {
		t.Error("ListPartitionReassignments never showed the moves in progress")
	}
	// The copy's rate between 10% and 90% of what node 3 ended with.
	final := samples[len(samples)-1].bytes
	var first, last *sample
	for i := range samples {
		s := &samples[i]
		if first == nil && s.bytes >= final/10 {
			first = s
		}
		if s.bytes <= final*9/10 {
			last = s
		}
	}
	if first == nil || last == nil || !last.at.After(first.at) {
		t.Fatalf("too few samples of node 3's size: %+v", samples)
	}
	moved := float64(last.bytes-first.bytes) / last.at.Sub(first.at).Seconds()
	t.Logf("4 partitions (%d bytes on node 3) moved from nodes %v to %v in %v while producing; copy rate %.0f bytes/s = %.3f of the throttle %d (leader side %v, follower side %v)",
		final, from, to, took, moved, moved/throttle, throttle, leaderSide, followerSide)
	if moved < 0.9*throttle || moved > 1.1*throttle {
		t.Errorf("copy rate %.0f bytes/s, want within 10%% of the throttle %d", moved, throttle)
	}
	w.progress(200, time.Minute)
	w.finish(nodes[1].Addr)
}
