package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/eos"
	"skiff/internal/testnode"
)

// TestTransactionTimeoutTV2 leaves a franz-go transaction open past its timeout
// on a node serving transaction version 2: the coordinator aborts it with the
// epoch bumped twice, which fences the producer for good (fatal under TV2:
// docs/design/txn-v2.md §5), so its next produce and its commit fail. A new
// client with the same transactional id goes on; a read_committed reader that
// waited behind the open transaction moves past it to the new client's records,
// and the eos checker finds no aborted read and no lost committed write.
func TestTransactionTimeoutTV2(t *testing.T) {
	n := testnode.Start(t, "--transaction-version", "2", "--transaction-abort-check-interval", "100ms")
	topic, id := "tv2-timeout", "tv2-timeout-id"
	createTopic(t, n.Addr, topic, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const timeout = 2 * time.Second
	producer := func(rc *requestCounter) *kgo.Client {
		return newClient(t, n.Addr, kgo.TransactionalID(id), kgo.TransactionTimeout(timeout),
			kgo.DefaultProduceTopic(topic), rc.opt())
	}
	var txns []eos.Txn
	// produce writes the records of transaction txn, one per partition.
	produce := func(cl *kgo.Client, txn string) (eos.Txn, error) {
		tx := eos.Txn{ID: txn, Outcome: eos.Unknown}
		var err error
		for p := range int32(2) {
			r := eos.Record{Input: fmt.Sprintf("%s-%d", txn, p), Txn: txn}
			tx.Records = append(tx.Records, r)
			err = errors.Join(err, cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(r.String())}).FirstErr())
		}
		return tx, err
	}

	// A read_committed reader from the start, waiting behind the open transaction.
	reader := newClient(t, n.Addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var readMu sync.Mutex
	var read []eos.Record
	readerDone := make(chan struct{})
	defer func() { // also when the test fails first
		cancel()
		<-readerDone
	}()
	go func() {
		defer close(readerDone)
		for ctx.Err() == nil {
			fs := reader.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				rec, err := eos.ParseRecord(string(r.Value))
				if err != nil {
					t.Errorf("reader: %v", err)
				}
				readMu.Lock()
				read = append(read, rec)
				readMu.Unlock()
			})
		}
	}()

	rc1 := &requestCounter{}
	p1 := producer(rc1)
	// franz-go chooses TV2 at BeginTransaction only if it has read a broker's
	// ApiVersions by then: InitProducerId first.
	_, epoch, err := p1.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	started := time.Now() // before its produce: the timeout runs from the first add
	tx, err := produce(p1, "timed-out")
	if err != nil {
		t.Fatalf("produce in the transaction left open: %v", err)
	}
	tx.Outcome = eos.Aborted // by the coordinator, checked below
	txns = append(txns, tx)

	adm := kadm.NewClient(newClient(t, n.Addr))
	var desc kadm.DescribedTransaction
	poll(t, 30*time.Second, "the coordinator aborted the timed-out transaction", func() bool {
		ds, err := adm.DescribeTransactions(ctx, id)
		if err != nil {
			return false
		}
		desc = ds[id]
		return desc.Err == nil && desc.State == "CompleteAbort"
	})
	if took := time.Since(started); took < timeout-100*time.Millisecond {
		t.Fatalf("aborted after %v, before its %v timeout", took, timeout)
	}
	if desc.ProducerEpoch != epoch+2 {
		t.Fatalf("epoch after the timeout abort: %d, want %d (bumped twice); requests: %v", desc.ProducerEpoch, epoch+2, rc1)
	}

	// The old producer is fenced, for good.
	lateAt := time.Now()
	late, perr := produce(p1, "late")
	late.Outcome = eos.Aborted // its epoch ended: nothing of it may be read
	txns = append(txns, late)
	fenced := func(err error) bool {
		return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
	}
	if !fenced(perr) {
		t.Fatalf("produce of the fenced producer: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", perr)
	}
	// franz-go does not attempt a commit after a failed produce; the abort it
	// asks for then fails too: the error is fatal under TV2, not recovered.
	cerr := p1.EndTransaction(ctx, kgo.TryCommit)
	if !fenced(cerr) && !errors.Is(cerr, kerr.OperationNotAttempted) {
		t.Fatalf("commit of the fenced producer: %v, want PRODUCER_FENCED, INVALID_PRODUCER_EPOCH or OPERATION_NOT_ATTEMPTED", cerr)
	}
	aerr := p1.EndTransaction(ctx, kgo.TryAbort)
	if !fenced(aerr) {
		t.Fatalf("abort of the fenced producer: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH (requests: %v)", aerr, rc1)
	}
	t.Logf("fenced producer: produce: %v; commit: %v; abort: %v (%v after the abort)", perr, cerr, aerr, time.Since(lateAt))

	// A new client with the same id goes on. Its first transaction may be TV1
	// (BeginTransaction before any ApiVersions); its EndTxn v4 then reloads the id
	// (InitProducerId with its id and epoch) and the next ones are TV2.
	rc2 := &requestCounter{}
	p2 := producer(rc2)
	for i := range 3 {
		if err := p2.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		tx, err := produce(p2, fmt.Sprintf("after-%d", i))
		if err != nil {
			t.Fatalf("new producer: %v", err)
		}
		if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("new producer's commit: %v", err)
		}
		tx.Outcome = eos.Committed
		txns = append(txns, tx)
	}
	t.Logf("the new producer committed 3 transactions (%v after the abort)", time.Since(lateAt))
	poll(t, 30*time.Second, "the reader read past the aborted transaction", func() bool {
		readMu.Lock()
		defer readMu.Unlock()
		return len(read) >= 6
	})
	cancel()
	<-readerDone
	if res := eos.Check(txns, read, nil); !res.Ok() || res.Reads != 6 {
		t.Fatalf("the waiting reader: %v, want 6 reads", res)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	all, err := eos.ReadOutput(rctx, []kgo.Opt{kgo.SeedBrokers(n.Addr)}, topic, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res := eos.Check(txns, all, nil); !res.Ok() || res.Reads != 6 {
		t.Fatalf("read_committed from the start: %v, want 6 reads", res)
	}
	if n := rc1.versions(keyEndTxn)[5]; n != 1 {
		t.Errorf("the fenced producer sent %d EndTxn v5, want 1 (%v)", n, rc1)
	}
	if n := len(rc1.versions(keyAddPartitionsToTxn)); n != 0 {
		t.Errorf("the fenced producer used AddPartitionsToTxn (%v)", rc1)
	}
	if n := rc2.versions(keyEndTxn)[5]; n < 2 {
		t.Errorf("the new producer sent %d EndTxn v5, want at least 2 (%v)", n, rc2)
	}
	t.Logf("requests of the fenced producer: %v; of the new one: %v", rc1, rc2)
}
