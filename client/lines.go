package client

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// splitKey splits line at the first sep into key and value. Without sep (or
// when line has no sep) the key is nil, which Kafka stores as a null key.
// A non-nil empty value stays non-nil, so it is stored as empty, not null.
func splitKey(line, sep []byte) (key, value []byte) {
	if len(sep) == 0 {
		return nil, line
	}
	k, v, ok := bytes.Cut(line, sep)
	if !ok {
		return nil, line
	}
	if v == nil {
		v = []byte{}
	}
	return k, v
}

// lineReader reads '\n'-terminated lines of any length.
type lineReader struct {
	r    *bufio.Reader
	long []byte // a line longer than r's buffer, assembled
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// next returns the next line without its '\n'; the slice is valid until the
// next call. A final line without '\n' is returned too; then io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	lr.long = lr.long[:0]
	for {
		b, err := lr.r.ReadSlice('\n')
		switch {
		case err == nil:
			b = b[:len(b)-1]
			if len(lr.long) == 0 {
				return b, nil
			}
			lr.long = append(lr.long, b...)
			return lr.long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.long = append(lr.long, b...)
		case errors.Is(err, io.EOF):
			if len(lr.long) == 0 && len(b) == 0 {
				return nil, io.EOF
			}
			lr.long = append(lr.long, b...)
			return lr.long, nil
		default:
			return nil, err
		}
	}
}

// slab hands out copies of lines carved from large shared buffers, so that
// producing a million short lines does not cost a million allocations. The
// copies stay valid for as long as they are referenced.
type slab struct{ buf []byte }

const (
	slabSize    = 1 << 20
	slabMaxLine = 64 << 10 // longer lines get their own allocation
)

func (s *slab) copy(b []byte) []byte {
	switch {
	case len(b) == 0:
		return []byte{} // empty, not nil: nil would be a null value
	case len(b) > slabMaxLine:
		return bytes.Clone(b)
	case len(b) > cap(s.buf)-len(s.buf):
		s.buf = make([]byte, 0, slabSize)
	}
	start := len(s.buf)
	s.buf = append(s.buf, b...)
	return s.buf[start:len(s.buf):len(s.buf)]
}
