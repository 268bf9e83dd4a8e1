package sharegroup

// One share-partition's in-flight window: the records between the start offset
// (SPSO) and the end offset (SPEO), each available, acquired by a member until a
// deadline, acknowledged or archived, with its delivery count. Everything below
// SPSO is done; everything at or above SPEO has not been delivered yet.

import (
	"sort"
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
	recs  map[int64]*inflight
}

func newWindow(st State) *window {
	w := &window{start: st.StartOffset, end: st.StartOffset, recs: make(map[int64]*inflight)}
	for _, r := range st.Runs {
		for o := max(r.First, st.StartOffset); o <= r.Last; o++ {
			w.recs[o] = &inflight{state: r.State, count: r.Count}
		}
		w.end = max(w.end, r.Last+1)
	}
	w.advance()
	return w
}

// runs returns the window as stored: acquired records count as available.
func (w *window) runs() []Run {
	offs := make([]int64, 0, len(w.recs))
	for o, r := range w.recs {
		if r.state != stateAvailable || r.count > 0 {
			offs = append(offs, o)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	var out []Run
	for _, o := range offs {
		r := w.recs[o]
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
	for w.start < w.end {
		r := w.recs[w.start]
		if r == nil || (r.state != stateAcknowledged && r.state != stateArchived) {
			return
		}
		delete(w.recs, w.start)
		w.start++
	}
}

// expire returns acquired records whose lock has ended to available, or archives
// them once their delivery count reached limit. It reports whether anything changed.
func (w *window) expire(now time.Time, limit int16, archived *[]Archived) bool {
	changed := false
	for o, r := range w.recs {
		if r.state == stateAcquired && !now.Before(r.deadline) {
			w.release(o, r, limit, archived)
			changed = true
		}
	}
	if changed {
		w.advance()
	}
	return changed
}

func (w *window) release(o int64, r *inflight, limit int16, archived *[]Archived) {
	r.owner, r.deadline = "", time.Time{}
	if r.count >= limit {
		r.state = stateArchived
		*archived = append(*archived, Archived{Offset: o, Count: r.count, Reason: ReasonDeliveryLimit})
		return
	}
	r.state = stateAvailable
}

// releaseMember returns every record member holds to available (a member that
// left or whose share session closed).
func (w *window) releaseMember(member string, limit int16, archived *[]Archived) bool {
	changed := false
	for o, r := range w.recs {
		if r.state == stateAcquired && r.owner == member {
			w.release(o, r, limit, archived)
			changed = true
		}
	}
	if changed {
		w.advance()
	}
	return changed
}

// acquireAvailable acquires up to max available records inside the window, in
// offset order, for member until deadline, and returns their offsets.
func (w *window) acquireAvailable(member string, max int, deadline time.Time) []int64 {
	var offs []int64
	for o := w.start; o < w.end && len(offs) < max; o++ {
		r := w.recs[o]
		if r == nil {
			r = &inflight{}
			w.recs[o] = r
		}
		if r.state != stateAvailable {
			continue
		}
		r.state, r.owner, r.deadline = stateAcquired, member, deadline
		r.count++
		offs = append(offs, o)
	}
	return offs
}

// acquireNew takes the offsets [first, last] past the window's end into it,
// acquired by member, and archives [first, last] at once when skip is set (control
// batches, which no consumer sees).
func (w *window) acquireNew(first, last int64, member string, deadline time.Time, skip bool) []int64 {
	var offs []int64
	for o := max(first, w.end); o <= last; o++ {
		if skip {
			w.recs[o] = &inflight{state: stateArchived}
			continue
		}
		w.recs[o] = &inflight{state: stateAcquired, owner: member, deadline: deadline, count: 1}
		offs = append(offs, o)
	}
	w.end = max(w.end, last+1)
	if skip {
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
		r := w.recs[o]
		if t := typeAt(o); t < AckGap || t > AckRenew {
			return kerr.InvalidRequest.Code
		}
		if r == nil || r.state != stateAcquired || r.owner != member {
			return kerr.InvalidRecordState.Code
		}
	}
	for o := first; o <= last; o++ {
		r := w.recs[o]
		switch typeAt(o) {
		case AckAccept, AckGap:
			r.state, r.owner, r.deadline = stateAcknowledged, "", time.Time{}
		case AckRelease:
			w.release(o, r, limit, archived)
		case AckReject:
			r.state, r.owner, r.deadline = stateArchived, "", time.Time{}
			*archived = append(*archived, Archived{Offset: o, Count: r.count, Reason: ReasonRejected})
		case AckRenew:
			r.deadline = deadline
		}
	}
	w.advance()
	return 0
}

// counts returns how many records of the window are in each state.
func (w *window) counts() (available, acquired, acknowledged, archived int) {
	for _, r := range w.recs {
		switch r.state {
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

// earliestDeadline is the soonest lock end, or zero when nothing is acquired.
func (w *window) earliestDeadline() time.Time {
	var t time.Time
	for _, r := range w.recs {
		if r.state == stateAcquired && (t.IsZero() || r.deadline.Before(t)) {
			t = r.deadline
		}
	}
	return t
}
