package embedetcd

import (
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
)

// repetitive lists the etcd client's log lines that repeat as fast as it retries.
// Its retry interceptor logs a warning for every failed attempt of a request,
// 25 ms apart, and a member without a leader (a node cut off from its cluster)
// fails them all: some 40 lines a second for as long as the cut lasts. Skiff says
// what that means once, in its own words ("broker session in doubt", then
// "confirmed" or "restored"), so of each of these lines the first is logged at
// its level and then at most one per repeatEvery, with how many were held back
// since (at debug level).
var repetitive = map[string]bool{
	"retrying of unary invoker failed": true,
}

// repeatEvery is the least time between two lines of one repetitive message at
// their own level.
const repeatEvery = 10 * time.Second

// repeats limits the repetitive lines of one logger (and the loggers made from
// it with With).
type repeats struct {
	mu   sync.Mutex
	last map[string]time.Time // when each message was last logged at its level
	held map[string]int       // how many were demoted since
}

func newRepeats() *repeats {
	return &repeats{last: map[string]time.Time{}, held: map[string]int{}}
}

// admit reports whether an entry logged at ent.Time keeps its level, and if so
// how many of the same message were demoted since the last one that did. Entries
// of other messages always keep theirs.
func (r *repeats) admit(ent zapcore.Entry) (keep bool, held int) {
	if !repetitive[ent.Message] {
		return true, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.last[ent.Message]; ok && ent.Time.Sub(last) < repeatEvery {
		r.held[ent.Message]++
		return false, 0
	}
	r.last[ent.Message] = ent.Time
	held = r.held[ent.Message]
	r.held[ent.Message] = 0
	return true, held
}
