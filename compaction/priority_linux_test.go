package compaction

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLowerPriorityRelative: a cleaner thread ends cleanerNice steps nicer than
// the thread that started it, whatever that one's nice value.
func TestLowerPriorityRelative(t *testing.T) {
	for _, start := range []int{0, 3, 17} {
		got := make(chan [2]int, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			tid := unix.Gettid()
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, start); err != nil {
				got <- [2]int{-100, -100}
				return
			}
			before, _ := unix.Getpriority(unix.PRIO_PROCESS, tid)
			lowerPriority()
			after, _ := unix.Getpriority(unix.PRIO_PROCESS, tid)
			got <- [2]int{20 - before, 20 - after}
		}()
		g := <-got
		if g[0] == -100 {
			t.Fatalf("setpriority %d failed", start)
		}
		if want := min(start+cleanerNice, 19); g[0] != start || g[1] != want {
			t.Errorf("nice %d: lowerPriority made it %d, want %d", g[0], g[1], want)
		}
	}
}
