package offsets

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// FuzzDecodeGroupOffset checks the committed-offset records of the group
// keyspace (tag 0x03, docs/format/meta-index.md). Invariants:
//   - decodeGroupOffset never panics on any value and any key that has the
//     5-byte tag and shard (it does not look at them: the iterator's bounds
//     guarantee them; the target pads a shorter key);
//   - what it accepts re-encodes to the same bytes: offsetKey of the decoded
//     group, topic and partition (in the shard the key names) is the key, and
//     encodeGroupOffset is the value. Names of 32768 to 65535 bytes are the
//     exception: they decode, but no key holds them, as offsetKey refuses them
//     (ErrGroupKey);
//   - an offset built from the other arguments and stored under its key decodes
//     to itself, unless a name is too long for a key (ErrGroupKey).
//
// Seeds are records SetOffset writes (empty and non-ASCII names, names that are
// prefixes of each other, metadata), also truncated and lengthened.
func FuzzDecodeGroupOffset(f *testing.F) {
	for _, o := range []GroupOffset{
		{Group: "g", Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: 2, Metadata: "m", CommitTimestamp: 10, WrittenAt: 11},
		{Group: "", Topic: "", Partition: -1, Offset: -1, LeaderEpoch: -1},
		{Group: "gg", Topic: "t\x00t", Partition: math.MaxInt32, Offset: math.MaxInt64, Metadata: "ünïcode", CommitTimestamp: -1, WrittenAt: math.MinInt64},
	} {
		k, err := (&GroupShard{partition: 7}).offsetKey(o.Group, o.Topic, o.Partition)
		if err != nil {
			f.Fatal(err)
		}
		v := encodeGroupOffset(o)
		f.Add(k, v, o.Group, o.Topic, o.Partition, o.Offset, o.Metadata)
		f.Add(k[:len(k)-1], v[:len(v)-1], o.Topic, o.Group, o.Partition+1, o.Offset-1, "")
		f.Add(append(k, 0), append(v, 0), o.Group+"x", o.Topic, o.Partition, o.Offset, o.Metadata+o.Metadata)
	}
	f.Fuzz(func(t *testing.T, k, v []byte, group, topic string, partition int32, offset int64, metadata string) {
		if len(k) < 5 {
			k = append(make([]byte, 5-len(k)), k...)
		}
		if o, err := decodeGroupOffset(k, v); err == nil {
			s := &GroupShard{partition: int32(binary.BigEndian.Uint32(k[1:]))}
			key, err := s.offsetKey(o.Group, o.Topic, o.Partition)
			if errors.Is(err, ErrGroupKey) && max(len(o.Group), len(o.Topic)) > math.MaxInt16 {
				key, err = k, nil // the exception above
			}
			if err != nil || !bytes.Equal(key[1:], k[1:]) {
				t.Fatalf("key %x decodes to %+v, which encodes to %x (%v)", k, o, key, err)
			}
			if got := encodeGroupOffset(o); !bytes.Equal(got, v) {
				t.Fatalf("value %x decodes to %+v, which encodes to %x", v, o, got)
			}
		}

		o := GroupOffset{Group: group, Topic: topic, Partition: partition, Offset: offset, LeaderEpoch: partition ^ 1,
			Metadata: metadata, CommitTimestamp: offset ^ 2, WrittenAt: -offset}
		key, err := (&GroupShard{partition: partition}).offsetKey(group, topic, partition)
		if len(group) > math.MaxInt16 || len(topic) > math.MaxInt16 {
			if !errors.Is(err, ErrGroupKey) {
				t.Fatalf("offsetKey of a %d/%d-byte group/topic: %v, want ErrGroupKey", len(group), len(topic), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, err := decodeGroupOffset(key, encodeGroupOffset(o)); err != nil || got != o {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", o, got, err)
		}
	})
}

// TestGroupOffsetNameLimit is the exception FuzzDecodeGroupOffset allows (a
// fuzz seed that large would slow it twentyfold): offsetKey refuses a name of
// 32768 bytes, and the decoder reads one.
func TestGroupOffsetNameLimit(t *testing.T) {
	long := strings.Repeat("g", math.MaxInt16+1)
	if _, err := (&GroupShard{}).offsetKey(long, "t", 0); !errors.Is(err, ErrGroupKey) {
		t.Fatalf("offsetKey of a %d-byte group: %v, want ErrGroupKey", len(long), err)
	}
	k := binary.BigEndian.AppendUint16([]byte{tagGroupOffsets, 0, 0, 0, 7}, uint16(len(long)))
	k = binary.BigEndian.AppendUint32(append(append(k, long...), 0, 1, 't'), 1)
	if o, err := decodeGroupOffset(k, encodeGroupOffset(GroupOffset{})); err != nil || o.Group != long || o.Topic != "t" || o.Partition != 1 {
		t.Fatalf("decode of a key with a %d-byte group: %v, %v", len(long), err, o.Topic)
	}
}

// FuzzGroupMetadata checks the group metadata records (tag 0x04) as Groups reads
// them from Pebble: the value is written raw under a group's key, then read back.
// Invariants:
//   - Groups never panics;
//   - a value shorter than its 8-byte timestamp is an error, and nothing is
//     reported;
//   - otherwise the group is reported once, with its name, and SetGroup of what
//     was reported writes exactly that key and value.
//
// Seeds are values SetGroup writes (empty and non-empty record values) and
// values too short to hold the timestamp.
func FuzzGroupMetadata(f *testing.F) {
	seed := func(group string, value []byte, writtenAt int64) {
		b := (&GroupShard{partition: 3}).NewBatch()
		b.SetGroup(group, value, writtenAt)
		f.Add(group, b.ops[0].value, int32(3))
	}
	seed("g", []byte("meta-g"), 99)
	seed("", nil, -1)
	seed("group\x00with\xffbytes", bytes.Repeat([]byte{0, 1, 2}, 100), math.MaxInt64)
	f.Add("short", []byte{1, 2, 3, 4, 5, 6, 7}, int32(0))
	f.Add("empty", []byte{}, int32(-1))

	// A fresh database every 256 inputs: each input leaves a tombstone in the
	// memtable, and Groups' scan over a growing pile of them made every run
	// slower, until minimizing one input took the whole -fuzztime.
	var d *DB
	runs := 0
	f.Cleanup(func() {
		if d != nil {
			d.Close()
		}
	})
	f.Fuzz(func(t *testing.T, group string, v []byte, shard int32) {
		if runs%256 == 0 {
			if d != nil {
				d.Close()
			}
			var err error
			if d, err = Open("db", Options{FS: vfs.NewMem()}); err != nil {
				t.Fatal(err)
			}
		}
		runs++
		s := d.GroupShard(shard)
		k := s.metaKey(group)
		if err := d.with(func(db *pebble.DB) error { return db.Set(k, v, pebble.NoSync) }); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := d.with(func(db *pebble.DB) error { return db.Delete(k, pebble.NoSync) }); err != nil {
				t.Fatal(err)
			}
		}()
		var reported []GroupBatch
		err := s.Groups(func(g string, value []byte, writtenAt int64) error {
			b := s.NewBatch()
			b.SetGroup(g, value, writtenAt)
			reported = append(reported, *b)
			return nil
		})
		if len(v) < 8 {
			if err == nil || len(reported) != 0 || !strings.Contains(err.Error(), "bad group metadata value") {
				t.Fatalf("a %d-byte value: %v, %d groups reported", len(v), err, len(reported))
			}
			return
		}
		if err != nil || len(reported) != 1 {
			t.Fatalf("Groups: %v, %d groups reported, want 1", err, len(reported))
		}
		if op := reported[0].ops[0]; !bytes.Equal(op.key, k) || !bytes.Equal(op.value, v) {
			t.Fatalf("group %q value %x read back as key %x value %x", group, v, op.key, op.value)
		}
	})
}
