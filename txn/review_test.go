package txn

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/replication"
)

// completeGatedLog holds every append of a batch holding a CompleteCommit or
// CompleteAbort record until open is closed, and says so on reached.
type completeGatedLog struct {
	*replication.Partition
	reached chan struct{} // one value per held append
	open    chan struct{}
}

func (l *completeGatedLog) Append(b []byte, acks int16) (replication.AppendResult, error) {
	complete := false
	_ = batch.Records(b, func(r batch.Record) error {
		if _, m, err := parseRecord(r); err == nil && m != nil && (m.state == CompleteCommit || m.state == CompleteAbort) {
			complete = true
		}
		return nil
	})
	if complete {
		l.reached <- struct{}{}
		<-l.open
	}
	return l.Partition.Append(b, acks)
}

// TestCarryAfterCompleteRecordBegan: an implicit add that arrives once the
// markers of the ended transaction are written, while its complete record
// is being appended, must not carry the completion (the complete record would
// land after the Ongoing one and end the new transaction, in the log and in
// memory): it waits for that record and then starts the transaction.
func TestCarryAfterCompleteRecordBegan(t *testing.T) {
	log := &completeGatedLog{Partition: newLog(t), reached: make(chan struct{}, 4), open: make(chan struct{})}
	g := &gatedMarkers{open: make(chan struct{})}
	c := newTestCoordinator(&markerLog{})
	c.cfg.WriteMarkers = g.write
	t.Cleanup(func() { c.Close() })
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", 0}}, true); code != 0 {
		t.Fatalf("implicit add: %d", code)
	}
	if _, e, code := c.EndTxn(ctx, "app", pid, 0, true, true); code != 0 || e != 1 {
		t.Fatalf("commit: epoch %d code %d", e, code)
	}
	close(g.open) // the markers are written; the complete record is held
	select {
	case <-log.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the complete record was not appended")
	}
	added := make(chan int16, 1)
	go func() {
		code, _ := c.AddPartitions(ctx, "app", pid, 1, []TopicPartition{{"out", 1}}, true)
		added <- code
	}()
	// Either the add waits for the complete record, or (the bug) it carried
	// the completion and was answered: see which.
	awaitingOrAnswered(t, c, "app", added)
	close(log.open)
	if code := <-added; code != 0 {
		t.Fatalf("implicit add of the next transaction: %d", code)
	}
	if m := waitState(t, c, "app", Ongoing); m.epoch != 1 || len(m.partitions) != 1 {
		t.Fatalf("next transaction in memory: epoch %d partitions %v", m.epoch, m.partitions)
	}
	c.Resign(0)
	c.Elect(0, 1, log)
	waitLoaded(t, c)
	if m := waitState(t, c, "app", Ongoing); m.epoch != 1 || len(m.partitions) != 1 {
		t.Fatalf("next transaction after a load: epoch %d partitions %v", m.epoch, m.partitions)
	}
}

// TestInitWithOldIDAbortsOngoing: InitProducerId with the id an overflow
// rotated away from (at 32766) is accepted, but like any InitProducerId it
// aborts the transaction open under the new id first (CONCURRENT_TRANSACTIONS,
// its markers written) rather than dropping it to Empty, which left it open
// on its partitions with no marker to come.
func TestInitWithOldIDAbortsOngoing(t *testing.T) {
	ml := &markerLog{}
	c, _ := loadedCoordinator(t, ml)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	setEpoch(c, "app", math.MaxInt16-1)
	beginTV2(t, c, pid, math.MaxInt16-1)
	newPID, _, code := c.EndTxn(ctx, "app", pid, math.MaxInt16-1, true, true)
	if code != 0 {
		t.Fatalf("commit at 32766: %d", code)
	}
	waitState(t, c, "app", CompleteCommit)
	if code, _ := c.AddPartitions(ctx, "app", newPID, 0, []TopicPartition{{"out", 1}}, true); code != 0 {
		t.Fatalf("implicit add of the new id: %d", code)
	}
	waitState(t, c, "app", Ongoing)
	before := ml.count()
	if p, e, code := c.InitProducerID(ctx, "app", time.Minute, pid, math.MaxInt16-1); code != codeConcurrent {
		t.Fatalf("init with the old id while the new id's transaction is open: (%d, %d) code %d, want CONCURRENT_TRANSACTIONS", p, e, code)
	}
	waitState(t, c, "app", CompleteAbort)
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if len(ml.markers) != before+1 || ml.markers[before].ProducerID != newPID || ml.markers[before].Commit ||
		ml.markers[before].Partition != 1 {
		t.Fatalf("markers after the init %+v, want one abort of out-1 by %d", ml.markers[before:], newPID)
	}
}

// TestParseRejectsGarbage: the decoders of a value v1 record and of the
// completion tag refuse what Skiff never writes and what would send markers
// nowhere (a negative partition retried forever, holding the id's EndTxn),
// rather than read it as something else.
func TestParseRejectsGarbage(t *testing.T) {
	good := &completion{commit: true, pid: 7, epoch: 4, coordinatorEpoch: 9,
		partitions: []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}}}
	if _, err := parseCompletion(appendCompletion(nil, good)); err != nil {
		t.Fatalf("a good completion: %v", err)
	}
	for name, c := range map[string]*completion{
		"unsorted":           {pid: 7, epoch: 4, partitions: []TopicPartition{{"b", 0}, {"a", 1}}},
		"duplicate":          {pid: 7, epoch: 4, partitions: []TopicPartition{{"a", 1}, {"a", 1}}},
		"negative partition": {pid: 7, epoch: 4, partitions: []TopicPartition{{"a", -1}}},
		"empty topic":        {pid: 7, epoch: 4, partitions: []TopicPartition{{"", 0}}},
		"negative id":        {pid: -1, epoch: 4},
		"negative epoch":     {pid: 7, epoch: -1},
	} {
		if _, err := parseCompletion(appendCompletion(nil, c)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	b := appendCompletion(nil, good)
	b[0] = 2 // result neither abort nor commit
	if _, err := parseCompletion(b); err == nil {
		t.Error("result 2: accepted")
	}
	// A topic with no partition (never written: a completion groups its
	// partitions by topic).
	b = appendCompletion(nil, &completion{pid: 7, epoch: 4})
	b = append(b[:len(b)-4], 0, 0, 0, 1, 0, 1, 'a', 0, 0, 0, 0)
	if _, err := parseCompletion(b); err == nil {
		t.Error("a topic with no partition: accepted")
	}

	m := &txnMeta{id: "id", pid: 7, epoch: 4, timeout: time.Minute, state: Ongoing,
		partitions: map[TopicPartition]struct{}{{"c", 0}: {}}, updated: time.UnixMilli(2000), lastEpoch: -1,
		tv2: true, prevPID: -1, nextPID: -1, nextEpoch: -1, carried: good}
	r := m.record()
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(v *kmsg.TxnMetadataValue){
		"value version 2":       func(v *kmsg.TxnMetadataValue) { v.Version = 2 },
		"state 7":               func(v *kmsg.TxnMetadataValue) { v.State = 7 },
		"negative state":        func(v *kmsg.TxnMetadataValue) { v.State = -1 },
		"completion on Prepare": func(v *kmsg.TxnMetadataValue) { v.State = PrepareCommit },
	} {
		w := v
		change(&w)
		if _, _, err := parseRecord(batch.Record{Key: r.Key, Value: w.AppendTo(nil)}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestEndTxnV2NextWhilePrepared: the producer's next EndTxn, at the epoch
// its previous EndTxn answered, may arrive while that decision's markers are
// still written (franz-go's empty abort right after a commit). It waits for
// them, as Kafka 4.x answers CONCURRENT_TRANSACTIONS first (KAFKA-18464),
// rather than be fenced (PRODUCER_FENCED, or INVALID_PRODUCER_ID_MAPPING
// with the new id after an overflow, KAFKA-18660): both fatal under TV2.
func TestEndTxnV2NextWhilePrepared(t *testing.T) {
	for _, start := range []int16{0, math.MaxInt16 - 1} {
		c, g, _ := gatedCoordinator(t)
		ctx := context.Background()
		pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
		setEpoch(c, "app", start)
		if code, _ := c.AddPartitions(ctx, "app", pid, start, []TopicPartition{{"out", 0}}, true); code != 0 {
			t.Fatalf("implicit add at %d: %d", start, code)
		}
		nextPID, nextEpoch, code := c.EndTxn(ctx, "app", pid, start, true, true)
		if code != 0 {
			t.Fatalf("commit at %d: %d", start, code)
		}
		type answer struct {
			pid   int64
			epoch int16
			code  int16
		}
		got := make(chan answer, 1)
		go func() {
			p, e, code := c.EndTxn(ctx, "app", nextPID, nextEpoch, false, true)
			got <- answer{p, e, code}
		}()
		select {
		case a := <-got:
			t.Fatalf("from %d: the next (empty) abort answered %+v while the commit's markers are held", start, a)
		case <-time.After(50 * time.Millisecond): // it has not answered meanwhile
		}
		close(g.open)
		if a := <-got; a != (answer{nextPID, nextEpoch + 1, 0}) {
			t.Fatalf("from %d: the next abort %+v, want (%d, %d) 0", start, a, nextPID, nextEpoch+1)
		}
		waitState(t, c, "app", CompleteAbort)
	}
}

// TestChainEndsOnResign: implicit adds on a chain, their records appended and
// not committed, answer NOT_COORDINATOR as soon as the coordinator resigns its
// partition (not after CommitTimeout), and nothing of theirs outlives the
// shard (goleak, TestMain); the next coordinator finds their records.
func TestChainEndsOnResign(t *testing.T) {
	c, log, pid := gatedLogProducer(t)
	ctx := context.Background()
	end := log.LogEndOffset()
	log.below.Store(end)
	codes := make(chan int16, 3)
	for p := int32(0); p < 3; p++ {
		go func() {
			code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", p}}, true)
			codes <- code
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for log.LogEndOffset() < end+3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 records appended", log.LogEndOffset()-end)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	resigned := time.Now()
	c.Resign(0)
	for range 3 {
		if code := <-codes; code != codeNotCoordinator {
			t.Fatalf("an add in flight at the resignation: %d, want NOT_COORDINATOR", code)
		}
	}
	if d := time.Since(resigned); d >= c.cfg.CommitTimeout {
		t.Fatalf("the adds answered %v after the resignation, not before CommitTimeout", d)
	}
	log.below.Store(math.MaxInt64)
	c.Elect(0, 1, log)
	waitLoaded(t, c)
	if m := waitState(t, c, "app", Ongoing); len(m.partitions) != 3 || !m.tv2 {
		t.Fatalf("after the election: partitions %v tv2 %v", m.partitions, m.tv2)
	}
}

// TestInitRotationHoldsTheID: InitProducerId at an exhausted epoch allocates a
// new producer id without the shard's lock; meanwhile the id is pending, so
// an implicit add cannot start a transaction that the Empty state would then
// drop (open on its partitions with no marker to come).
func TestInitRotationHoldsTheID(t *testing.T) {
	ml := &markerLog{}
	c, _ := loadedCoordinator(t, ml)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	setEpoch(c, "app", math.MaxInt16-1)
	allocating, allocate := make(chan struct{}), make(chan struct{})
	c.cfg.AllocateProducerID = func(context.Context) (int64, error) {
		close(allocating)
		<-allocate
		return 500, nil
	}
	type answer struct {
		pid   int64
		epoch int16
		code  int16
	}
	inited := make(chan answer, 1)
	go func() {
		p, e, code := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
		inited <- answer{p, e, code}
	}()
	<-allocating
	added := make(chan int16, 1)
	go func() {
		code, _ := c.AddPartitions(ctx, "app", pid, math.MaxInt16-1, []TopicPartition{{"out", 0}}, true)
		added <- code
	}()
	// The add either waits for the init (the id pending) or, the bug, is
	// answered at once.
	if code, answered := awaitingOrAnswered(t, c, "app", added); answered && code == 0 {
		t.Fatal("an implicit add started a transaction while InitProducerId rotated the id")
	}
	close(allocate)
	if a := <-inited; a != (answer{500, 0, 0}) {
		t.Fatalf("init: %+v, want (500, 0) 0", a)
	}
	if code := <-added; code != codeInvalidMapping {
		t.Fatalf("the old producer's add after the init: %d, want INVALID_PRODUCER_ID_MAPPING", code)
	}
	if m := waitState(t, c, "app", Empty); m.pid != 500 || len(m.partitions) != 0 {
		t.Fatalf("after the init: pid %d partitions %v", m.pid, m.partitions)
	}
}

// TestEndTxnV1WhileCarrying: an EndTxn below v5 on a transaction that carries
// the previous one's completion gets CONCURRENT_TRANSACTIONS, like any change
// of the id meanwhile: its PrepareX record (value v0, no tags) would drop the
// completion from the log, and a coordinator elected before those markers
// are committed would never write them.
func TestEndTxnV1WhileCarrying(t *testing.T) {
	c, g, _ := gatedCoordinator(t)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", 0}}, true); code != 0 {
		t.Fatalf("implicit add: %d", code)
	}
	if _, _, code := c.EndTxn(ctx, "app", pid, 0, true, true); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if code, _ := c.AddPartitions(ctx, "app", pid, 1, []TopicPartition{{"out", 1}}, true); code != 0 {
		t.Fatalf("implicit add carrying the completion: %d", code)
	}
	if _, _, code := c.EndTxn(ctx, "app", pid, 1, true, false); code != codeConcurrent {
		t.Fatalf("EndTxn v4 while the completion is carried: %d, want CONCURRENT_TRANSACTIONS", code)
	}
	close(g.open)
	waitState(t, c, "app", Ongoing)
}

// awaitingOrAnswered waits until a request waits for a change of id
// (awaiting) or code has an answer, which it puts back and returns.
func awaitingOrAnswered(t *testing.T, c *Coordinator, id string, code chan int16) (int16, bool) {
	t.Helper()
	sh, _ := c.shardFor(id)
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case got := <-code:
			code <- got
			return got, true
		default:
		}
		sh.mu.Lock()
		waiting := sh.txns[id].awaiting > 0
		sh.mu.Unlock()
		if waiting {
			return 0, false
		}
		if time.Now().After(deadline) {
			t.Fatalf("a request of %s neither waited nor answered", id)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}
