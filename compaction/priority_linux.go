package compaction

import "golang.org/x/sys/unix"

// lowerPriority makes the calling OS thread, which the caller has locked and
// never unlocks (so the thread ends with its goroutine and is not reused),
// cleanerNice steps nicer than it was (the node's own nice value, at most 19):
// the kernel then prefers the node's other threads and other processes
// (producers, consumers) to the cleaner when the CPUs are busy, and the cleaner
// runs at full speed when they are not. Relative, so that a node started with
// nice -10 (or 10) keeps its cleaner below itself, not at a fixed 5 above or
// below it. Best effort: an error leaves the priority as it was.
func lowerPriority() {
	tid := unix.Gettid()
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid) // the raw syscall's 20 - nice
	if err != nil {
		return
	}
	_ = unix.Setpriority(unix.PRIO_PROCESS, tid, min(20-prio+cleanerNice, 19))
}
