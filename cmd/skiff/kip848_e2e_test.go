package main

// skiff consume --group-protocol consumer and skiff group describe of a KIP-848
// consumer group, against a real broker.

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKIP848Commands: a KIP-848 group consumes a topic with skiff consume; group
// list and describe show it as a consumer group, with its epochs, assignor, each
// member's epoch, assigned and target partitions, and its lag.
func TestKIP848Commands(t *testing.T) {
	b := groupBrokers(t)
	topic := uniqueTopic("kip848")
	group := topic + "-g"
	skiffOK(t, nil, "topic", "create", topic, "-p", "3", "-b", b)
	produceNumbered(t, b, topic, 3, 10)
	got := lines(skiffOK(t, nil, "consume", "-t", topic, "-g", group, "--group-protocol", "consumer", "--from-beginning", "-n", "30", "-b", b))
	if len(got) != 30 {
		t.Fatalf("consumer printed %d records, want 30", len(got))
	}

	// A member that stays, for describe to show.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go func() {
		for {
			if fs := cl.PollFetches(context.Background()); fs.IsClientClosed() {
				return
			}
		}
	}()
	var desc string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		desc = skiffOK(t, nil, "group", "describe", group, "-b", b)
		if strings.Contains(desc, "state:             Stable") && strings.Contains(desc, "members:           1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group never showed one stable member:\n%s", desc)
		}
	}
	mustContain(t, "describe", desc, "type:              consumer (KIP-848)", "assignor:          uniform",
		"MEMBER", "EPOCH", "ASSIGNED", "TARGET")
	row := regexp.MustCompile(`(?m)^\S+ +(\d+) +\S+ +\S+ +` + regexp.QuoteMeta(topic) + `:0,1,2 +` + regexp.QuoteMeta(topic) + `:0,1,2$`)
	m := row.FindStringSubmatch(desc)
	epoch := regexp.MustCompile(`(?m)^assignment epoch: +(\d+)$`).FindStringSubmatch(desc)
	if m == nil || epoch == nil || m[1] != epoch[1] {
		t.Fatalf("describe lacks the member at the assignment epoch, owning its target:\n%s", desc)
	}
	if n := len(regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(topic)+` +\d +10 +10 +0 +\S+$`).FindAllString(desc, -1)); n != 3 {
		t.Fatalf("describe shows %d partitions committed at their end with no lag, want 3:\n%s", n, desc)
	}
	st := skiffOK(t, nil, "group", "list", "--state", "-b", b)
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(group) + ` +Stable +consumer +1$`).MatchString(st) {
		t.Fatalf("group list --state:\n%s", st)
	}
}
