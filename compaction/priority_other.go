//go:build !linux

package compaction

// lowerPriority does nothing off Linux, where threads have no nice value of
// their own.
func lowerPriority() {}
