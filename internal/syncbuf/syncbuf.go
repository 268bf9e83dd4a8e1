// Package syncbuf is a bytes.Buffer that several goroutines may write and read:
// a log sink for tests that watch what a node or a package logs.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it; the zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
