package compaction

import "golang.org/x/sys/unix"

// lowerPriority gives the calling OS thread, which the caller has locked and
// never unlocks (so the thread ends with its goroutine and is not reused), the
// nice value cleanerNice: the kernel then prefers the node's other threads and
// other processes (producers, consumers) to the cleaner when the CPUs are busy,
// and the cleaner runs at full speed when they are not. Best effort: an error
// leaves the priority as it was.
func lowerPriority() { _ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), cleanerNice) }
