package sharegroup

import (
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestWindowLifecycle walks records through acquisition, release, lock expiry,
// the delivery count limit, rejection and acceptance, and checks SPSO/SPEO.
func TestWindowLifecycle(t *testing.T) {
	now := time.Unix(1000, 0)
	lock := 30 * time.Second
	w := newWindow(State{StartOffset: 10})
	var archived []Archived
	if got := w.acquireNew(10, 14, "a", now.Add(lock), false); len(got) != 5 || w.end != 15 {
		t.Fatalf("acquired %v, end %d; want 10..14 and end 15", got, w.end)
	}
	// b may not acknowledge a's records, and a bad batch changes nothing.
	if code := w.acknowledge("b", 10, 10, []int8{AckAccept}, now, 5, &archived); code != kerr.InvalidRecordState.Code {
		t.Fatalf("b acknowledged a's record: %d", code)
	}
	if code := w.acknowledge("a", 10, 12, []int8{AckAccept, AckAccept}, now, 5, &archived); code != kerr.InvalidRequest.Code {
		t.Fatalf("types of the wrong length: %d", code)
	}
	// a accepts 10, releases 11, rejects 12; 13 and 14 stay acquired.
	if code := w.acknowledge("a", 10, 12, []int8{AckAccept, AckRelease, AckReject}, now, 5, &archived); code != 0 {
		t.Fatal(code)
	}
	if w.start != 11 {
		t.Fatalf("SPSO %d after accepting 10, want 11", w.start)
	}
	if len(archived) != 1 || archived[0] != (Archived{Offset: 12, Count: 1, Reason: ReasonRejected}) {
		t.Fatalf("archived %+v, want 12 rejected", archived)
	}
	// 11 is redelivered to b, counted twice.
	if got := w.acquireAvailable("b", 10, now.Add(lock), 5, &archived); len(got) != 1 || got[0] != 11 || w.at(11).count != 2 {
		t.Fatalf("redelivered %v (count %d), want 11 delivered twice", got, w.at(11).count)
	}
	// Locks end: 11, 13, 14 are available again.
	archived = nil
	if !w.expire(now.Add(lock), 5, &archived) || len(archived) != 0 {
		t.Fatalf("expiry: archived %+v", archived)
	}
	if got := w.acquireAvailable("c", 10, now.Add(2*lock), 5, &archived); len(got) != 3 {
		t.Fatalf("after expiry c acquired %v, want 11, 13, 14", got)
	}
	if _, acquired, _, _ := w.counts(); acquired != 3 || w.acquired != 3 || w.earliestDeadline().After(now.Add(2*lock)) {
		t.Fatalf("%d acquired, counted %d, earliest lock end %v; want 3, 3 and at most %v", acquired, w.acquired, w.earliestDeadline(), now.Add(2*lock))
	}
	// RENEW keeps a lock past its first deadline.
	if code := w.acknowledge("c", 13, 13, []int8{AckRenew}, now.Add(3*lock), 5, &archived); code != 0 {
		t.Fatal(code)
	}
	w.expire(now.Add(2*lock), 5, &archived) // 11 and 14 end, 13 was renewed
	if r := w.at(13); r.state != stateAcquired || r.owner != "c" {
		t.Fatalf("renewed record 13: %+v, want still acquired by c", r)
	}
	if code := w.acknowledge("c", 13, 13, []int8{AckAccept}, now, 5, &archived); code != 0 {
		t.Fatal(code)
	}
	// d takes 11 and 14 (delivered a fourth and third time) and accepts them: the
	// window empties up to SPEO.
	if got := w.acquireAvailable("d", 10, now.Add(4*lock), 5, &archived); len(got) != 2 || w.at(11).count != 4 || w.at(14).count != 3 {
		t.Fatalf("d acquired %v", got)
	}
	if code := w.acknowledge("d", 11, 11, []int8{AckAccept}, now, 5, &archived); code != 0 {
		t.Fatal(code)
	}
	if code := w.acknowledge("d", 14, 14, []int8{AckGap}, now, 5, &archived); code != 0 {
		t.Fatal(code)
	}
	if w.acquired != 0 || !w.earliestDeadline().IsZero() {
		t.Fatalf("%d counted acquired after every record was done", w.acquired)
	}
	if w.start != 15 || w.end != 15 || w.size() != 0 {
		t.Fatalf("SPSO %d SPEO %d, %d in flight; want 15, 15, 0", w.start, w.end, w.size())
	}
}

// TestWindowDeliveryLimit: a record released at its last allowed delivery is
// archived, as is one whose lock ends then.
func TestWindowDeliveryLimit(t *testing.T) {
	now := time.Unix(1000, 0)
	w := newWindow(State{StartOffset: 0})
	var archived []Archived
	w.acquireNew(0, 1, "a", now, false)
	for range 2 {
		w.acknowledge("a", 0, 0, []int8{AckRelease}, now, 3, &archived)
		w.acquireAvailable("a", 1, now, 3, &archived)
	}
	if w.at(0).count != 3 {
		t.Fatalf("count %d, want 3", w.at(0).count)
	}
	w.acknowledge("a", 0, 0, []int8{AckRelease}, now, 3, &archived)
	w.expire(now.Add(time.Hour), 3, &archived) // record 1's lock ends at count 1: available
	if len(archived) != 1 || archived[0].Offset != 0 || archived[0].Reason != ReasonDeliveryLimit {
		t.Fatalf("archived %+v, want offset 0 over its delivery count", archived)
	}
	if w.start != 1 || w.at(1).state != stateAvailable {
		t.Fatalf("SPSO %d, record 1 %+v", w.start, w.at(1))
	}
}

// TestWindowDurableState: the stored runs keep acknowledged and archived records
// and delivery counts, and acquired records come back available.
func TestWindowDurableState(t *testing.T) {
	now := time.Unix(1000, 0)
	w := newWindow(State{StartOffset: 5})
	var archived []Archived
	w.acquireNew(5, 9, "a", now.Add(time.Minute), false)
	w.acknowledge("a", 6, 7, []int8{AckAccept, AckReject}, now, 5, &archived)
	st := State{LeaderEpoch: 3, Seq: 9, StartOffset: w.start, Runs: w.runs()}
	got, err := decodeState(encodeState(st))
	if err != nil {
		t.Fatal(err)
	}
	w2 := newWindow(got)
	if w2.start != 5 || w2.end != 10 {
		t.Fatalf("reloaded SPSO %d SPEO %d, want 5 and 10", w2.start, w2.end)
	}
	want := map[int64]uint8{5: stateAvailable, 6: stateAcknowledged, 7: stateArchived, 8: stateAvailable, 9: stateAvailable}
	for o, s := range want {
		if r := w2.at(o); r == nil || r.state != s || r.count != 1 {
			t.Errorf("offset %d: %+v, want state %d delivered once", o, r, s)
		}
	}
	// A redelivery after the failover counts the first delivery.
	if offs := w2.acquireAvailable("b", 10, now, 5, &archived); len(offs) != 3 || w2.at(5).count != 2 {
		t.Fatalf("acquired %v, count %d; want 5, 8, 9 delivered a second time", offs, w2.at(5).count)
	}
}

// TestStateCodec: keys and values round-trip; a flipped bit or a short value is
// corruption.
func TestStateCodec(t *testing.T) {
	k := Key{Group: "g", TopicID: [16]byte{1, 2, 3}, Partition: 7}
	if got, err := decodeKey(encodeKey(k)); err != nil || got != k {
		t.Fatalf("key %+v %v", got, err)
	}
	b := encodeState(State{LeaderEpoch: 1, Seq: 2, StartOffset: 3, Runs: []Run{{First: 3, Last: 4, State: stateAcknowledged, Count: 1}}})
	for i := 5; i < len(b); i++ {
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		if _, err := decodeState(c); err == nil {
			t.Fatalf("a flipped bit at byte %d was not detected", i)
		}
	}
	if _, err := decodeState(b[:len(b)-1]); err == nil {
		t.Fatal("a short value was accepted")
	}
	if _, err := decodeKey([]byte{1, 0, 9}); err == nil {
		t.Fatal("a short key was accepted")
	}
}

// TestWindowGapArchived: offsets the log skips (compacted away) between the
// window's end and the next batch are done at once: never handed out as
// available, and not kept in the window once nothing is before them.
func TestWindowGapArchived(t *testing.T) {
	now := time.Unix(1000, 0)
	w := newWindow(State{StartOffset: 0})
	if got := w.acquireNew(0, 1, "a", now.Add(time.Minute), false); len(got) != 2 {
		t.Fatalf("acquired %v", got)
	}
	if got := w.acquireNew(1000, 1001, "a", now.Add(time.Minute), false); len(got) != 2 || got[0] != 1000 {
		t.Fatalf("acquired %v past the gap", got)
	}
	var archived []Archived
	if got := w.acquireAvailable("b", 500, now.Add(time.Minute), 5, &archived); len(got) != 0 {
		t.Fatalf("offsets of the gap handed out: %d of them, first %d", len(got), got[0])
	}
	if code := w.acknowledge("a", 0, 1, []int8{AckAccept}, now, 5, &archived); code != 0 {
		t.Fatal(code)
	}
	if w.start != 1000 || w.size() != 2 {
		t.Fatalf("after the records before the gap were accepted: start %d, %d in the window; want 1000, 2", w.start, w.size())
	}
	// Past an empty window's end, the gap is not stored at all.
	w.acknowledge("a", 1000, 1001, []int8{AckAccept}, now, 5, &archived)
	w.acquireNew(5000, 5000, "a", now.Add(time.Minute), false)
	if w.start != 5000 || w.size() != 1 {
		t.Fatalf("a gap past an empty window: start %d, %d in the window", w.start, w.size())
	}
}

// TestWindowRenewShorterLock: a RENEW to a deadline before the earliest known
// lock end (the group's lock duration was lowered) still expires on time.
func TestWindowRenewShorterLock(t *testing.T) {
	now := time.Unix(1000, 0)
	w := newWindow(State{StartOffset: 0})
	w.acquireNew(0, 0, "a", now.Add(time.Minute), false)
	var archived []Archived
	if code := w.acknowledge("a", 0, 0, []int8{AckRenew}, now.Add(time.Second), 5, &archived); code != 0 {
		t.Fatal(code)
	}
	if !w.expire(now.Add(2*time.Second), 5, &archived) {
		t.Fatal("the renewed lock did not expire at its shorter deadline")
	}
}

// TestWindowGapBehindAcquiredIsARange: a long gap of compacted-away offsets
// behind records still acquired is held as a range, not an entry per offset:
// the window holds only the records, reads the gap's offsets as done (counted
// archived, never handed out, not acknowledgeable), stores the gap as one run,
// and a window loaded from that state is the same. Once the records before the
// gap are done, SPSO moves past the gap at once.
func TestWindowGapBehindAcquiredIsARange(t *testing.T) {
	now := time.Unix(1000, 0)
	lock := now.Add(time.Minute)
	const gapEnd = 100_000_000 // 100 M offsets compacted away
	w := newWindow(State{StartOffset: 0})
	w.acquireNew(0, 2, "a", lock, false)
	if got := w.acquireNew(gapEnd, gapEnd+1, "a", lock, false); len(got) != 2 || got[0] != gapEnd {
		t.Fatalf("acquired %v past the gap", got)
	}
	w.grow(gapEnd + 5) // three more, available
	if w.start != 0 || w.end != gapEnd+5 || w.size() != 8 {
		t.Fatalf("SPSO %d SPEO %d, %d records held; want 0, %d, 8", w.start, w.end, w.size(), gapEnd+5)
	}
	if r := w.at(50_000); r != nil {
		t.Fatalf("an offset of the gap is held: %+v", r)
	}
	if r := w.at(gapEnd + 1); r == nil || r.state != stateAcquired || r.owner != "a" {
		t.Fatalf("record past the gap: %+v", r)
	}
	if avail, acq, _, arch := w.counts(); avail != 3 || acq != 5 || arch != gapEnd-3 {
		t.Fatalf("counts: %d available, %d acquired, %d archived; want 3, 5, %d", avail, acq, arch, gapEnd-3)
	}
	var archived []Archived
	if code := w.acknowledge("a", 2, 4, []int8{AckAccept}, now, 5, &archived); code != kerr.InvalidRecordState.Code {
		t.Fatalf("acknowledging offsets of the gap: %d, want INVALID_RECORD_STATE", code)
	}
	if got := w.acquireAvailable("b", 10, lock, 5, &archived); len(got) != 3 || got[0] != gapEnd+2 {
		t.Fatalf("available records handed out: %v", got)
	}

	runs := w.runs()
	gap := Run{First: 3, Last: gapEnd - 1, State: stateArchived}
	if len(runs) != 3 || runs[1] != gap {
		t.Fatalf("stored runs %+v; want the gap as one run %+v", runs, gap)
	}
	st, err := decodeState(encodeState(State{StartOffset: w.start, Runs: runs}))
	if err != nil {
		t.Fatal(err)
	}
	w2 := newWindow(st)
	if w2.start != 0 || w2.end != gapEnd+5 || w2.size() != 8 || !reflect.DeepEqual(w2.runs(), runs) {
		t.Fatalf("loaded window: SPSO %d SPEO %d, %d held, runs %+v", w2.start, w2.end, w2.size(), w2.runs())
	}
	if r := w2.at(1); r == nil || r.state != stateAvailable || r.count != 1 {
		t.Fatalf("a record acquired before the load: %+v, want available, delivered once", r)
	}

	if code := w.acknowledge("a", 0, 2, []int8{AckAccept}, now, 5, &archived); code != 0 {
		t.Fatalf("accept: %d", code)
	}
	if w.start != gapEnd || w.size() != 5 || len(w.segs) != 1 {
		t.Fatalf("after the records before the gap were accepted: SPSO %d, %d held in %d segments; want %d, 5, 1", w.start, w.size(), len(w.segs), gapEnd)
	}
}
