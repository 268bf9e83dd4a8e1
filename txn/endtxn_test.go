package txn

import (
	"context"
	"math"
	"testing"
	"time"

	"skiff/replication"
)

// waitState waits until transactional id is in state st and not pending.
func waitState(t *testing.T, c *Coordinator, id string, st State) *txnMeta {
	t.Helper()
	sh, _ := c.shardFor(id)
	deadline := time.Now().Add(10 * time.Second)
	for {
		sh.mu.Lock()
		m := sh.txns[id]
		if m != nil && m.state == st && !m.pending {
			cp := m.clone()
			sh.mu.Unlock()
			return cp
		}
		sh.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("%s did not reach %s", id, StateName(st))
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}

// loadedCoordinator returns a loaded coordinator of partition 0 recording its
// markers in ml, and its log.
func loadedCoordinator(t *testing.T, ml *markerLog) (*Coordinator, *replication.Partition) {
	t.Helper()
	c := newTestCoordinator(ml)
	t.Cleanup(func() { c.Close() })
	log := newLog(t)
	c.Elect(0, 0, log)
	waitLoaded(t, c)
	return c, log
}

// setEpoch moves id's producer to epoch e in memory (a test hook: no record).
func setEpoch(c *Coordinator, id string, e int16) {
	sh, _ := c.shardFor(id)
	sh.mu.Lock()
	sh.txns[id].epoch = e
	sh.mu.Unlock()
}

// beginTV2 starts a transaction of id on out-0 at (pid, epoch).
func beginTV2(t *testing.T, c *Coordinator, pid int64, epoch int16) {
	t.Helper()
	if code, _ := c.AddPartitions(context.Background(), "app", pid, epoch, []TopicPartition{{"out", 0}}, false); code != 0 {
		t.Fatalf("add partitions at (%d, %d): %d", pid, epoch, code)
	}
}

// TestEndTxnV2BumpsEpoch: a TV2 EndTxn records the decision at e+1 and
// answers it; its markers carry e+1 and say TV2; the record is value v1;
// Kafka's retry table (TransactionCoordinator.endTransaction, TV2) decides the
// answers in CompleteCommit; a TV1 EndTxn keeps the epoch.
func TestEndTxnV2BumpsEpoch(t *testing.T) {
	ml := &markerLog{}
	c, _ := loadedCoordinator(t, ml)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	beginTV2(t, c, pid, 0)
	if p, e, code := c.EndTxn(ctx, "app", pid, 0, true, true); code != 0 || p != pid || e != 1 {
		t.Fatalf("TV2 commit: (%d, %d) code %d, want (%d, 1) 0", p, e, code, pid)
	}
	m := waitState(t, c, "app", CompleteCommit)
	if !m.tv2 || m.epoch != 1 || m.pid != pid {
		t.Fatalf("complete state %+v", m)
	}
	ml.mu.Lock()
	if len(ml.markers) != 1 || ml.markers[0].Epoch != 1 || !ml.markers[0].TV2 || !ml.markers[0].Commit {
		t.Fatalf("markers %+v, want one TV2 commit at epoch 1", ml.markers)
	}
	ml.mu.Unlock()
	if _, got, _ := parseRecord(m.record()); !got.tv2 {
		t.Fatal("the TV2 complete record does not read back as TV2")
	}

	for _, row := range []struct {
		name    string
		epoch   int16
		commit  bool
		code    int16
		toEpoch int16
	}{
		{"retry of the commit", 0, true, 0, 1},
		{"abort at the epoch before the bump", 0, false, codeInvalidState, -1},
		{"commit at the current epoch, nothing open", 1, true, codeInvalidState, -1},
		{"an epoch above the current", 2, true, codeFenced, -1},
		{"an epoch two below", -1, true, codeFenced, -1},
	} {
		p, e, code := c.EndTxn(ctx, "app", pid, row.epoch, row.commit, true)
		want := pid
		if row.toEpoch < 0 {
			want = -1
		}
		if code != row.code || p != want || e != row.toEpoch {
			t.Errorf("%s: (%d, %d) code %d, want (%d, %d) code %d", row.name, p, e, code, want, row.toEpoch, row.code)
		}
	}
	if _, _, code := c.EndTxn(ctx, "app", pid+1, 0, true, true); code != codeInvalidMapping {
		t.Errorf("another producer id: %d, want INVALID_PRODUCER_ID_MAPPING", code)
	}

	// The next transaction is at the bumped epoch; a TV1 EndTxn keeps it.
	beginTV2(t, c, pid, 1)
	if _, _, code := c.EndTxn(ctx, "app", pid, 1, true, false); code != 0 {
		t.Fatalf("TV1 commit: %d", code)
	}
	m = waitState(t, c, "app", CompleteCommit)
	if m.tv2 || m.epoch != 1 {
		t.Fatalf("after a TV1 commit: tv2 %v epoch %d, want false 1", m.tv2, m.epoch)
	}
	ml.mu.Lock()
	if last := ml.markers[len(ml.markers)-1]; last.TV2 || last.Epoch != 1 {
		t.Fatalf("TV1 marker %+v", last)
	}
	ml.mu.Unlock()
}

// TestEndTxnV2EmptyAbort: an abort at the current epoch with nothing open
// (Empty, or CompleteX) is an empty PrepareAbort with a bump: no marker.
func TestEndTxnV2EmptyAbort(t *testing.T) {
	ml := &markerLog{}
	c, _ := loadedCoordinator(t, ml)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if _, _, code := c.EndTxn(ctx, "app", pid, 0, true, true); code != codeInvalidState {
		t.Fatalf("commit from Empty: %d, want INVALID_TXN_STATE", code)
	}
	if p, e, code := c.EndTxn(ctx, "app", pid, 0, false, true); code != 0 || p != pid || e != 1 {
		t.Fatalf("abort from Empty: (%d, %d) code %d, want (%d, 1) 0", p, e, code, pid)
	}
	if m := waitState(t, c, "app", CompleteAbort); m.epoch != 1 || len(m.partitions) != 0 {
		t.Fatalf("after the empty abort: %+v", m)
	}
	// Again from CompleteAbort at the current epoch: another bump.
	if p, e, code := c.EndTxn(ctx, "app", pid, 1, false, true); code != 0 || p != pid || e != 2 {
		t.Fatalf("abort from CompleteAbort: (%d, %d) code %d, want (%d, 2) 0", p, e, code, pid)
	}
	waitState(t, c, "app", CompleteAbort)
	// The retry of it, at the epoch before.
	if p, e, code := c.EndTxn(ctx, "app", pid, 1, false, true); code != 0 || p != pid || e != 2 {
		t.Fatalf("retry of the empty abort: (%d, %d) code %d, want (%d, 2) 0", p, e, code, pid)
	}
	if n := ml.count(); n != 0 {
		t.Fatalf("%d markers written for empty aborts", n)
	}
}

// TestEndTxnV2RetryWhilePrepared: in PrepareX, a retry at the epoch before the
// bump with the same result answers the bumped epoch once the decision is
// complete (or its wait ends); another result or epoch is refused at once.
func TestEndTxnV2RetryWhilePrepared(t *testing.T) {
	c, g, _ := gatedCoordinator(t)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	beginTV2(t, c, pid, 0)
	if _, e, code := c.EndTxn(ctx, "app", pid, 0, false, true); code != 0 || e != 1 {
		t.Fatalf("abort: epoch %d code %d", e, code)
	}
	if _, _, code := c.EndTxn(ctx, "app", pid, 0, true, true); code != codeInvalidState {
		t.Errorf("commit while PrepareAbort: %d, want INVALID_TXN_STATE", code)
	}
	// The producer's next EndTxn (at the bumped epoch) waits for the
	// markers: CONCURRENT_TRANSACTIONS once its wait ends, never a fence.
	nextCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, _, code := c.EndTxn(nextCtx, "app", pid, 1, false, true)
	cancel()
	if code != codeConcurrent {
		t.Errorf("abort at the bumped epoch while PrepareAbort: %d, want CONCURRENT_TRANSACTIONS", code)
	}
	type answer struct {
		pid   int64
		epoch int16
		code  int16
	}
	got := make(chan answer, 1)
	go func() {
		p, e, code := c.EndTxn(ctx, "app", pid, 0, false, true)
		got <- answer{p, e, code}
	}()
	select {
	case a := <-got:
		t.Fatalf("the retry answered %+v before the markers", a)
	case <-time.After(50 * time.Millisecond): // it has not answered meanwhile
	}
	close(g.open)
	if a := <-got; a != (answer{pid, 1, 0}) {
		t.Fatalf("retry: %+v, want (%d, 1) 0", a, pid)
	}
	if m := waitState(t, c, "app", CompleteAbort); m.epoch != 1 {
		t.Fatalf("complete at epoch %d", m.epoch)
	}
}

// TestEndTxnV2EpochOverflow: at 32765 the bump gives 32766; at 32766 the
// decision is recorded at 32767 (markers too) with a new producer id, which
// the answer and the complete state carry at epoch 0; a retry with the old
// id at 32766 answers it, also after a new election (the v1 record keeps
// previous_producer_id); 32767 itself is never a client's epoch.
func TestEndTxnV2EpochOverflow(t *testing.T) {
	ml := &markerLog{}
	c, log := loadedCoordinator(t, ml)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	setEpoch(c, "app", math.MaxInt16-2)
	beginTV2(t, c, pid, math.MaxInt16-2)
	if p, e, code := c.EndTxn(ctx, "app", pid, math.MaxInt16-2, true, true); code != 0 || p != pid || e != math.MaxInt16-1 {
		t.Fatalf("commit at 32765: (%d, %d) code %d, want (%d, 32766) 0", p, e, code, pid)
	}
	waitState(t, c, "app", CompleteCommit)
	beginTV2(t, c, pid, math.MaxInt16-1)
	newPID, e, code := c.EndTxn(ctx, "app", pid, math.MaxInt16-1, true, true)
	if code != 0 || newPID == pid || newPID < 0 || e != 0 {
		t.Fatalf("commit at 32766: (%d, %d) code %d, want a new id at 0", newPID, e, code)
	}
	m := waitState(t, c, "app", CompleteCommit)
	if m.pid != newPID || m.epoch != 0 || m.prevPID != pid || m.nextPID != -1 {
		t.Fatalf("complete after the overflow: pid %d epoch %d prev %d next %d", m.pid, m.epoch, m.prevPID, m.nextPID)
	}
	ml.mu.Lock()
	if last := ml.markers[len(ml.markers)-1]; last.ProducerID != pid || last.Epoch != math.MaxInt16 || !last.TV2 {
		t.Fatalf("overflow marker %+v, want the old id at 32767", last)
	}
	ml.mu.Unlock()
	check := func(when string) {
		t.Helper()
		if p, e, code := c.EndTxn(ctx, "app", pid, math.MaxInt16-1, true, true); code != 0 || p != newPID || e != 0 {
			t.Fatalf("retry with the old id %s: (%d, %d) code %d, want (%d, 0) 0", when, p, e, code, newPID)
		}
		if _, _, code := c.EndTxn(ctx, "app", pid, math.MaxInt16-1, false, true); code != codeInvalidState {
			t.Fatalf("abort with the old id %s: %d, want INVALID_TXN_STATE", when, code)
		}
		if _, _, code := c.EndTxn(ctx, "app", pid, math.MaxInt16, true, true); code != codeInvalidMapping {
			t.Fatalf("the old id at 32767 %s: %d, want INVALID_PRODUCER_ID_MAPPING", when, code)
		}
	}
	check("")
	c.Resign(0)
	c.Elect(0, 1, log)
	waitLoaded(t, c)
	check("after an election")
	beginTV2(t, c, newPID, 0)
	if p, e, code := c.EndTxn(ctx, "app", newPID, 0, true, true); code != 0 || p != newPID || e != 1 {
		t.Fatalf("the new id's first commit: (%d, %d) code %d", p, e, code)
	}
}

// TestTimeoutAbortV2BumpsTwice: a TV2 transaction open past its timeout is
// aborted at e+2 (Kafka 4.x: a fence, then the abort's own bump), so its
// producer is fenced; where that would exhaust the epochs (e >= 32765) the
// abort is at 32767 and the id rotates. A TV1 transaction keeps e+1.
func TestTimeoutAbortV2BumpsTwice(t *testing.T) {
	for _, row := range []struct {
		name        string
		tv2         bool
		epoch       int16 // of the open transaction
		markerEpoch int16
		rotates     bool
	}{
		{"TV1", false, 1, 2, false},
		{"TV2", true, 1, 3, false},
		{"TV2 at 32764", true, math.MaxInt16 - 3, math.MaxInt16 - 1, false},
		{"TV2 at 32765", true, math.MaxInt16 - 2, math.MaxInt16, true},
		{"TV2 at 32766", true, math.MaxInt16 - 1, math.MaxInt16, true},
	} {
		t.Run(row.name, func(t *testing.T) {
			ml := &markerLog{}
			c, _ := loadedCoordinator(t, ml)
			ctx := context.Background()
			pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
			beginTV2(t, c, pid, 0)
			if _, _, code := c.EndTxn(ctx, "app", pid, 0, true, row.tv2); code != 0 {
				t.Fatalf("first commit: %d", code)
			}
			waitState(t, c, "app", CompleteCommit)
			setEpoch(c, "app", row.epoch)
			beginTV2(t, c, pid, row.epoch)
			sh, _ := c.shardFor("app")
			sh.abortTimedOut(time.Now().Add(2 * time.Minute))
			m := waitState(t, c, "app", CompleteAbort)
			ml.mu.Lock()
			last := ml.markers[len(ml.markers)-1]
			ml.mu.Unlock()
			if last.Commit || last.ProducerID != pid || last.Epoch != row.markerEpoch || last.TV2 != row.tv2 {
				t.Fatalf("abort marker %+v, want producer %d epoch %d TV2 %v", last, pid, row.markerEpoch, row.tv2)
			}
			switch {
			case row.rotates && (m.pid == pid || m.epoch != 0 || m.prevPID != pid):
				t.Fatalf("after the abort: pid %d epoch %d prev %d, want a new id at 0", m.pid, m.epoch, m.prevPID)
			case !row.rotates && (m.pid != pid || m.epoch != row.markerEpoch):
				t.Fatalf("after the abort: pid %d epoch %d, want %d at %d", m.pid, m.epoch, pid, row.markerEpoch)
			}
			if _, _, code := c.EndTxn(ctx, "app", pid, row.epoch, true, row.tv2); code == 0 {
				t.Fatal("the timed-out producer's commit succeeded")
			}
		})
	}
}

// TestEndTxnV2OtherEpochs: the rows of Kafka's TV2 table that refuse: another
// epoch in Ongoing or Empty is PRODUCER_FENCED (never a retry), and so is one
// in PrepareX after an overflow other than the old id at 32766, which waits,
// and the new id at 0 (the producer's next EndTxn), which waits too.
func TestEndTxnV2OtherEpochs(t *testing.T) {
	c, g, _ := gatedCoordinator(t)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	setEpoch(c, "app", 5)
	for _, e := range []int16{4, 6} {
		if _, _, code := c.EndTxn(ctx, "app", pid, e, false, true); code != codeFenced {
			t.Errorf("abort at %d from Empty at 5: %d, want PRODUCER_FENCED", e, code)
		}
	}
	beginTV2(t, c, pid, 5)
	for _, e := range []int16{4, 6} {
		if _, _, code := c.EndTxn(ctx, "app", pid, e, true, true); code != codeFenced {
			t.Errorf("commit at %d of Ongoing at 5: %d, want PRODUCER_FENCED", e, code)
		}
	}
	setEpoch(c, "app", math.MaxInt16-1)
	newPID, _, code := c.EndTxn(ctx, "app", pid, math.MaxInt16-1, true, true)
	if code != 0 {
		t.Fatalf("commit at 32766: %d", code)
	}
	// PrepareCommit at 32767, its markers held.
	// The new id's next EndTxn waits for the markers (CONCURRENT_TRANSACTIONS
	// once its wait ends), never INVALID_PRODUCER_ID_MAPPING (KAFKA-18660).
	nextCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, _, code = c.EndTxn(nextCtx, "app", newPID, 0, true, true)
	cancel()
	if code != codeConcurrent {
		t.Errorf("the new id while PrepareCommit: %d, want CONCURRENT_TRANSACTIONS", code)
	}
	if _, _, code := c.EndTxn(ctx, "app", pid, math.MaxInt16, true, true); code != codeFenced {
		t.Errorf("the old id at 32767 while PrepareCommit: %d, want PRODUCER_FENCED", code)
	}
	retryCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	p, e, code := c.EndTxn(retryCtx, "app", pid, math.MaxInt16-1, true, true)
	cancel()
	if code != 0 || p != newPID || e != 0 {
		t.Errorf("retry with the old id at 32766 while PrepareCommit: (%d, %d) code %d, want (%d, 0) 0", p, e, code, newPID)
	}
	close(g.open)
	waitState(t, c, "app", CompleteCommit)
}

// TestInitAfterLostOverflowAnswer: a TV2 producer whose EndTxn at 32766
// rotated its id but lost the answer recovers with InitProducerId(old id,
// 32766) (franz-go's retry of a lost EndTxn; Kafka's isValidProducerId case
// 3) and gets the new id, not PRODUCER_FENCED; another old epoch is fenced.
func TestInitAfterLostOverflowAnswer(t *testing.T) {
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
	if _, _, code := c.InitProducerID(ctx, "app", time.Minute, pid, math.MaxInt16-2); code != codeFenced {
		t.Fatalf("init with the old id at 32765: %d, want PRODUCER_FENCED", code)
	}
	p, e, code := c.InitProducerID(ctx, "app", time.Minute, pid, math.MaxInt16-1)
	if code != 0 || p != newPID || e != 1 {
		t.Fatalf("init with the old id at 32766: (%d, %d) code %d, want (%d, 1) 0", p, e, code, newPID)
	}
}

// TestInitFencesTV2Transaction: a new producer's InitProducerId aborts the
// open TV2 transaction at e+2 (Kafka: the fence, then the abort's bump), so
// the fenced producer's EndTxn abort at e is not taken for a retry of it.
func TestInitFencesTV2Transaction(t *testing.T) {
	ml := &markerLog{}
	c, _ := loadedCoordinator(t, ml)
	ctx := context.Background()
	pid, _, _ := c.InitProducerID(ctx, "app", time.Minute, -1, -1)
	if code, _ := c.AddPartitions(ctx, "app", pid, 0, []TopicPartition{{"out", 0}}, true); code != 0 {
		t.Fatalf("implicit add: %d", code)
	}
	if _, _, code := c.InitProducerID(ctx, "app", time.Minute, -1, -1); code != codeConcurrent {
		t.Fatalf("init of a new producer: %d, want CONCURRENT_TRANSACTIONS", code)
	}
	waitState(t, c, "app", CompleteAbort)
	ml.mu.Lock()
	if len(ml.markers) != 1 || ml.markers[0].Epoch != 2 || !ml.markers[0].TV2 || ml.markers[0].Commit {
		t.Fatalf("markers %+v, want one TV2 abort at epoch 2", ml.markers)
	}
	ml.mu.Unlock()
	if _, _, code := c.EndTxn(ctx, "app", pid, 0, false, true); code != codeFenced {
		t.Fatalf("the fenced producer's abort: %d, want PRODUCER_FENCED", code)
	}
	if p, e, code := c.InitProducerID(ctx, "app", time.Minute, -1, -1); code != 0 || p != pid || e != 3 {
		t.Fatalf("init again: (%d, %d) code %d, want (%d, 3) 0", p, e, code, pid)
	}
}
