package kafkaapi_test

// Brokers' requests to each other (replication/peer.go) over a pooled
// connection that the other broker closed for its connections.max.idle.ms,
// with real nodes: a request whose reused connection turns out closed is sent
// again on a new one, so the transaction it serves does not wait for a retry.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
	"skiff/internal/syncbuf"
)

// peerIdleTimeout is the short node's connections.max.idle.ms.
const peerIdleTimeout = 400 * time.Millisecond

// peerFailure matches a node's log line of a failed request to another broker
// (BrokerRequest's "<API> to broker <id>: <err>", logged by the transaction
// coordinator's marker retries at warn, by notices and by the leader's
// verifications and implicit adds at debug), and the coordinator's retries.
var peerFailure = regexp.MustCompile(`\w+ to broker \d+: |failed; retrying`)

// TestTxnPeerConnClosedIdle: two nodes at transaction version 2, one with the
// default connections.max.idle.ms (long: its pool keeps a connection to the
// other for half of it), the other closing connections idle for 400 ms. Every
// partition has one replica, so that nothing but the clients and the long
// node's pooled connections reach the short node. In each direction a first
// transaction leaves a connection from the long node to the short one in the
// long node's pool; once the short node has closed every connection it had,
// a second transaction reuses it, and its request is sent again on a new
// connection: once the markers landed, no node has logged a failed request to
// a broker, nor the coordinator a retry.
//   - CoordinatorLong: the coordinator on the long node writes the markers
//     to the leader on the short node (WriteTxnMarkers). Without the retry:
//     "writing transaction markers failed; retrying", and the markers land a
//     backoff later.
//   - CoordinatorShort: the leader on the long node adds its partition to
//     the transaction at the coordinator on the short node (the implicit add,
//     AddPartitionsToTxn v5). Without the retry the produce is answered
//     NOT_ENOUGH_REPLICAS, which franz-go retries some 5 s later. The
//     coordinator's markers go over the short node's pool, which drops its
//     connections after 200 ms (half its own idle timeout), to the long node,
//     which would not have closed them: no reused connection to test there.
func TestTxnPeerConnClosedIdle(t *testing.T) {
	long, short, logs := startIdlePair(t)
	c := dial(t, long.KafkaAddr()) // the long node keeps it open
	topic := topicName(t, "")
	createTopic(t, c, topic, 4, nil)
	led := map[int32]int32{} // a partition led by each node
	waitFor(t, 30*time.Second, "a partition led by each node", func() bool {
		for _, p := range metadataTopic(t, c, topic).Partitions {
			if p.ErrorCode == 0 {
				led[p.Leader] = p.Partition
			}
		}
		return len(led) == 2
	})

	for _, tc := range []struct {
		name          string
		coord, leader *appliance.Node
	}{
		{"CoordinatorLong", long, short},
		{"CoordinatorShort", short, long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			part := led[tc.leader.ID()]
			id := txnIDCoordinatedOn(t, c, tc.coord.ID())
			var rc requestCounter
			cl, err := kgo.NewClient(kgo.SeedBrokers(long.KafkaAddr(), short.KafkaAddr()), kgo.Dialer(rc.dial),
				kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				// Its own idle connections closed before the short node does:
				// only the long node's pooled ones are left for it to close.
				kgo.ConnIdleTimeout(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			commit := func(value string) {
				t.Helper()
				start := time.Now()
				if err := cl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				if err := cl.ProduceSync(ctx, &kgo.Record{Partition: part, Value: []byte(value)}).FirstErr(); err != nil {
					t.Fatalf("produce %s: %v", value, err)
				}
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					t.Fatalf("commit %s: %v", value, err)
				}
				t.Logf("transaction %s committed in %v", value, time.Since(start))
			}

			commit("first")
			idleClosed := strings.Count(logs[short].String(), "closing idle connection")
			waitFor(t, 10*time.Second, "the short node to close every connection it had", func() bool {
				return metric(t, short.HTTPAddr(), "skiff_connections") == 0 &&
					strings.Count(logs[short].String(), "closing idle connection") > idleClosed
			})
			marks := map[*appliance.Node]int{long: len(logs[long].String()), short: len(logs[short].String())}
			commit("second")
			if n := rc.count(24, -1); n != 0 {
				t.Fatalf("AddPartitionsToTxn sent %d times: the client is not at transaction version 2", n)
			}
			lc := dial(t, tc.leader.KafkaAddr())
			settled(t, lc, topic, part) // the markers are written after EndTxn's answer
			for n, name := range map[*appliance.Node]string{long: "long", short: "short"} {
				for _, line := range strings.Split(logs[n].String()[marks[n]:], "\n") {
					if peerFailure.MatchString(line) {
						t.Errorf("the %s node (broker %d) logged during the second transaction:\n%s", name, n.ID(), line)
					}
				}
			}
			if got := readCommitted(t, lc, topic, part); !slices.Contains(got, "first") || !slices.Contains(got, "second") {
				t.Fatalf("read_committed %s-%d: %q, want both transactions' records", topic, part, got)
			}
		})
	}
}

// startIdlePair starts two nodes at transaction version 2 whose internal
// topics have one replica: long with the default connections.max.idle.ms, and
// short with peerIdleTimeout. logs holds each one's logs, debug included.
func startIdlePair(t *testing.T) (long, short *appliance.Node, logs map[*appliance.Node]*syncbuf.Buffer) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	etcd := l.Addr().String() // the first node's etcd client port, which the other joins
	l.Close()
	logs = map[*appliance.Node]*syncbuf.Buffer{}
	var nodes []*appliance.Node
	for i, idle := range []time.Duration{0, peerIdleTimeout} {
		buf := &syncbuf.Buffer{}
		n, err := startNode(t.TempDir(), func(c *appliance.Config) {
			c.NodeName = fmt.Sprintf("peeridle-%d", i)
			c.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			c.IdleTimeout = idle
			c.Txn.Version = 2
			c.Txn.TopicReplicationFactor = 1
			if i == 0 {
				c.EtcdClient = etcd
			} else {
				c.Join = []string{etcd}
			}
		})
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		t.Cleanup(func() { n.Close() })
		logs[n] = buf
		nodes = append(nodes, n)
	}
	c := dial(t, nodes[0].KafkaAddr())
	waitFor(t, 60*time.Second, "2 live brokers", func() bool {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(8)
		req.Topics = []kmsg.MetadataRequestTopic{}
		return len(c.do(req).(*kmsg.MetadataResponse).Brokers) == 2
	})
	return nodes[0], nodes[1], logs
}

// txnIDCoordinatedOn returns a transactional id whose coordinator is broker
// id, asking on c.
func txnIDCoordinatedOn(t *testing.T, c *kconn, id int32) string {
	t.Helper()
	for range 200 {
		txnID := topicName(t, "id")
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.SetVersion(1)
		fc.CoordinatorKey, fc.CoordinatorType = txnID, 1
		if findTxnCoordinator(t, c, fc).NodeID == id {
			return txnID
		}
	}
	t.Fatalf("no transactional id of 200 has its coordinator on broker %d", id)
	return ""
}
