package replication

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Dir is the absolute path of the folder holding the replicas (Config.Dir), the
// node's one log directory in Kafka's terms (DescribeLogDirs).
func (m *Manager) Dir() string {
	if abs, err := filepath.Abs(m.cfg.Dir); err == nil {
		return abs
	}
	return m.cfg.Dir
}

// DiskSpace reports the total bytes of the filesystem holding Dir and the bytes
// an unprivileged writer may still use there (KIP-827's total and usable bytes);
// ok is false when the filesystem cannot be asked (an in-memory one in tests).
func (m *Manager) DiskSpace() (total, usable int64, ok bool) {
	var st unix.Statfs_t
	if unix.Statfs(m.cfg.Dir, &st) != nil {
		return 0, 0, false
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize, true
}
