package sharegroup

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"

	"skiff/internal/batch"
)

// FuzzStateKey: decodeKey never panics, and a key it accepts is the encoding of
// what it returns, byte for byte (a key has one encoding, so compaction and the
// tail's map agree on which records are the same share-partition).
func FuzzStateKey(f *testing.F) {
	f.Add(encodeKey(Key{Group: "g", TopicID: [16]byte{1, 2}, Partition: 7}))
	f.Add(encodeKey(Key{}))
	f.Add([]byte{1, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := decodeKey(b)
		if err != nil {
			return
		}
		if got := encodeKey(k); !bytes.Equal(got, b) {
			t.Fatalf("key %x decodes to %+v, which encodes to %x", b, k, got)
		}
	})
}

// FuzzStateValue: decodeState never panics, on any bytes and on any body under a
// valid checksum (the fuzz target computes it, to get past the CRC); a state it
// accepts encodes to a value that decodes to the same state.
func FuzzStateValue(f *testing.F) {
	f.Add(encodeState(State{LeaderEpoch: 1, Seq: 2, StartOffset: 3, Runs: []Run{{First: 3, Last: 4, State: stateAcknowledged, Count: 1}}}), false)
	f.Add(encodeState(State{Deleted: true}), true)
	f.Add([]byte{1, 0, 0, 0, 0}, true)
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		if fixCRC && len(b) >= 5 {
			b = bytes.Clone(b)
			binary.BigEndian.PutUint32(b[1:], crc32.Checksum(b[5:], castagnoli))
		}
		st, err := decodeState(b)
		if err != nil {
			return
		}
		again, err := decodeState(encodeState(st))
		if err != nil || !reflect.DeepEqual(again, st) {
			t.Fatalf("state %+v re-encoded decodes to %+v, %v", st, again, err)
		}
	})
}

// FuzzGroupConfigRecord: the group config key and value decoders never panic; a
// key accepted is the encoding of its group, and a value accepted re-encodes to
// a value decoding to the same configs.
func FuzzGroupConfigRecord(f *testing.F) {
	f.Add(encodeConfigKey("g"), encodeConfigs(map[string]string{"share.auto.offset.reset": "earliest"}), false)
	f.Add([]byte{2, 0, 0}, []byte{1, 0, 0, 0, 0, '{', '}'}, true)
	f.Fuzz(func(t *testing.T, key, value []byte, fixCRC bool) {
		if g, ok := decodeConfigKey(key); ok && !bytes.Equal(encodeConfigKey(g), key) {
			t.Fatalf("config key %x decodes to %q, which encodes to %x", key, g, encodeConfigKey(g))
		}
		if fixCRC && len(value) >= 5 {
			value = bytes.Clone(value)
			binary.BigEndian.PutUint32(value[1:], crc32.Checksum(value[5:], castagnoli))
		}
		c, err := decodeConfigs(value)
		if err != nil {
			return
		}
		again, err := decodeConfigs(encodeConfigs(c))
		if err != nil || len(again) != len(c) {
			t.Fatalf("configs %v re-encoded decode to %v, %v", c, again, err)
		}
		for k, v := range c {
			if again[k] != v {
				t.Fatalf("configs %v re-encoded decode to %v", c, again)
			}
		}
	})
}

// splitRecords cuts fuzz input into records: key length u8, key, value length
// u8 (255: a tombstone), value.
func splitRecords(b []byte) (keys, values [][]byte) {
	for len(b) > 0 {
		n := int(b[0])
		b = b[1:]
		if n > len(b) {
			return
		}
		k := b[:n]
		b = b[n:]
		if len(b) == 0 {
			return
		}
		m := int(b[0])
		b = b[1:]
		var v []byte
		if m != 255 {
			if m > len(b) {
				return
			}
			v = b[:m]
			b = b[m:]
		}
		keys, values = append(keys, k), append(values, v)
	}
	return
}

// FuzzShareGroupRecords: the loader of share group records (types 10..14 in
// __consumer_offsets) never panics on any sequence of keys and values, and what
// it loads holds only members whose metadata record was read, each in the group
// its key names; re-encoding what was loaded and loading it again gives the same
// groups, members, epochs and subscriptions.
func FuzzShareGroupRecords(f *testing.F) {
	m := &member{id: "m", clientID: "c", host: "/h", rack: "r", epoch: 3, prevEpoch: 2,
		subscribed: []string{"a"}, assigned: map[[16]byte][]int32{{1}: {0, 1}}}
	var seed []byte
	for _, r := range append(memberRecords("g", m), groupEpochRecord("g", 3), targetMetaRecord("g", 3), batch.Record{Key: recordKey(recMember, "g", "x")}) {
		seed = append(seed, byte(len(r.Key)))
		seed = append(seed, r.Key...)
		if r.Value == nil {
			seed = append(seed, 255)
			continue
		}
		seed = append(seed, byte(len(r.Value)))
		seed = append(seed, r.Value...)
	}
	f.Add(seed)
	f.Add([]byte{4, 0, 10, 0, 1, 'g', 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, values := splitRecords(b)
		l := newLoader()
		for i := range keys {
			l.add(keys[i], values[i]) // an error skips the record, as the coordinator does
		}
		groups := l.finish()
		l2 := newLoader()
		for name, g := range groups {
			if g.name != name {
				t.Fatalf("group %q loaded under %q", g.name, name)
			}
			recs := []batch.Record{groupEpochRecord(name, g.epoch)}
			for id, m := range g.members {
				if m.id != id || !l.meta[m] {
					t.Fatalf("member %q of %q loaded as %q, metadata read %v", id, name, m.id, l.meta[m])
				}
				recs = append(recs, memberRecords(name, m)...)
			}
			for _, r := range recs {
				if err := l2.add(r.Key, r.Value); err != nil {
					t.Fatalf("a loaded group's own record %x does not load: %v", r.Key, err)
				}
			}
		}
		again := l2.finish()
		if len(again) != len(groups) {
			t.Fatalf("%d groups loaded again, want %d", len(again), len(groups))
		}
		for name, g := range groups {
			g2 := again[name]
			if g2 == nil || g2.epoch != g.epoch || len(g2.members) != len(g.members) {
				t.Fatalf("group %q loaded again as %+v, was %+v", name, g2, g)
			}
			for id, m := range g.members {
				m2 := g2.members[id]
				if m2 == nil || m2.epoch != m.epoch || m2.prevEpoch != m.prevEpoch || m2.clientID != m.clientID ||
					m2.host != m.host || m2.rack != m.rack || !reflect.DeepEqual(m2.subscribed, m.subscribed) ||
					len(m2.assigned) != len(m.assigned) {
					t.Fatalf("member %q of %q loaded again as %+v, was %+v", id, name, m2, m)
				}
			}
		}
	})
}
