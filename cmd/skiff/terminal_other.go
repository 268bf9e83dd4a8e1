//go:build !linux

package main

import "os"

// isTerminal reports whether w is a character device; on Linux the check is
// exact (a termios query), here /dev/null also counts.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
