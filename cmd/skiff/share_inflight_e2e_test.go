package main

// skiff group describe --http of a share group whose member holds acquired
// records: the in-flight figures come from the share-partition's leader.

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestShareDescribeInFlightOneNode: one node.
func TestShareDescribeInFlightOneNode(t *testing.T) {
	n := testnode.Start(t)
	testShareDescribeInFlight(t, []*testnode.Node{n}, 1)
}

// TestShareDescribeInFlightCluster: three nodes; the CLI asks a node that does
// not lead the share-partition, which gathers its figures from the leader.
func TestShareDescribeInFlightCluster(t *testing.T) {
	testShareDescribeInFlight(t, testnode.StartCluster(t, 3), 3)
}

func testShareDescribeInFlight(t *testing.T, nodes []*testnode.Node, rf int) {
	const records = 20
	topic := uniqueTopic("share-inflight")
	group := topic + "-g"
	b := nodes[0].Addr
	skiffOK(t, nil, "topic", "create", topic, "-p", "1", "-r", strconv.Itoa(rf), "-b", b)
	skiffOK(t, nil, "group", "alter-config", group, "--set", "share.auto.offset.reset=earliest", "-b", b)
	prod, err := kgo.NewClient(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range records {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The CLI talks to a node that does not lead the partition (when there is one).
	ask := nodes[0]
	md, err := kadm.NewClient(prod).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics[topic].Partitions[0].Leader
	for _, n := range nodes {
		if n.ID != leader {
			ask = n
			break
		}
	}

	// A franz-go share member polls once and then holds what it acquired
	// (never polling again, it never acknowledges).
	member, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(5))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	held := 0
	for held == 0 {
		fs := member.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("the share member got no record")
		}
		held = fs.NumRecords()
	}

	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(topic) + ` +0 +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)$`)
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out = skiffOK(t, nil, "group", "describe", group, "-b", ask.Addr, "--http", ask.HTTPAddr)
		if m := row.FindStringSubmatch(out); m != nil {
			num := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
			spso, speo, inflight, acquired, lag, lead := num(1), num(2), num(3), num(4), num(5), num(6)
			if spso == 0 && speo >= held && inflight == speo && acquired >= held && acquired <= inflight && lag == records && lead == int(leader) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("describe --http of node %d (leader %d), member holding %d records:\n%s", ask.ID, leader, held, out)
		}
	}
	mustContain(t, "describe --http", out, "START-OFFSET  END-OFFSET  IN-FLIGHT  ACQUIRED  LAG", "type:     share")
	if rf > 1 && ask.ID == leader {
		t.Fatalf("asked the leader %d itself", leader)
	}
	// Without --http: the Kafka-only table, as before.
	if plain := skiffOK(t, nil, "group", "describe", group, "-b", ask.Addr); row.MatchString(plain) {
		t.Errorf("describe without --http shows in-flight figures:\n%s", plain)
	}
}
