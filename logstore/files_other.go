//go:build !unix

package logstore

// openFileLimit is a guess where there is no RLIMIT_NOFILE.
func openFileLimit() int { return 1024 }
