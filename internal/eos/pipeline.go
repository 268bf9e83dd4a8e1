package eos

// The consume-transform-produce pipeline of franz-go's GroupTransactSession, whose
// history Check verifies: members of one group read the input topic read_committed
// and, per poll, write one output record per input record and commit their
// consumer offsets in the same transaction.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Pipeline is one run of the pipeline.
type Pipeline struct {
	Opts []kgo.Opt // seed brokers and any connection options
	// MemberOpts are added to the members' clients only (after Opts), e.g. a
	// dialer that counts the requests of the transactional clients.
	MemberOpts    []kgo.Opt
	Input, Output string
	Group         string
	Members       int // consumers of the group, each with its transactional id
	// AbortEvery, when > 0, makes each member abort every AbortEvery-th
	// transaction on purpose (the group session then rewinds to its committed
	// offsets, and the records come again in a later transaction).
	AbortEvery int
	// MaxPoll bounds the records of one transaction (default 200).
	MaxPoll int
	// Logf receives progress lines (default: none).
	Logf func(format string, args ...any)
	// Journal, when set, is told of each transaction before it is ended (outcome
	// Unknown) and once it is: a member in another process reports its history
	// through it, so that a transaction it was killed in is known.
	Journal func(t Txn, ended bool)

	mu   sync.Mutex
	txns []Txn
}

// ProduceInputs writes n records "00000000", "00000001", ... to topic with an
// idempotent producer and returns them.
func ProduceInputs(ctx context.Context, opts []kgo.Opt, topic string, n int) ([]string, error) {
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	inputs := make([]string, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range inputs {
		inputs[i] = fmt.Sprintf("%08d", i)
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Key: []byte(inputs[i]), Value: []byte(inputs[i])}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	return inputs, first
}

// AddTxns adds transactions of members outside this process to the history.
func (p *Pipeline) AddTxns(ts ...Txn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.txns = append(p.txns, ts...)
}

// Txns returns the history of the transactions written so far.
func (p *Pipeline) Txns() []Txn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Txn(nil), p.txns...)
}

func (p *Pipeline) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}

// Run runs the members until every input record's offset is committed by the
// group (the input's end offsets), or ctx ends.
func (p *Pipeline) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, p.Members)
	var wg sync.WaitGroup
	for m := range p.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.RunMember(ctx, m); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("member %d: %w", m, err)
				cancel()
			}
		}()
	}
	err := p.waitDone(ctx)
	cancel()
	wg.Wait()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	return err
}

// waitDone polls the group's committed offsets until they reach the input's end.
func (p *Pipeline) waitDone(ctx context.Context) error {
	cl, err := kgo.NewClient(p.Opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		ends, err := adm.ListEndOffsets(ctx, p.Input)
		if err != nil {
			continue
		}
		committed, err := adm.FetchOffsets(ctx, p.Group)
		if err != nil {
			continue
		}
		done, left := true, int64(0)
		ends.Each(func(e kadm.ListedOffset) {
			if e.Err != nil { // e.g. OFFSET_NOT_AVAILABLE from a new leader: its end is not known yet
				done = false
				return
			}
			c, ok := committed.Lookup(e.Topic, e.Partition)
			if !ok || c.At < e.Offset {
				done = false
				left += e.Offset - max(c.At, 0)
			}
		})
		if done {
			return nil
		}
		p.logf("eos: %d input records left to commit", left)
	}
}

// RunMember runs member m of the group until ctx ends. A transaction whose End
// fails leaves the session unusable (franz-go: no error of End is retryable), so
// the member closes it and starts a new one, whose InitProducerId fences the old
// epoch and ends whatever it left open.
func (p *Pipeline) RunMember(ctx context.Context, m int) error {
	for n := 0; ctx.Err() == nil; {
		if err := p.runSession(ctx, m, &n); err != nil {
			return err
		}
	}
	return nil
}

// runSession runs one transactional session of member m, numbering its
// transactions from *n, until ctx ends (nil) or a transaction's End fails (nil,
// after logging it).
func (p *Pipeline) runSession(ctx context.Context, m int, n *int) error {
	opts := append(append([]kgo.Opt(nil), p.Opts...),
		kgo.TransactionalID(fmt.Sprintf("%s-member-%d", p.Group, m)),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup(p.Group),
		kgo.ConsumeTopics(p.Input),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DefaultProduceTopic(p.Output),
		kgo.RequireStableFetchOffsets(), // KIP-447: wait out pending transactional offsets
		kgo.SessionTimeout(10*time.Second),
	)
	opts = append(opts, p.MemberOpts...)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	defer sess.Close()
	for ; ctx.Err() == nil; *n++ {
		fs := sess.PollRecords(ctx, cmp.Or(p.MaxPoll, 200))
		if fs.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		var in []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { in = append(in, r) })
		if len(in) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		t := Txn{ID: fmt.Sprintf("m%d-%d", m, *n)}
		for _, r := range in {
			rec := Record{Input: string(r.Value), Txn: t.ID}
			t.Records = append(t.Records, rec)
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: []byte(rec.String())}, nil)
		}
		commit := p.AbortEvery <= 0 || *n%p.AbortEvery != p.AbortEvery-1
		t.Outcome = Unknown
		if p.Journal != nil {
			p.Journal(t, false)
		}
		committed, err := sess.End(ctx, kgo.TransactionEndTry(commit))
		switch {
		case err != nil:
			t.Outcome = Unknown
			p.logf("eos: member %d: ending transaction %s: %v; starting a new session", m, t.ID, err)
		case committed:
			t.Outcome = Committed
		default:
			t.Outcome = Aborted
		}
		if p.Journal != nil {
			p.Journal(t, true)
		}
		p.AddTxns(t)
		if err != nil {
			*n++
			return nil
		}
	}
	return nil
}

// sentinel is the value ReadOutput appends to each partition to know it has read
// everything before it.
const sentinel = "end-of-history"

// ReadOutput reads every record of topic's partitions read_committed: it appends
// a sentinel record to each partition (not in a transaction), then reads from the
// start until each partition's sentinel, which is visible only once every
// transaction before it is decided.
func ReadOutput(ctx context.Context, opts []kgo.Opt, topic string, partitions int32) ([]Record, error) {
	pr, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	for p := range partitions {
		if err := pr.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(sentinel)}).FirstErr(); err != nil {
			return nil, fmt.Errorf("append the sentinel to %s-%d: %w", topic, p, err)
		}
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []Record
	var perr error
	left := make(map[int32]bool, partitions)
	for p := range partitions {
		left[p] = true
	}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("read %s: %d partitions not read to their sentinel: %w", topic, len(left), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == sentinel {
				delete(left, r.Partition)
				return
			}
			rec, err := ParseRecord(string(r.Value))
			if err != nil {
				perr = errors.Join(perr, err)
				return
			}
			out = append(out, rec)
		})
	}
	return out, perr
}
