package e2e

// Share groups read committed (KIP-932): the records of aborted transactions are
// archived unseen, those of committed ones delivered.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestShareGroupSkipsAbortedTransactions: a franz-go transactional producer
// commits and aborts transactions in turn on one partition, its last one
// committed; two share consumers accept every committed record once and never
// receive a record of an aborted transaction.
func TestShareGroupSkipsAbortedTransactions(t *testing.T) {
	n := testnode.Start(t)
	const topic, group, txns, perTxn = "share-txn", "share-txn-group", 11, 5
	createTopic(t, n.Addr, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin := newClient(t, n.Addr)
	setShareGroupConfig(t, admin, group, "share.auto.offset.reset", "earliest")

	prod := newClient(t, n.Addr, kgo.TransactionalID("share-txn-producer"), kgo.DefaultProduceTopic(topic))
	committed := 0
	for i := range txns {
		commit := i%2 == 0
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		kind := "abort"
		if commit {
			kind = "commit"
			committed += perTxn
		}
		for j := range perTxn {
			if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("%s-%d-%d", kind, i, j))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction %d (commit %v): %v", i, commit, err)
		}
	}

	tally := newShareTally()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	for i := range 2 {
		shareConsumer(cctx, t, n.Addr, topic, group, fmt.Sprintf("c%d", i), tally)
	}
	// The last transaction is committed: once all its records are accepted, every
	// aborted record below them has been passed over.
	waitAccepted(t, ctx, tally, "commit-", committed)
	stop()
	tally.mu.Lock()
	defer tally.mu.Unlock()
	tally.checkOnce(t)
	for k := range tally.accepted {
		if strings.HasPrefix(k, "abort-") {
			t.Errorf("record %s of an aborted transaction was delivered", k)
		}
	}
	for k, c := range tally.counts {
		if c != 1 {
			t.Errorf("record %s delivered %d times, want once", k, c)
		}
	}
}
