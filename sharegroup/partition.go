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
	// segs hold the records start..end-1 in offset order, in segments of
	// consecutive offsets (one slice each rather than an entry per record keeps
	// the scans of every fetch cheap and the heap small). The offsets between two
	// segments are a gap: offsets the log skips (compaction removed their
	// batches), archived, held as a range rather than one entry per offset. The
	// first segment starts at SPSO (it may be empty, its array kept for reuse).
	segs     []segment
	acquired int       // records in stateAcquired
	expiry   time.Time // no lock ends before it (a lower bound) while acquired > 0
}

// segment is a run of consecutive offsets of the window, from first.
type segment struct {
	first int64
	recs  []inflight
}

func (s *segment) end() int64 { return s.first + int64(len(s.recs)) }

func newWindow(st State) *window {
	w := &window{start: st.StartOffset, end: st.StartOffset}
	for _, r := range st.Runs {
		if r.Last < w.end {
			continue
		}
		if r.State == stateArchived && r.Count == 0 {
			// Never delivered and done: a gap (or control records), kept as a range.
			w.grow(r.First)
			w.skip(r.Last + 1)
			continue
		}
		w.grow(r.Last + 1)
		for o := max(r.First, w.start); o <= r.Last; o++ {
			*w.at(o) = inflight{state: r.State, count: r.Count}
		}
	}
	w.advance()
	return w
}

// at returns the record at offset o, or nil outside the window or in a gap.
func (w *window) at(o int64) *inflight {
	if o < w.start || o >= w.end {
		return nil
	}
	// The segment holding o: the last one starting at or below it (usually the
	// first of one or two).
	i := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].first > o }) - 1
	if i < 0 || o >= w.segs[i].end() {
		return nil
	}
	return &w.segs[i].recs[o-w.segs[i].first]
}

// size is how many records the window holds one by one (not those of gaps).
func (w *window) size() int {
	n := 0
	for i := range w.segs {
		n += len(w.segs[i].recs)
	}
	return n
}

// grow moves SPEO up to end, the new records available and never delivered.
func (w *window) grow(end int64) {
	if w.end >= end {
		return
	}
	if n := len(w.segs); n == 0 || w.segs[n-1].end() != w.end {
		w.segs = append(w.segs, segment{first: w.end})
	}
	last := &w.segs[len(w.segs)-1]
	for ; w.end < end; w.end++ {
		last.recs = append(last.recs, inflight{})
	}
}

// skip moves SPEO up to end over a gap: offsets with no record, done.
func (w *window) skip(end int64) {
	if w.end >= end {
		return
	}
	if n := len(w.segs); n > 0 && len(w.segs[n-1].recs) == 0 {
		w.segs[n-1].first = end // an empty segment moves past the gap
	}
	w.end = end
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

// runs returns the window as stored: acquired records count as available, a gap
// is one run of archived offsets never delivered.
func (w *window) runs() []Run {
	var out []Run
	add := func(first, last int64, st uint8, count int16) {
		if n := len(out); n > 0 && out[n-1].Last == first-1 && out[n-1].State == st && out[n-1].Count == count {
			out[n-1].Last = last
			return
		}
		out = append(out, Run{First: first, Last: last, State: st, Count: count})
	}
	next := w.start
	for si := range w.segs {
		sg := &w.segs[si]
		if len(sg.recs) == 0 {
			continue
		}
		if sg.first > next {
			add(next, sg.first-1, stateArchived, 0)
		}
		for i := range sg.recs {
			r, o := &sg.recs[i], sg.first+int64(i)
			if r.state == stateAvailable && r.count == 0 {
				continue
			}
			st := r.state
			if st == stateAcquired {
				st = stateAvailable
			}
			add(o, o, st, r.count)
		}
		next = sg.end()
	}
	if next < w.end {
		add(next, w.end-1, stateArchived, 0)
	}
	return out
}

// advance moves SPSO past the records that are done, and past the gaps after
// them.
func (w *window) advance() {
	for len(w.segs) > 0 {
		sg := &w.segs[0]
		n := 0
		for n < len(sg.recs) && (sg.recs[n].state == stateAcknowledged || sg.recs[n].state == stateArchived) {
			n++
		}
		if n < len(sg.recs) {
			sg.first += int64(n)
			sg.recs = sg.recs[n:]
			w.start = sg.first
			return
		}
		if len(w.segs) == 1 {
			// Everything is done: keep the array for the records to come.
			*sg = segment{first: w.end, recs: sg.recs[:0]}
			break
		}
		w.segs = w.segs[1:]
	}
	w.start = w.end
}

// expire returns acquired records whose lock has ended to available, or archives
// them once their delivery count reached limit. It reports whether anything changed.
func (w *window) expire(now time.Time, limit int16, archived *[]Archived) bool {
	if w.acquired == 0 || now.Before(w.expiry) {
		return false
	}
	changed := false
	var next time.Time
	for si := range w.segs {
		sg := &w.segs[si]
		for i := range sg.recs {
			r := &sg.recs[i]
			if r.state != stateAcquired {
				continue
			}
			if !now.Before(r.deadline) {
				w.release(sg.first+int64(i), r, limit, archived)
				changed = true
			} else if next.IsZero() || r.deadline.Before(next) {
				next = r.deadline
			}
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
	for si := range w.segs {
		sg := &w.segs[si]
		for i := range sg.recs {
			if r := &sg.recs[i]; r.state == stateAcquired && r.owner == member {
				w.release(sg.first+int64(i), r, limit, archived)
				changed = true
			}
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
	for si := range w.segs {
		for i := range w.segs[si].recs {
			if r := &w.segs[si].recs[i]; r.state == stateAcquired && r.owner == member {
				return true
			}
		}
	}
	return false
}

// acquireAvailable acquires up to max available records inside the window, in
// offset order, for member until deadline, and returns their offsets. A record
// already delivered limit times is archived instead (adding to archived): it was
// acquired when its leader died, whose lock ended with it (the stored state keeps
// it available with its count), or the group's limit was lowered since.
func (w *window) acquireAvailable(member string, max int, deadline time.Time, limit int16, archived *[]Archived) []int64 {
	var offs []int64
	done := false
	for si := 0; si < len(w.segs) && len(offs) < max; si++ {
		sg := &w.segs[si]
		for i := 0; i < len(sg.recs) && len(offs) < max; i++ {
			r := &sg.recs[i]
			if r.state != stateAvailable {
				continue
			}
			if r.count >= limit {
				r.state, done = stateArchived, true
				*archived = append(*archived, Archived{Offset: sg.first + int64(i), Count: r.count, Reason: ReasonDeliveryLimit})
				continue
			}
			w.lock(r, member, deadline)
			r.count++
			offs = append(offs, sg.first+int64(i))
		}
	}
	if done {
		w.advance()
	}
	return offs
}

// acquireNew takes the offsets [first, last] past the window's end into it,
// acquired by member, and archives [first, last] at once when skip is set (control
// batches, which no consumer sees).
func (w *window) acquireNew(first, last int64, member string, deadline time.Time, skip bool) []int64 {
	var offs []int64
	gap, from := w.end, max(first, w.end)
	if from > last {
		return nil
	}
	// Offsets the log skips (compaction removed their batches): no record to
	// deliver, so they are done, not available; a gap, however long, is a range.
	w.skip(from)
	w.grow(last + 1)
	sg := &w.segs[len(w.segs)-1] // grow made [from, last] the end of the last segment
	for o := from; o <= last; o++ {
		r := &sg.recs[o-sg.first]
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

// relock restarts, to deadline, the locks member holds on the offsets of rs that
// have not ended at now, and returns the runs of those offsets (with their
// counts): the others are no longer member's. A later deadline keeps expiry a
// lower bound.
func (w *window) relock(member string, rs []AcquiredRange, now, deadline time.Time) []AcquiredRange {
	var out []AcquiredRange
	for _, ar := range rs {
		for o := ar.First; o <= ar.Last; o++ {
			r := w.at(o)
			if r == nil || r.state != stateAcquired || r.owner != member || !now.Before(r.deadline) {
				continue
			}
			r.deadline = deadline
			if n := len(out); n > 0 && out[n-1].Last == o-1 && out[n-1].Count == r.count {
				out[n-1].Last = o
				continue
			}
			out = append(out, AcquiredRange{First: o, Last: o, Count: r.count})
		}
	}
	return out
}

// counts returns how many records of the window are in each state (the offsets
// of gaps are archived).
func (w *window) counts() (available, acquired, acknowledged, archived int) {
	for si := range w.segs {
		for i := range w.segs[si].recs {
			switch w.segs[si].recs[i].state {
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
	}
	archived += int(w.end-w.start) - w.size()
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
