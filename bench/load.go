package bench

// The load of a run: producer clients that stamp each record with its send
// time (or due time, with --rate) and time its acknowledgement, and a consumer
// that counts what it reads and, in e2e mode, times each record's arrival.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/client"
)

// benchClock gives the nanoseconds since the start of a run from the monotonic
// clock. Stamps in records are such offsets: producers and the consumer are in
// this process, so they share the clock.
type benchClock struct{ start time.Time }

func (c benchClock) now() int64 { return int64(time.Since(c.start)) }

// untimed is the stamp of warm-up records, which are left out of the latencies.
const untimed = -1

// latencyRecorder keeps the latencies since the start and since the last
// progress line. It is fed by one client's promise or poll goroutine and read by
// the progress line.
type latencyRecorder struct {
	mu struct {
		sync.Mutex
		total, interval histogram
	}
}

func (r *latencyRecorder) record(ns int64) {
	r.mu.Lock()
	r.mu.total.record(ns)
	r.mu.interval.record(ns)
	r.mu.Unlock()
}

// takeInterval adds the latencies since the last call to h and forgets them.
func (r *latencyRecorder) takeInterval(h *histogram) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h.merge(&r.mu.interval)
	r.mu.interval.reset()
}

func (r *latencyRecorder) addTotal(h *histogram) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h.merge(&r.mu.total)
}

// loadCounters are the records and value bytes done so far.
type loadCounters struct {
	records, bytes, failed atomic.Int64
	mu                     struct {
		sync.Mutex
		firstErr error
	}
}

func (c *loadCounters) fail(err error) {
	c.failed.Add(1)
	c.mu.Lock()
	if c.mu.firstErr == nil {
		c.mu.firstErr = err
	}
	c.mu.Unlock()
}

func (c *loadCounters) firstErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.firstErr
}

// loadProducer is one producer client. Records and their value buffers are
// reused once acknowledged, so that the client does not allocate per record
// (fresh memory is slow on small machines and would be measured as the broker's).
type loadProducer struct {
	k     *client.Client
	clock benchClock
	lat   *latencyRecorder
	acked *loadCounters
	// stampValues writes each record's stamp into its value's first 8 bytes,
	// for the e2e consumer. Otherwise the stamp is only in the record's
	// stampContext and values are written once: touching each value twice
	// more cost two cache misses per record, about a fifth of the client's CPU.
	stampValues bool
	free        recordFreeList
	maxLag      atomic.Int64
	sent        int64 // records handed to the client; read after run returns
	// gaps measure availability; the client's promise goroutine owns it, and it is
	// read after run returns.
	gaps ackGaps
	// txnRecords > 0: the producer is transactional and commits a transaction
	// every txnRecords records; txns counts the commits. With flushOnly it is
	// idempotent and only flushes every txnRecords records (the transactional
	// run's flushed baseline): txns counts the flushes.
	txnRecords int
	flushOnly  bool
	txns       int64
	// phases times each committed transaction from the client's side: from
	// BeginTransaction until its last record was handed to the client (buffer),
	// then Flush (flush), then EndTransaction (end). txnBegan is the clock
	// time of the open transaction's begin. Owned by run; read after it returns.
	txnBegan int64
	phases   txnPhases
}

// txnPhases are the client-side phases of a producer's transactions.
type txnPhases struct{ buffer, flush, end histogram }

func (ph *txnPhases) merge(o *txnPhases) {
	ph.buffer.merge(&o.buffer)
	ph.flush.merge(&o.flush)
	ph.end.merge(&o.end)
}

// ackGaps finds the longest time a partition went without an acknowledgement while
// one of this producer's records waited for one: for each acknowledgement, the time
// since the later of the partition's previous acknowledgement and the record's
// stamp (its send or due time). Without faults it stays near the latency of a
// batch; while a partition's leader is frozen or gone it grows with the outage,
// whatever queues up in the client meanwhile.
type ackGaps struct {
	last      []int64 // per partition: clock time of its last acknowledgement
	longest   int64
	partition int32
}

func (g *ackGaps) ack(partition int32, stamp, now int64) {
	if int(partition) >= len(g.last) {
		g.last = append(g.last, make([]int64, int(partition)+1-len(g.last))...)
	}
	if gap := now - max(g.last[partition], stamp); gap > g.longest {
		g.longest, g.partition = gap, partition
	}
	g.last[partition] = now
}

func newLoadProducer(k *client.Client, clock benchClock, size int, stampValues bool, acked *loadCounters) *loadProducer {
	p := &loadProducer{k: k, clock: clock, lat: new(latencyRecorder), acked: acked, stampValues: stampValues}
	p.free.size = size
	p.free.seed = rand.Uint64()
	return p
}

// stampContext carries a record's stamp from produce to its promise, made once
// with the record so that stamping allocates nothing. (Not the Timestamp:
// franz-go truncates that to the millisecond.)
type stampContext struct {
	context.Context
	stamp int64
}

// recordFreeList hands out records with a value of size bytes and takes them
// back once acknowledged. Unlike a sync.Pool it is not emptied by garbage
// collections, so a run creates at most as many records as the client buffers.
type recordFreeList struct {
	size int
	seed uint64
	mu   sync.Mutex
	free []*kgo.Record
	made uint64
}

func (l *recordFreeList) get() *kgo.Record {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		r := l.free[n-1]
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return r
	}
	l.made++
	rng := rand.New(rand.NewPCG(l.seed, l.made))
	l.mu.Unlock()
	// Lower-case letters: compressible the way text is, unlike random bytes.
	v := make([]byte, l.size)
	for i := 0; i < len(v); i += 8 {
		x := rng.Uint64()
		for j := i; j < min(i+8, len(v)); j++ {
			v[j] = 'a' + byte(x%26)
			x /= 26
		}
	}
	return &kgo.Record{Value: v, Context: &stampContext{Context: context.Background()}}
}

// put takes r back; the client does not touch a record after its promise.
func (l *recordFreeList) put(r *kgo.Record) {
	*r = kgo.Record{Value: r.Value, Context: r.Context}
	l.mu.Lock()
	l.free = append(l.free, r)
	l.mu.Unlock()
}

// stamp marks r with its send (or due) time, and for the e2e consumer its value.
func (p *loadProducer) stamp(r *kgo.Record, stamp int64) {
	r.Context.(*stampContext).stamp = stamp
	if p.stampValues {
		binary.LittleEndian.PutUint64(r.Value, uint64(stamp))
	}
}

// promise runs on the client's promise goroutine, once per record.
func (p *loadProducer) promise(r *kgo.Record, err error) {
	now := p.clock.now()
	if err != nil {
		p.acked.fail(err)
	} else {
		p.acked.records.Add(1)
		p.acked.bytes.Add(int64(len(r.Value)))
		stamp := r.Context.(*stampContext).stamp
		p.lat.record(now - stamp)
		p.gaps.ack(r.Partition, stamp, now)
	}
	p.free.put(r)
}

func (p *loadProducer) produce(stamp int64) {
	r := p.free.get()
	p.stamp(r, stamp)
	// Not the run's context: an interrupt stops the loop between records rather
	// than failing the records buffered.
	p.k.Kafka().Produce(context.Background(), r, p.promise)
	p.sent++
}

// run produces until quota records are sent (quota < 0: no limit), the clock
// reaches until (until < 0: never), or stop is closed. With interval > 0, record
// i is due at start+i*interval and stamped with that due time, whenever it is
// sent. It returns after every record sent has been acknowledged or has failed.
func (p *loadProducer) run(stop <-chan struct{}, quota, start, until int64, interval float64) error {
	if err := p.begin(); err != nil {
		return err
	}
	for i := int64(0); quota < 0 || i < quota; i++ {
		if i&63 == 0 && stopped(stop) {
			break
		}
		if p.txnRecords > 0 && i > 0 && i%int64(p.txnRecords) == 0 {
			if err := p.commit(); err != nil {
				return err
			}
			if err := p.begin(); err != nil {
				return err
			}
		}
		var stamp int64
		if interval > 0 {
			stamp = start + int64(float64(i)*interval)
			if until >= 0 && stamp >= until {
				break
			}
			if wait := stamp - p.clock.now(); wait > 0 {
				time.Sleep(time.Duration(wait))
				if stopped(stop) {
					break
				}
			} else if lag := -wait; lag > p.maxLag.Load() {
				p.maxLag.Store(lag)
			}
		} else {
			stamp = p.clock.now()
			if until >= 0 && stamp >= until {
				break
			}
		}
		p.produce(stamp)
	}
	// Every record fails at its delivery timeout at the latest, so this ends.
	if p.txnRecords > 0 {
		return p.commit()
	}
	if err := p.k.Kafka().Flush(context.Background()); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// begin starts a transaction of a transactional producer.
func (p *loadProducer) begin() error {
	if p.txnRecords <= 0 {
		return nil
	}
	if !p.flushOnly {
		if err := p.k.Kafka().BeginTransaction(); err != nil {
			return fmt.Errorf("begin transaction: %w", p.k.Explain(err))
		}
	}
	p.txnBegan = p.clock.now()
	return nil
}

// commit flushes the open transaction's records and commits it (with
// flushOnly, only flushes them).
func (p *loadProducer) commit() error {
	ctx := context.Background()
	buffered := p.clock.now()
	if err := p.k.Kafka().Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	flushed := p.clock.now()
	if p.flushOnly {
		p.txns++
		p.phases.buffer.record(buffered - p.txnBegan)
		p.phases.flush.record(flushed - buffered)
		return nil
	}
	if err := p.k.Kafka().EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit transaction: %w", p.k.Explain(err))
	}
	ended := p.clock.now()
	p.txns++
	p.phases.buffer.record(buffered - p.txnBegan)
	p.phases.flush.record(flushed - buffered)
	p.phases.end.record(ended - flushed)
	return nil
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// warmUp produces n untimed records and waits for them: connections, metadata
// and the producer id are in place before the clock starts.
func (p *loadProducer) warmUp(ctx context.Context, n int) error {
	if err := p.begin(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range n {
		r := p.free.get()
		p.stamp(r, untimed)
		wg.Add(1)
		p.k.Kafka().Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmpOr(first, err)
				mu.Unlock()
			}
			p.free.put(r)
			wg.Done()
		})
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("warm-up produce: %w", p.k.Explain(first))
	}
	if p.txnRecords > 0 {
		if err := p.commit(); err != nil {
			return err
		}
		p.txns = 0
		p.phases = txnPhases{}
	}
	return nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// loadConsumer reads partitions from given offsets and counts what it reads.
type loadConsumer struct {
	k     *client.Client
	clock benchClock
	lat   *latencyRecorder // e2e latency of timed records
	read  loadCounters     // records and value bytes read
	last  atomic.Int64     // clock time of the latest record read
	// onlyTimed leaves warm-up records out of read (e2e mode, where they are
	// not part of the run); untimedRead counts them.
	onlyTimed   bool
	untimedRead atomic.Int64
}

// newLoadConsumer builds a consumer of topic's partitions from the offsets in
// from (franz-go's defaults otherwise, no group).
func newLoadConsumer(cfg Config, clock benchClock, topic string, from map[int32]int64) (*loadConsumer, error) {
	offs := make(map[int32]kgo.Offset, len(from))
	for p, o := range from {
		offs[p] = kgo.NewOffset().At(o)
	}
	// Control records (transaction markers) are kept, not counted: the end
	// offsets listed count them.
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}), kgo.KeepControlRecords()}
	if cfg.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	k, err := client.New(cfg.Client, opts...)
	if err != nil {
		return nil, err
	}
	return &loadConsumer{k: k, clock: clock, lat: new(latencyRecorder)}, nil
}

// run polls until ctx is done or done reports true after a poll. ends, when
// not nil, are the offsets at which each partition is complete; run then
// returns once every partition has reached its end.
func (c *loadConsumer) run(ctx context.Context, limit int64, ends map[int32]int64) error {
	next := make(map[int32]int64, len(ends))
	complete := func() bool {
		if ends == nil {
			return false
		}
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !complete() && (limit <= 0 || c.read.records.Load() < limit) {
		fs := c.k.Kafka().PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				ferr = cmpOr(ferr, err)
			}
		})
		if ferr != nil {
			return fmt.Errorf("consume: %w", c.k.Explain(ferr))
		}
		now := c.clock.now()
		var n, bytes int64
		fs.EachRecord(func(r *kgo.Record) {
			if limit > 0 && c.read.records.Load()+n >= limit {
				return // past --records: read, not counted
			}
			next[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			if len(r.Value) >= MinRecordSize {
				if stamp := int64(binary.LittleEndian.Uint64(r.Value)); stamp == untimed {
					c.untimedRead.Add(1)
					if c.onlyTimed {
						return
					}
				} else if stamp >= 0 && stamp <= now {
					c.lat.record(now - stamp)
				}
			}
			n++
			bytes += int64(len(r.Key) + len(r.Value))
		})
		if n > 0 {
			c.read.records.Add(n)
			c.read.bytes.Add(bytes)
			c.last.Store(now)
		}
	}
	return nil
}

// listOffsets lists the start and end offsets of every partition of topic.
func listOffsets(ctx context.Context, k *client.Client, topic string) (start, end map[int32]int64, err error) {
	ctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	collect := func(what string, l kadm.ListedOffsets, err error) (map[int32]int64, error) {
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("list %s offsets of %q: %w", what, topic, k.Explain(err))
		}
		m := make(map[int32]int64, len(l[topic]))
		for p, o := range l[topic] {
			m[p] = o.Offset
		}
		return m, nil
	}
	l, err := k.Admin().ListStartOffsets(ctx, topic)
	if start, err = collect("start", l, err); err != nil {
		return nil, nil, err
	}
	l, err = k.Admin().ListEndOffsets(ctx, topic)
	if end, err = collect("end", l, err); err != nil {
		return nil, nil, err
	}
	return start, end, nil
}

// runProduce is produce and e2e mode.
func runProduce(ctx context.Context, cfg Config, progress *progressLine) (*Result, error) {
	admin, err := client.New(cfg.Client)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	parts, rf, err := ensureTopic(ctx, admin, cfg)
	if err != nil {
		return nil, err
	}

	clock := benchClock{start: time.Now()}
	var acked loadCounters
	producers := make([]*loadProducer, cfg.Producers)
	for i := range producers {
		k, err := client.New(cfg.Client, cfg.producerOpts(i)...)
		if err != nil {
			return nil, err
		}
		defer k.Close()
		producers[i] = newLoadProducer(k, clock, cfg.RecordSize, cfg.Mode == E2E, &acked)
		switch {
		case cfg.TransactionalID != "":
			producers[i].txnRecords = cfg.TxnRecords
		case cfg.flushEvery > 0:
			producers[i].txnRecords, producers[i].flushOnly = cfg.flushEvery, true
		}
	}

	// e2e: the consumer starts at the current ends and must have read the
	// warm-up records before the clock starts.
	var cons *loadConsumer
	if cfg.Mode == E2E {
		_, ends, err := listOffsets(ctx, admin, cfg.Topic)
		if err != nil {
			return nil, err
		}
		if cons, err = newLoadConsumer(cfg, clock, cfg.Topic, ends); err != nil {
			return nil, err
		}
		defer cons.k.Close()
		cons.onlyTimed = true
	}
	consCtx, consCancel := context.WithCancel(ctx)
	defer consCancel()
	consDone := make(chan error, 1)
	if cons != nil {
		go func() { consDone <- cons.run(consCtx, 0, nil) }()
	}
	warm := 2 * int(parts)
	for _, p := range producers {
		if err := p.warmUp(ctx, warm); err != nil {
			return nil, err
		}
	}
	if cons != nil {
		want := int64(warm * len(producers))
		if err := waitUntil(ctx, cfg.Client.Timeout, func() bool { return cons.untimedRead.Load() >= want }); err != nil {
			return nil, fmt.Errorf("e2e consumer read %d of %d warm-up records within --timeout %v", cons.untimedRead.Load(), want, cfg.Client.Timeout)
		}
	}

	// The run. Each producer gets an equal share of --records and of --rate.
	interval := 0.0
	if cfg.Rate > 0 {
		interval = float64(time.Second) * float64(len(producers)) / cfg.Rate
	}
	finished := make(chan struct{})
	defer close(finished)
	stop := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			close(stop)
		case <-finished:
		}
	}()
	brokers := startBrokerWindow(ctx, admin, cfg)
	start, cpuStart := clock.now(), cpuTime()
	until := int64(-1)
	if cfg.Duration > 0 {
		until = start + int64(cfg.Duration)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(producers))
	for i, p := range producers {
		quota := int64(-1)
		if cfg.Records > 0 {
			quota = cfg.Records / int64(len(producers))
			if int64(i) < cfg.Records%int64(len(producers)) {
				quota++
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.run(stop, quota, start, until, interval)
		}()
	}
	sampler := startSampler(progress, clock, &acked, producers, cons)
	wg.Wait()
	prodEnd, cpuEnd := clock.now(), cpuTime()
	if err := errors.Join(errs...); err != nil {
		sampler.stop()
		return nil, err
	}

	res := &Result{Mode: cfg.Mode, Topic: cfg.Topic, Partitions: parts, ReplicationFactor: rf, Producers: cfg.Producers,
		Acks: cfg.AcksName, Compression: cfg.CompressionName, RecordSize: cfg.RecordSize, Rate: cfg.Rate,
		Security: cfg.Client.Protocol()}
	if cfg.Linger >= 0 {
		ms := cfg.Linger.Milliseconds()
		res.LingerMs = &ms
	}
	res.Records, res.Bytes, res.Failed = acked.records.Load(), acked.bytes.Load(), acked.failed.Load()
	if cfg.TransactionalID != "" || cfg.flushEvery > 0 {
		t := &TxnComparison{TxnRecords: cfg.TxnRecords, phases: new(txnPhases)}
		for _, p := range producers {
			t.Transactions += p.txns
			t.phases.merge(&p.phases)
		}
		t.setPhases()
		res.Transactional = t
	}
	if err := acked.firstErr(); err != nil {
		res.FirstError = producers[0].k.Explain(err).Error()
	}
	res.setElapsed(prodEnd - start)
	res.ClientCPUSeconds = (cpuEnd - cpuStart).Seconds()
	brokers.end(context.WithoutCancel(ctx), res) // an interrupted run still reports its brokers' CPU
	var maxLag int64
	var gaps ackGaps
	res.lat = new(histogram)
	for _, p := range producers {
		p.lat.addTotal(res.lat)
		maxLag = max(maxLag, p.maxLag.Load())
		if p.gaps.longest > gaps.longest {
			gaps = p.gaps
		}
	}
	s := res.lat.summary()
	res.ProduceLatency = &s
	if res.Records > 0 {
		gap := ms(gaps.longest)
		res.MaxAckGapMs, res.MaxAckGapPartition = &gap, gaps.partition
	}
	if cfg.Rate > 0 {
		ms := float64(maxLag) / float64(time.Millisecond)
		res.MaxSendLagMs = &ms
	}

	if cons != nil {
		// Wait until the consumer has read every acknowledged record, or stalls.
		want := res.Records
		err := waitProgress(ctx, cfg.Client.Timeout, func() int64 { return cons.read.records.Load() }, want)
		consCancel()
		if cerr := <-consDone; cerr != nil {
			err = cerr
		}
		sampler.stop()
		if err != nil {
			return nil, fmt.Errorf("e2e consumer: %w (read %d of %d records)", err, cons.read.records.Load(), want)
		}
		var e2e histogram
		cons.lat.addTotal(&e2e)
		es := e2e.summary()
		res.E2ELatency = &es
		res.Consumed = cons.read.records.Load()
		res.ConsumeSeconds = float64(cons.last.Load()-start) / float64(time.Second)
	} else {
		sampler.stop()
	}
	return res, nil
}

// runConsume is consume mode.
func runConsume(ctx context.Context, cfg Config, progress *progressLine) (*Result, error) {
	admin, err := client.New(cfg.Client)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	td, err := describeTopic(ctx, admin, cfg.Topic)
	switch {
	case err != nil:
		return nil, err
	case td.Err != nil:
		return nil, client.TopicError(cfg.Topic, td.Err)
	case len(td.Partitions) == 0:
		return nil, fmt.Errorf("topic %q has no partitions", cfg.Topic)
	}
	starts, ends, err := listOffsets(ctx, admin, cfg.Topic)
	if err != nil {
		return nil, err
	}
	var total int64
	for p, end := range ends {
		total += max(end-starts[p], 0)
	}
	if total == 0 {
		return nil, fmt.Errorf("topic %q is empty: run `skiff bench produce -t %s` first", cfg.Topic, cfg.Topic)
	}
	clock := benchClock{start: time.Now()}
	cons, err := newLoadConsumer(cfg, clock, cfg.Topic, starts)
	if err != nil {
		return nil, err
	}
	defer cons.k.Close()
	runCtx := ctx
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	sampler := startSampler(progress, clock, &cons.read, nil, cons)
	brokers := startBrokerWindow(ctx, admin, cfg)
	cpuStart := cpuTime()
	err = cons.run(runCtx, cfg.Records, ends)
	end, cpuEnd := clock.now(), cpuTime()
	sampler.stop()
	if err != nil {
		return nil, err
	}
	res := &Result{Mode: cfg.Mode, Topic: cfg.Topic, Partitions: int32(len(td.Partitions)), Security: cfg.Client.Protocol()}
	res.Records, res.Bytes = cons.read.records.Load(), cons.read.bytes.Load()
	if res.Records == total || (cfg.Records > 0 && res.Records >= cfg.Records) {
		end = cons.last.Load() // finished: up to the last record, not the context's end
	}
	res.setElapsed(end)
	res.ClientCPUSeconds = (cpuEnd - cpuStart).Seconds()
	brokers.end(context.WithoutCancel(ctx), res)
	return res, nil
}

// waitUntil polls cond until it holds, ctx ends, or timeout passes.
func waitUntil(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return context.DeadlineExceeded
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// waitProgress polls count until it reaches want, failing when it does not
// grow for timeout.
func waitProgress(ctx context.Context, timeout time.Duration, count func() int64, want int64) error {
	last, lastAt := count(), time.Now()
	for last < want {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if n := count(); n != last {
			last, lastAt = n, time.Now()
		} else if time.Since(lastAt) > timeout {
			return fmt.Errorf("no record arrived for --timeout %v", timeout)
		}
	}
	return nil
}
