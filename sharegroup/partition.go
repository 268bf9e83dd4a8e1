package sharegroup

// One share-partition's in-flight window: the records between the start offset
// (SPSO) and the end offset (SPEO), each available, acquired by a member until a
// deadline, acknowledged or archived, with its delivery count. Everything below
// SPSO is done; everything at or above SPEO has not been delivered yet.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Acknowledge types of ShareFetch and ShareAcknowledge (KIP-932, KIP-1222).
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// inflight is one record of the window.
type inflight struct {
	state    uint8
	count    int16
	owner    string    // member holding the lock, while acquired
	deadline time.Time // lock end, while acquired
}

// Archived tells why a record was archived, for the dead-letter topic.
type Archived struct {
	Offset int64
	Count  int16
	Reason string // ReasonRejected or ReasonDeliveryLimit
}

// window is a share-partition's records; its owner (sharePartition) locks it.
type window struct {
	start int64 // SPSO
	end   int64 // SPEO
	// recs holds the records start..end-1 (recs[o-start]): one slice rather than an
	// entry per record keeps the scans of every fetch cheap and the heap small.
	recs     []inflight
	acquired int       // records in stateAcquired
	expiry   time.Time // no lock ends before it (a lower bound) while acquired > 0
}

func newWindow(st State) *window {
	w := &window{start: st.StartOffset, end: st.StartOffset}
	for _, r := range st.Runs {
		w.grow(r.Last + 1)
		for o := max(r.First, st.StartOffset); o <= r.Last; o++ {
			*w.at(o) = inflight{state: r.State, count: r.Count}
		}
	}
	w.advance()
	return w
}

// at returns the record at offset o, or nil outside the window.
func (w *window) at(o int64) *inflight {
	if o < w.start || o >= w.end {
		return nil
	}
	return &w.recs[o-w.start]
}

// grow moves SPEO up to end, the new records available and never delivered.
func (w *window) grow(end int64) {
	for ; w.end < end; w.end++ {
		w.recs = append(w.recs, inflight{})
	}
}

// lock acquires r for member until deadline.
func (w *window) lock(r *inflight, member string, deadline time.Time) {
	if w.acquired == 0 || deadline.Before(w.expiry) {
		w.expiry = deadline
	}
	r.state, r.owner, r.deadline = stateAcquired, member, deadline
	w.acquired++
}

// unlock ends r's lock, leaving it in state.
func (w *window) unlock(r *inflight, state uint8) {
	if r.state == stateAcquired {
		w.acquired--
	}
	r.state, r.owner, r.deadline = state, "", time.Time{}
}

// runs returns the window as stored: acquired records count as available.
func (w *window) runs() []Run {
	var out []Run
	for i := range w.recs {
		r, o := &w.recs[i], w.start+int64(i)
		if r.state == stateAvailable && r.count == 0 {
			continue
		}
		st := r.state
		if st == stateAcquired {
			st = stateAvailable
		}
		if n := len(out); n > 0 && out[n-1].Last == o-1 && out[n-1].State == st && out[n-1].Count == r.count {
			out[n-1].Last = o
			continue
		}
		out = append(out, Run{First: o, Last: o, State: st, Count: r.count})
	}
	return out
}

// advance moves SPSO past the records that are done.
func (w *window) advance() {
	n := 0
	for n < len(w.recs) && (w.recs[n].state == stateAcknowledged || w.recs[n].state == stateArchived) {
		n++
	}
	if n == 0 {
		return
	}
	w.start += int64(n)
	if n == len(w.recs) {
		w.recs = w.recs[:0] // reuse the array
		return
	}
	w.recs = w.recs[n:]
}

// expire returns acquired records whose lock has ended to available, or archives
// them once their delivery count reached limit. It reports whether anything changed.
func (w *window) expire(now time.Time, limit int16, archived *[]Archived) bool {
	if w.acquired == 0 || now.Before(w.expiry) {
		return false
	}
	changed := false
	var next time.Time
	for i := range w.recs {
		r := &w.recs[i]
		if r.state != stateAcquired {
			continue
		}
		if !now.Before(r.deadline) {
			w.release(w.start+int64(i), r, limit, archived)
			changed = true
		} else if next.IsZero() || r.deadline.Before(next) {
			next = r.deadline
		}
	}
	w.expiry = next
	if changed {
		w.advance()
	}
	return changed
}

func (w *window) release(o int64, r *inflight, limit int16, archived *[]Archived) {
	if r.count >= limit {
		w.unlock(r, stateArchived)
		*archived = append(*archived, Archived{Offset: o, Count: r.count, Reason: ReasonDeliveryLimit})
		return
	}
	w.unlock(r, stateAvailable)
}

// releaseMember returns every record member holds to available (a member that
// left or whose share session closed).
func (w *window) releaseMember(member string, limit int16, archived *[]Archived) bool {
	changed := false
	for i := range w.recs {
		if r := &w.recs[i]; r.state == stateAcquired && r.owner == member {
			w.release(w.start+int64(i), r, limit, archived)
			changed = true
		}
	}
	if changed {
		w.advance()
	}
	return changed
}

// holds reports whether member holds a record of the window.
func (w *window) holds(member string) bool {
	if w.acquired == 0 {
		return false
	}
	for i := range w.recs {
		if r := &w.recs[i]; r.state == stateAcquired && r.owner == member {
			return true
		}
	}
	return false
}

// acquireAvailable acquires up to max available records inside the window, in
// offset order, for member until deadline, and returns their offsets.
func (w *window) acquireAvailable(member string, max int, deadline time.Time) []int64 {
	var offs []int64
	for i := 0; i < len(w.recs) && len(offs) < max; i++ {
		r := &w.recs[i]
		if r.state != stateAvailable {
			continue
		}
		w.lock(r, member, deadline)
		r.count++
		offs = append(offs, w.start+int64(i))
	}
	return offs
}

// acquireNew takes the offsets [first, last] past the window's end into it,
// acquired by member, and archives [first, last] at once when skip is set (control
// batches, which no consumer sees).
func (w *window) acquireNew(first, last int64, member string, deadline time.Time, skip bool) []int64 {
	var offs []int64
	gap, from := w.end, max(first, w.end)
	w.grow(last + 1)
	for o := gap; o < from; o++ {
		// Offsets the log skips (compaction removed their batches): no record
		// to deliver, so they are done, not available.
		w.at(o).state = stateArchived
	}
	for o := from; o <= last; o++ {
		r := w.at(o)
		if skip {
			r.state = stateArchived
			continue
		}
		w.lock(r, member, deadline)
		r.count = 1
		offs = append(offs, o)
	}
	if skip || gap < from {
		w.advance()
	}
	return offs
}

// acknowledge applies one acknowledgement of member to [first, last]; types has
// one type for the whole range or one per offset. It checks the whole range first
// and changes nothing when a record is not acquired by member
// (INVALID_RECORD_STATE). RENEW extends the lock to deadline.
func (w *window) acknowledge(member string, first, last int64, types []int8, deadline time.Time, limit int16, archived *[]Archived) int16 {
	if first > last || (len(types) != 1 && int64(len(types)) != last-first+1) {
		return kerr.InvalidRequest.Code
	}
	typeAt := func(o int64) int8 {
		if len(types) == 1 {
			return types[0]
		}
		return types[o-first]
	}
	for o := first; o <= last; o++ {
		r := w.at(o)
		if t := typeAt(o); t < AckGap || t > AckRenew {
			return kerr.InvalidRequest.Code
		}
		if r == nil || r.state != stateAcquired || r.owner != member {
			return kerr.InvalidRecordState.Code
		}
	}
	for o := first; o <= last; o++ {
		r := w.at(o)
		switch typeAt(o) {
		case AckAccept, AckGap:
			w.unlock(r, stateAcknowledged)
		case AckRelease:
			w.release(o, r, limit, archived)
		case AckReject:
			w.unlock(r, stateArchived)
			*archived = append(*archived, Archived{Offset: o, Count: r.count, Reason: ReasonRejected})
		case AckRenew:
			r.deadline = deadline
			if deadline.Before(w.expiry) { // a group's lock duration may have shrunk
				w.expiry = deadline
			}
		}
	}
	w.advance()
	return 0
}

// counts returns how many records of the window are in each state.
func (w *window) counts() (available, acquired, acknowledged, archived int) {
	for i := range w.recs {
		switch w.recs[i].state {
		case stateAvailable:
			available++
		case stateAcquired:
			acquired++
		case stateAcknowledged:
			acknowledged++
		case stateArchived:
			archived++
		}
	}
	return
}

// earliestDeadline is the soonest lock end (at most: a lower bound), or zero when
// nothing is acquired.
func (w *window) earliestDeadline() time.Time {
	if w.acquired == 0 {
		return time.Time{}
	}
	return w.expiry
}
