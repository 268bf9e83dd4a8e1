package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnCommands: a transaction committed and one left open. consume reads
// committed records only by default and stops at the last stable offset;
// --isolation read_uncommitted reads the open one too; txn list and describe show
// it Ongoing; txn abort ends it on its partition, and read_committed consumers
// then read past it.
func TestTxnCommands(t *testing.T) {
	b := groupBrokers(t)
	topic := uniqueTopic("txn")
	id := topic + "-id"
	skiffOK(t, nil, "topic", "create", topic, "-p", "1", "-b", b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, v := range []string{"committed", "open"} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if v == "committed" {
			if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
	}
	pid, _, err := p.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if got := lines(skiffOK(t, nil, "consume", "-t", topic, "--from-beginning", "-e", "-b", b)); !slices.Equal(got, []string{"committed"}) {
		t.Fatalf("read_committed consume printed %q", got)
	}
	if got := lines(skiffOK(t, nil, "consume", "-t", topic, "--from-beginning", "-e", "--isolation", "read_uncommitted", "-b", b)); !slices.Equal(got, []string{"committed", "open"}) {
		t.Fatalf("read_uncommitted consume printed %q", got)
	}
	mustContain(t, "bad isolation", skiffErr(t, nil, "consume", "-t", topic, "--isolation", "dirty", "-b", b), "read_committed or read_uncommitted")

	list := skiffOK(t, nil, "txn", "list", "-b", b)
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + fmt.Sprintf(` +%d +Ongoing +\d+$`, pid)).MatchString(list) {
		t.Fatalf("txn list:\n%s", list)
	}
	mustContain(t, "describe", skiffOK(t, nil, "txn", "describe", id, "-b", b), "state             Ongoing", fmt.Sprintf("producer id       %d", pid), topic+"-0")
	mustContain(t, "describe of an unknown id", skiffErr(t, nil, "txn", "describe", id+"-none", "-b", b), "TRANSACTIONAL_ID_NOT_FOUND")

	out := skiffOK(t, nil, "txn", "abort", "-t", topic, "-p", "0", "--producer-id", fmt.Sprint(pid), "-b", b)
	mustContain(t, "abort", out, fmt.Sprintf("aborted producer %d's transaction on %s-0 (from offset 2)", pid, topic))
	mustContain(t, "abort again", skiffErr(t, nil, "txn", "abort", "-t", topic, "-p", "0", "--producer-id", fmt.Sprint(pid), "-b", b), "no open transaction")
	plain, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := lines(skiffOK(t, nil, "consume", "-t", topic, "--from-beginning", "-e", "-b", b)); !slices.Equal(got, []string{"after", "committed"}) { // lines sorts
		t.Fatalf("read_committed consume after the abort printed %q", got)
	}
}
