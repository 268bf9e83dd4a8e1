package replication

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"skiff/internal/batchtest"
	"skiff/logstore"
	"skiff/offsets"
)

// producerView is a partition's producer and transaction state, comparable with
// reflect.DeepEqual (open transactions without their start times, which are
// when this replica saw them).
type producerView struct {
	Producers     map[int64]producerEntry
	Open          map[int64][2]int64 // epoch, first offset
	Markers       map[int64]uint64
	CoordEpochs   map[int64]int32
	Aborted       []abortedRecord
	FirstUnstable int64
}

func viewOf(p *Partition) producerView {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return viewLocked(p)
}

func viewLocked(p *Partition) producerView {
	v := producerView{Producers: map[int64]producerEntry{}, Open: map[int64][2]int64{}, Markers: map[int64]uint64{},
		CoordEpochs: map[int64]int32{}, Aborted: []abortedRecord{}}
	for pid, e := range p.producers.m {
		c := *e
		c.batches = append([]batchRecord{}, e.batches...)
		v.Producers[pid] = c
	}
	x := p.txns
	x.mu.Lock()
	defer x.mu.Unlock()
	for pid, t := range x.open {
		v.Open[pid] = [2]int64{int64(t.Epoch), t.FirstOffset}
	}
	for pid, n := range x.markers {
		if n > 0 {
			v.Markers[pid] = n
		}
	}
	for pid, ce := range x.coordinatorEpochs {
		v.CoordEpochs[pid] = ce
	}
	v.Aborted = append(v.Aborted, x.aborted...)
	v.FirstUnstable = x.firstUnstable
	return v
}

// rebuiltView is the state a replay of the whole log gives p (it leaves p so).
func rebuiltView(t *testing.T, p *Partition) producerView {
	t.Helper()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.restoreProducersLocked(true, nil); err != nil {
		t.Fatal(err)
	}
	return viewLocked(p)
}

// storedAborted is what the Store records of p's aborted transactions.
func storedAborted(t *testing.T, p *Partition) []abortedRecord {
	t.Helper()
	out := []abortedRecord{}
	if err := p.store.AbortedTxnRecords(func(a abortedRecord) error { out = append(out, a); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// txnHistory drives random histories of idempotent and transactional batches,
// commits, aborts, fencing, snapshots and truncations on a partition.
type txnHistory struct {
	t          *testing.T
	rng        *rand.Rand
	p          *Partition
	boundaries []int64 // base offsets of appended batches
	noTruncate bool    // the high watermark moves on its own (flush.policy=always)
}

const (
	txnPIDs  = 4 // producers 1..4 are transactional
	idemPIDs = 2 // producers 5..6 idempotent only
)

func (h *txnHistory) step(retention bool) string {
	t, p, rng := h.t, h.p, h.rng
	info := map[int64]ProducerInfo{}
	for _, i := range p.Producers() {
		info[i.ProducerID] = i
	}
	pid := int64(1 + rng.IntN(txnPIDs+idemPIDs))
	in := info[pid]
	seq := in.LastSequence + 1
	if _, ok := info[pid]; !ok {
		seq = 0
	}
	switch r := rng.IntN(100); {
	case r < 50:
		var b []byte
		vals := make([]string, 1+rng.IntN(3))
		for i := range vals {
			vals[i] = fmt.Sprintf("v%d", rng.IntN(1000))
		}
		if pid <= txnPIDs {
			b = txnBatch(pid, in.Epoch, seq, vals...)
		} else {
			b = batchtest.Strings(batchtest.Producer{ID: pid, Epoch: in.Epoch, Sequence: seq}, time.Now().UnixMilli(), vals...)
		}
		res, err := p.Append(b, 1)
		if err != nil {
			t.Fatalf("append of producer %d: %v", pid, err)
		}
		h.boundaries = append(h.boundaries, res.BaseOffset)
		return "batch"
	case r < 75 && pid <= txnPIDs:
		epoch := in.Epoch
		fence := rng.IntN(6) == 0
		if fence {
			epoch++ // the coordinator bumped the epoch: the old producer is fenced
		}
		res, err := p.WriteMarker(pid, epoch, !fence && rng.IntN(2) == 0, int32(rng.IntN(2)), false)
		if err != nil {
			return "refused marker" // an older coordinator epoch than the last marker's
		}
		h.boundaries = append(h.boundaries, res.BaseOffset)
		return "marker"
	case r < 82:
		if err := p.snapshotProducers(); err != nil {
			t.Fatal(err)
		}
		return "snapshot"
	case r < 90 && len(h.boundaries) > 0 && !h.noTruncate:
		// A follower's truncation to a batch boundary (truncateToLeader cuts at
		// the high watermark when the leader's answer is undefined).
		i := rng.IntN(len(h.boundaries))
		to := h.boundaries[i]
		if to < p.LogStartOffset() {
			return "no truncation"
		}
		h.boundaries = h.boundaries[:i]
		// The partition leads here, so a background sync (a segment roll's) can
		// move the high watermark back to the log end between the Store and the
		// truncation, which then cuts nothing; a follower's never moves on its
		// own. Such a sync happens once per roll: try again.
		deadline := time.Now().Add(10 * time.Second)
		for {
			p.hw.Store(to)
			if err := p.truncateToLeader(-1, -1); err != nil {
				t.Fatal(err)
			}
			got := p.LogEndOffset()
			if got == to {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("truncated to %d, log end %d", to, got)
			}
		}
		return "truncate"
	case r < 95 && retention && len(h.boundaries) > 0:
		to := h.boundaries[rng.IntN(len(h.boundaries))]
		if _, err := p.DeleteRecords(min(to, p.HighWatermark())); err != nil {
			t.Fatal(err)
		}
		if err := p.applyRetention(time.Now()); err != nil {
			t.Fatal(err)
		}
		return "retention"
	}
	return "nothing"
}

// TestProducerStateRestored runs random histories and checks, at every restart
// and truncation, that the state restored from the Store's snapshot and the log
// after it is the one a replay of the whole log gives (without retention: with
// it, as Kafka, the snapshot keeps producers whose batches retention deleted,
// so there it is checked against the state before the restart), and that the
// Store holds exactly the aborted transactions in memory.
func TestProducerStateRestored(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	var fromSnapshot, tailReplays int // restores that used a snapshot, and replayed a tail after it
	defer func() {
		if !t.Failed() && (fromSnapshot == 0 || tailReplays == 0) {
			t.Errorf("%d restores from a snapshot, %d with a tail after it: the histories never test that path", fromSnapshot, tailReplays)
		}
	}()
	for seed := range seeds {
		retention := seed%3 == 2
		t.Run(fmt.Sprintf("seed%d/retention=%v", seed, retention), func(t *testing.T) {
			dir := t.TempDir()
			s := spec("t", 1, 1)
			s.Config.Log.SegmentBytes = 1024
			s.Config.Log.RetentionMs = -1
			open := func() (*Manager, *offsets.DB, *Partition) {
				m, db := newManager(t, dir)
				if err := m.Apply(1, []TopicSpec{s}); err != nil {
					t.Fatal(err)
				}
				return m, db, m.Partition("t", 0)
			}
			m, db, p := open()
			h := &txnHistory{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 16)), p: p}
			var history []string
			for round := range 8 {
				for range 40 {
					if what := h.step(retention); what == "truncate" && !retention {
						history = append(history, what)
						got := viewOf(p)
						if want := rebuiltView(t, p); !reflect.DeepEqual(got, want) {
							t.Fatalf("round %d after %v: state after truncation\n%+v\nwant (whole log)\n%+v", round, history, got, want)
						}
					} else {
						history = append(history, what)
					}
				}
				before := viewOf(p)
				if round%2 == 0 {
					// A restart: close (snapshot at the log end) and open.
					closeAll(t, m, db)
					m, db, p = open()
					h.p = p
				} else {
					// As after a crash: the Store's latest snapshot (taken at some
					// earlier step) and the log after it.
					off, _, ok, err := p.store.ProducerSnapshot()
					if err != nil {
						t.Fatal(err)
					}
					if ok && off >= p.LogStartOffset() && off <= p.LogEndOffset() {
						fromSnapshot++
						if off < p.LogEndOffset() {
							tailReplays++
						}
					}
					p.appendMu.Lock()
					err = p.restoreProducersLocked(false, nil)
					p.appendMu.Unlock()
					if err != nil {
						t.Fatal(err)
					}
				}
				got := viewOf(p)
				if retention {
					if !reflect.DeepEqual(got, before) && round%2 == 0 {
						t.Fatalf("round %d: state after restart\n%+v\nwant (before)\n%+v", round, got, before)
					}
				} else {
					if !reflect.DeepEqual(got, before) {
						t.Fatalf("round %d: restored state\n%+v\nwant (before)\n%+v", round, got, before)
					}
					if want := rebuiltView(t, p); !reflect.DeepEqual(got, want) {
						t.Fatalf("round %d: restored state\n%+v\nwant (whole log)\n%+v", round, got, want)
					}
				}
				if st, mem := storedAborted(t, p), viewOf(p).Aborted; !reflect.DeepEqual(st, mem) {
					t.Fatalf("round %d: Store's aborted transactions %+v, in memory %+v", round, st, mem)
				}
				// Fetch's answer (which stops at the first entry whose last
				// stable offset is past the range) is every aborted transaction
				// with records in the range.
				end := p.LogEndOffset() + 2
				for range 20 {
					from := h.rng.Int64N(end)
					to := from + h.rng.Int64N(end-from+1)
					var want []AbortedTxn
					for _, a := range viewOf(p).Aborted {
						if a.LastOffset >= from && a.FirstOffset < to {
							want = append(want, AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset, LastOffset: a.LastOffset})
						}
					}
					if got := p.AbortedTxns(from, to); !reflect.DeepEqual(got, want) {
						t.Fatalf("round %d: AbortedTxns(%d, %d) = %+v, want %+v", round, from, to, got, want)
					}
				}
			}
			closeAll(t, m, db)
		})
	}
}

// txnCrashSpec is topic t under flush.policy=replicated with small segments:
// the log's unsynced tail and Pebble's unsynced writes are lost independently.
func txnCrashSpec() TopicSpec {
	t := spec("t", 1, 1)
	t.Config.Log = logstore.Config{SegmentBytes: 1 << 10, IndexIntervalBytes: 256, RetentionMs: -1}
	return t
}

// TestProducerStateCrash crashes a node at a random filesystem operation of a
// history of transactional and idempotent batches, markers, snapshots and
// truncations (appends, aborted-transaction records, snapshot writes, segment
// rolls and syncs), then checks that the reopened partition's state is what a
// replay of its whole log gives and that the Store holds its aborted
// transactions; then the log grows again and a second power failure (after a
// clean close, losing what was not synced) must still agree: a snapshot of a
// lost tail must not come back once the log regrows past it.
func TestProducerStateCrash(t *testing.T) {
	iterations := 120
	if testing.Short() {
		iterations = 30
	}
	run := func(n *crashNode, seed uint64, steps int) {
		h := &txnHistory{t: t, rng: rand.New(rand.NewPCG(seed, 7)), p: n.m.Partition("t", 0)}
		for i := range steps {
			h.step(false)
			if i%2 == 0 {
				// Snapshots as often as the checkpoint loop would on a busy
				// partition: most crashes then find one ahead of the log.
				if err := h.p.snapshotProducers(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	check := func(what string, p *Partition) {
		t.Helper()
		got := viewOf(p)
		if st := storedAborted(t, p); !reflect.DeepEqual(st, got.Aborted) {
			t.Fatalf("%s: Store's aborted transactions %+v, in memory %+v", what, st, got.Aborted)
		}
		if want := rebuiltView(t, p); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: state\n%+v\nwant (whole log)\n%+v", what, got, want)
		}
	}
	probe := newCrashFS(t, 0)
	n := startCrashNode(t, probe, txnCrashSpec())
	before := probe.Ops()
	run(n, 0, 150)
	ops := probe.Ops() - before
	n.close(t)

	crashed := 0
	for it := range iterations {
		seed := uint64(it + 1)
		fs := newCrashFS(t, seed)
		n := startCrashNode(t, fs, txnCrashSpec())
		fs.CrashAt(before+1+rand.New(rand.NewPCG(seed, 8)).IntN(ops), nil)
		run(n, seed, 150)
		n.close(t)
		if fs.Crashed() {
			crashed++
		}
		fs2 := fs.Restart()
		n2 := startCrashNode(t, fs2, txnCrashSpec())
		check(fmt.Sprintf("iteration %d after the crash", it), n2.m.Partition("t", 0))
		run(n2, seed+1000, 60)
		n2.close(t)
		n3 := startCrashNode(t, fs2.Restart(), txnCrashSpec())
		check(fmt.Sprintf("iteration %d after a second power failure", it), n3.m.Partition("t", 0))
		n3.close(t)
	}
	if crashed < iterations/2 {
		t.Fatalf("only %d of %d iterations reached their crash point", crashed, iterations)
	}
}

// TestProducerSnapshotPastLogEnd: Pebble kept a snapshot of a log tail that the
// log lost (its unsynced tail). The open that finds it replays the whole log and
// replaces it durably: once the log grows past the stale snapshot's offset again
// and a power failure takes every unsynced Pebble write, the stale snapshot must
// not describe the new history.
func TestProducerSnapshotPastLogEnd(t *testing.T) {
	for _, full := range []bool{false, true} { // full: a damaged epoch checkpoint forces a whole-log replay
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) { testProducerSnapshotPastLogEnd(t, full) })
	}
}

func testProducerSnapshotPastLogEnd(t *testing.T, full bool) {
	for seed := range uint64(6) {
		fs := newCrashFS(t, seed+1)
		spec := txnCrashSpec()
		spec.Config.Flush = FlushAlways // the regrown log is on disk
		n := startCrashNode(t, fs, spec)
		p := n.m.Partition("t", 0)
		h := &txnHistory{t: t, rng: rand.New(rand.NewPCG(seed, 9)), p: p, noTruncate: true}
		for len(h.boundaries) < 40 {
			h.step(false)
		}
		if err := p.snapshotProducers(); err != nil {
			t.Fatal(err)
		}
		stale := p.LogEndOffset()
		// Take the log's tail away behind the partition's back, as a power
		// failure takes an unsynced tail (Truncate's synced Pebble write makes
		// the snapshot durable too).
		p.appendMu.Lock()
		err := p.log.Truncate(h.boundaries[len(h.boundaries)/2])
		if err == nil {
			err = p.restoreProducersLocked(full, nil)
		}
		p.appendMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		// The log grows past the stale offset with other batches, synced.
		h.rng = rand.New(rand.NewPCG(seed, 10))
		for p.LogEndOffset() <= stale+10 {
			h.step(false)
		}
		waitFor(t, "the log synced", func() bool { return p.log.SyncedOffset() >= p.LogEndOffset() })
		n2 := startCrashNode(t, fs.Restart(), spec)
		p2 := n2.m.Partition("t", 0)
		got := viewOf(p2)
		if want := rebuiltView(t, p2); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: state after the power failure\n%+v\nwant (whole log)\n%+v", seed, got, want)
		}
		n2.close(t)
		n.close(t)
	}
}

// refusingStore fails the writes of aborted transactions while refuse is set.
type refusingStore struct {
	Store
	refuse  bool
	refused []int64 // marker offsets of the refused writes
}

func (s *refusingStore) UpdateProducerState(u ProducerStateUpdate) error {
	if s.refuse && len(u.Aborted) > 0 {
		for _, a := range u.Aborted {
			s.refused = append(s.refused, a.LastOffset)
		}
		return errors.New("disk full")
	}
	return s.Store.UpdateProducerState(u)
}

// TestProducerSnapshotHeldBelowUnrecordedAbort: when the Store misses an aborted
// transaction, no snapshot passes its marker, so the next open replays it from
// the log instead of trusting the Store below the snapshot.
func TestProducerSnapshotHeldBelowUnrecordedAbort(t *testing.T) {
	fs := newCrashFS(t, 1)
	spec := txnCrashSpec()
	spec.Config.Flush = FlushAlways
	n := startCrashNode(t, fs, spec)
	p := n.m.Partition("t", 0)
	rs := &refusingStore{Store: p.store, refuse: true}
	setStore(p, rs)
	h := &txnHistory{t: t, rng: rand.New(rand.NewPCG(3, 9)), p: p, noTruncate: true}
	for i := 0; len(rs.refused) == 0; i++ {
		if i > 2000 {
			t.Fatal("no transaction was aborted")
		}
		h.step(false)
	}
	p.appendMu.Lock()
	rs.refuse = false
	p.appendMu.Unlock()
	for range 20 {
		h.step(false)
	}
	if err := p.snapshotProducers(); err != nil {
		t.Fatal(err)
	}
	off, _, ok, err := rs.Store.ProducerSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if ok && off > rs.refused[0] {
		t.Fatalf("a snapshot at %d passed the unrecorded abort marker at %d", off, rs.refused[0])
	}
	waitFor(t, "the log synced", func() bool { return p.log.SyncedOffset() >= p.LogEndOffset() })
	n2 := startCrashNode(t, fs.Restart(), spec)
	p2 := n2.m.Partition("t", 0)
	if got, want := viewOf(p2), rebuiltView(t, p2); !reflect.DeepEqual(got, want) {
		t.Fatalf("state after a restart\n%+v\nwant (whole log)\n%+v", got, want)
	}
	n2.close(t)
	n.close(t)
}
