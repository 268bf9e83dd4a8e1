package offsetsnap

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"skiff/internal/fileutil"
)

// WriteFile writes s to the file at path, replacing it atomically (mode 0640).
func WriteFile(path string, s *Snapshot) error {
	var buf bytes.Buffer
	if err := Write(&buf, s); err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	if err := fileutil.WriteFileAtomic(path, buf.Bytes(), 0o640); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadFile reads the snapshot file at path; a damaged file is a *CorruptError,
// returned as it is.
func ReadFile(path string) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	defer f.Close()
	s, err := Read(f)
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		return nil, fmt.Errorf("read snapshot %s: %w", path, err)
	}
	return s, err
}
