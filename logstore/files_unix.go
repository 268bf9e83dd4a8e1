//go:build unix

package logstore

import "syscall"

// openFileLimit returns the process's soft RLIMIT_NOFILE, 1024 if unknown.
func openFileLimit() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 1024
	}
	return int(min(lim.Cur, 1<<30))
}
