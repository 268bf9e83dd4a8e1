// Package offsetsnap reads and writes offset snapshot files: the committed offsets
// of consumer groups, as `skiff offsets snapshot` takes them through the Kafka API
// and `skiff offsets restore` loads them. The format is described in
// docs/format/offsets-snapshot.md:
//
//	header  magic "SKIFFOFS" | version u16 | reserved u16 | taken at i64 ms | CRC32C u32
//	record  length u32 | CRC32C u32 of the body | body (length bytes)
//	        body: type u8, then for type 1 (offset): group, topic (u16 length + bytes),
//	        partition i32, offset i64, leader epoch i32, commit time i64 ms,
//	        metadata (u32 length + bytes); for type 2 (end, last): record count u64
//
// All integers are big endian. A file is valid only whole: a bad magic, version or
// checksum, a truncated record, a missing end record, a count that does not match,
// or bytes after the end record are all refused, so a damaged file never restores
// part of itself.
package offsetsnap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// Format constants; they must not change (a new layout gets a new Version).
const (
	Magic       = "SKIFFOFS"
	Version     = 1
	headerSize  = 24
	recordHead  = 8 // length, CRC
	typeOffset  = 1
	typeEnd     = 2
	endBodySize = 9
	// MaxRecordBytes bounds one record body (a group name is at most 32767 bytes,
	// a topic 249, commit metadata a few KiB).
	MaxRecordBytes = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Offset is one committed offset of a group.
type Offset struct {
	Group       string
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32 // -1: unknown
	// CommitTime is when the offset was committed (Unix ms), -1 when unknown: the
	// Kafka API does not report commit times, so snapshots taken through it carry -1.
	CommitTime int64
	Metadata   string
}

// Snapshot is the content of a snapshot file.
type Snapshot struct {
	// TakenAt is when the snapshot was taken (Unix ms).
	TakenAt int64
	Offsets []Offset
}

// CorruptError is a snapshot file that does not check out: Pos is the byte
// position of the header or record at fault.
type CorruptError struct {
	Pos    int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("offsetsnap: corrupt snapshot at byte %d: %s", e.Pos, e.Reason)
}

// ErrTooLong: a name or metadata does not fit its length field.
var ErrTooLong = errors.New("offsetsnap: name or metadata too long")

// Write writes s to w in the snapshot format.
func Write(w io.Writer, s *Snapshot) error {
	bw := bufio.NewWriter(w)
	h := make([]byte, 0, headerSize)
	h = append(h, Magic...)
	h = binary.BigEndian.AppendUint16(h, Version)
	h = binary.BigEndian.AppendUint16(h, 0)
	h = binary.BigEndian.AppendUint64(h, uint64(s.TakenAt))
	h = binary.BigEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
	bw.Write(h)
	var body []byte
	for _, o := range s.Offsets {
		if len(o.Group) > math.MaxUint16 || len(o.Topic) > math.MaxUint16 || len(o.Metadata) > MaxRecordBytes/2 {
			return fmt.Errorf("%w: group %.40q topic %.40q", ErrTooLong, o.Group, o.Topic)
		}
		body = append(body[:0], typeOffset)
		body = binary.BigEndian.AppendUint16(body, uint16(len(o.Group)))
		body = append(body, o.Group...)
		body = binary.BigEndian.AppendUint16(body, uint16(len(o.Topic)))
		body = append(body, o.Topic...)
		body = binary.BigEndian.AppendUint32(body, uint32(o.Partition))
		body = binary.BigEndian.AppendUint64(body, uint64(o.Offset))
		body = binary.BigEndian.AppendUint32(body, uint32(o.LeaderEpoch))
		body = binary.BigEndian.AppendUint64(body, uint64(o.CommitTime))
		body = binary.BigEndian.AppendUint32(body, uint32(len(o.Metadata)))
		body = append(body, o.Metadata...)
		writeRecord(bw, body)
	}
	body = append(body[:0], typeEnd)
	body = binary.BigEndian.AppendUint64(body, uint64(len(s.Offsets)))
	writeRecord(bw, body)
	return bw.Flush()
}

func writeRecord(w *bufio.Writer, body []byte) {
	var h [recordHead]byte
	binary.BigEndian.PutUint32(h[0:], uint32(len(body)))
	binary.BigEndian.PutUint32(h[4:], crc32.Checksum(body, castagnoli))
	w.Write(h[:])
	w.Write(body)
}

// Read reads a whole snapshot from r and checks every checksum, the record count
// and the end of the file. Any damage is a *CorruptError; nothing is returned then.
func Read(r io.Reader) (*Snapshot, error) {
	br := bufio.NewReader(r)
	var pos int64
	corrupt := func(at int64, format string, args ...any) error {
		return &CorruptError{Pos: at, Reason: fmt.Sprintf(format, args...)}
	}
	h := make([]byte, headerSize)
	if n, err := io.ReadFull(br, h); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, corrupt(0, "file of %d bytes is shorter than the %d-byte header", n, headerSize)
		}
		return nil, err
	}
	if string(h[:8]) != Magic {
		return nil, corrupt(0, "not an offset snapshot (magic %q, want %q)", h[:8], Magic)
	}
	if got := crc32.Checksum(h[:20], castagnoli); got != binary.BigEndian.Uint32(h[20:]) {
		return nil, corrupt(0, "header checksum mismatch")
	}
	if v := binary.BigEndian.Uint16(h[8:]); v != Version {
		return nil, corrupt(8, "format version %d; this skiff reads version %d", v, Version)
	}
	if binary.BigEndian.Uint16(h[10:]) != 0 {
		return nil, corrupt(10, "reserved header bytes are not zero")
	}
	s := &Snapshot{TakenAt: int64(binary.BigEndian.Uint64(h[12:]))}
	pos = headerSize
	var rh [recordHead]byte
	var body []byte
	for {
		at := pos
		if _, err := io.ReadFull(br, rh[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, corrupt(at, "truncated: the file ends before its end record")
			}
			return nil, err
		}
		n := binary.BigEndian.Uint32(rh[0:])
		if n == 0 || n > MaxRecordBytes {
			return nil, corrupt(at, "record length %d out of range", n)
		}
		if cap(body) < int(n) {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, corrupt(at, "truncated record of %d bytes", n)
			}
			return nil, err
		}
		pos += recordHead + int64(n)
		if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(rh[4:]) {
			return nil, corrupt(at, "record checksum mismatch")
		}
		switch body[0] {
		case typeOffset:
			o, ok := parseOffset(body[1:])
			if !ok {
				return nil, corrupt(at, "malformed offset record")
			}
			s.Offsets = append(s.Offsets, o)
		case typeEnd:
			if len(body) != endBodySize {
				return nil, corrupt(at, "malformed end record")
			}
			if count := binary.BigEndian.Uint64(body[1:]); count != uint64(len(s.Offsets)) {
				return nil, corrupt(at, "end record counts %d offsets, the file holds %d", count, len(s.Offsets))
			}
			if _, err := br.ReadByte(); err == nil {
				return nil, corrupt(pos, "bytes after the end record")
			} else if !errors.Is(err, io.EOF) {
				return nil, err
			}
			return s, nil
		default:
			return nil, corrupt(at, "unknown record type %d", body[0])
		}
	}
}

func parseOffset(b []byte) (Offset, bool) {
	var o Offset
	str16 := func() (string, bool) {
		if len(b) < 2 {
			return "", false
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			return "", false
		}
		s := string(b[2 : 2+n])
		b = b[2+n:]
		return s, true
	}
	var ok bool
	if o.Group, ok = str16(); !ok {
		return o, false
	}
	if o.Topic, ok = str16(); !ok {
		return o, false
	}
	if len(b) < 4+8+4+8+4 {
		return o, false
	}
	o.Partition = int32(binary.BigEndian.Uint32(b))
	o.Offset = int64(binary.BigEndian.Uint64(b[4:]))
	o.LeaderEpoch = int32(binary.BigEndian.Uint32(b[12:]))
	o.CommitTime = int64(binary.BigEndian.Uint64(b[16:]))
	n := binary.BigEndian.Uint32(b[24:])
	b = b[28:]
	if uint64(n) != uint64(len(b)) {
		return o, false
	}
	o.Metadata = string(b)
	return o, true
}
