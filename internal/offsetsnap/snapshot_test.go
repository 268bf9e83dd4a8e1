package offsetsnap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"
)

func sample() *Snapshot {
	return &Snapshot{TakenAt: 1_700_000_000_123, Offsets: []Offset{
		{Group: "orders", Topic: "t", Partition: 0, Offset: 42, LeaderEpoch: 3, CommitTime: -1, Metadata: "m"},
		{Group: "orders", Topic: "t", Partition: 1, Offset: 0, LeaderEpoch: -1, CommitTime: 1_700_000_000_000},
		{Group: "été-😀", Topic: strings.Repeat("x", 249), Partition: 7, Offset: 1 << 40, LeaderEpoch: -1, CommitTime: -1, Metadata: strings.Repeat("z", 4096)},
	}}
}

func encode(t testing.TB, s *Snapshot) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	for _, s := range []*Snapshot{sample(), {TakenAt: 5}} {
		got, err := Read(bytes.NewReader(encode(t, s)))
		if err != nil {
			t.Fatal(err)
		}
		if got.TakenAt != s.TakenAt || len(got.Offsets) != len(s.Offsets) || (len(s.Offsets) > 0 && !reflect.DeepEqual(got.Offsets, s.Offsets)) {
			t.Fatalf("read %+v, wrote %+v", got, s)
		}
	}
}

// TestEveryFlippedByteRejected flips each bit of every byte of a snapshot in turn:
// every damaged file is refused with a CorruptError.
func TestEveryFlippedByteRejected(t *testing.T) {
	good := encode(t, &Snapshot{TakenAt: 9, Offsets: sample().Offsets[:2]})
	for i := range good {
		for bit := range 8 {
			b := append([]byte(nil), good...)
			b[i] ^= 1 << bit
			_, err := Read(bytes.NewReader(b))
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("byte %d bit %d flipped: err %v, want a CorruptError", i, bit, err)
			}
		}
	}
}

// TestTruncationRejected: every proper prefix of a snapshot is refused.
func TestTruncationRejected(t *testing.T) {
	good := encode(t, sample())
	for n := range len(good) {
		if _, err := Read(bytes.NewReader(good[:n])); err == nil {
			t.Fatalf("a %d-byte prefix of a %d-byte snapshot was accepted", n, len(good))
		}
	}
}

func TestCorruptionTable(t *testing.T) {
	good := encode(t, sample())
	reseal := func(b []byte) []byte { // fix the header CRC after editing the header
		binary.BigEndian.PutUint32(b[20:], crc32.Checksum(b[:20], castagnoli))
		return b
	}
	mutate := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name, want string
		b          []byte
	}{
		{"empty", "shorter than", nil},
		{"garbage", "not an offset snapshot", []byte(strings.Repeat("garbage!", 10))},
		{"version", "format version 2", mutate(func(b []byte) []byte { b[9] = 2; return reseal(b) })},
		{"reserved", "reserved", mutate(func(b []byte) []byte { b[11] = 1; return reseal(b) })},
		{"trailing bytes", "after the end record", append(append([]byte(nil), good...), 0)},
		{"no end record", "truncated", good[:len(good)-recordHead-endBodySize]},
		{"zeroed record", "length 0", mutate(func(b []byte) []byte {
			for i := headerSize; i < headerSize+64; i++ {
				b[i] = 0
			}
			return b
		})},
		{"huge length", "out of range", mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[headerSize:], 1<<31); return b })},
	} {
		_, err := Read(bytes.NewReader(tc.b))
		var ce *CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want a CorruptError saying %q", tc.name, err, tc.want)
		}
	}
	// A count that does not match, with valid checksums.
	s := sample()
	b := encode(t, s)
	end := b[len(b)-endBodySize:]
	binary.BigEndian.PutUint64(end[1:], 7)
	binary.BigEndian.PutUint32(b[len(b)-endBodySize-4:], crc32.Checksum(end, castagnoli))
	if _, err := Read(bytes.NewReader(b)); err == nil || !strings.Contains(err.Error(), "counts 7 offsets") {
		t.Errorf("wrong count: %v", err)
	}
}

// FuzzSnapshotReader feeds arbitrary bytes to Read. Invariants: Read never panics
// and never allocates more than MaxRecordBytes for a record; whatever it accepts is
// canonical: writing the snapshot it returned gives back exactly the input.
func FuzzSnapshotReader(f *testing.F) {
	f.Add(encode(f, sample()))
	f.Add(encode(f, &Snapshot{}))
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Read(bytes.NewReader(b))
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a CorruptError", err)
			}
			return
		}
		if again := encode(t, s); !bytes.Equal(again, b) {
			t.Fatalf("accepted input is not canonical: %x re-encodes as %x", b, again)
		}
	})
}
