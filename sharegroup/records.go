package sharegroup

// The records of share group membership in the group's partition of
// __consumer_offsets, Kafka's KIP-932 formats (docs/format/offsets.md, "Share
// groups"). A key is the record type (int16) and the group id, and the member id
// for per-member records; a value is version 0 of Kafka's flexible encoding. A
// null value deletes.
//
//	type 10  ShareGroupMemberMetadata           rack, client, host, subscription
//	type 11  ShareGroupMetadata                 group epoch
//	type 12  ShareGroupTargetAssignmentMetadata assignment epoch
//	type 13  ShareGroupTargetAssignmentMember   the member's target partitions
//	type 14  ShareGroupCurrentMemberAssignment  member epoch, previous epoch, state, partitions
//
// Types 9 and 15 (partition metadata, state partition metadata) are neither
// written nor needed. Record types and layouts are Kafka's and must not change.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"

	"skiff/internal/batch"
)

// Record types (the key's version field), Kafka's.
const (
	recMember     = 10
	recGroup      = 11
	recTargetMeta = 12
	recTarget     = 13
	recCurrent    = 14
)

// memberStable is Kafka's MemberState STABLE: a share member is always
// reconciled (it is given its assignment at once).
const memberStable = 0

func recordKey(typ int16, group, member string) []byte {
	k := kbin.AppendInt16(nil, typ)
	k = kbin.AppendString(k, group)
	if typ == recMember || typ == recTarget || typ == recCurrent {
		k = kbin.AppendString(k, member)
	}
	return k
}

func groupEpochRecord(group string, epoch int32) batch.Record {
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, epoch)
	v = kbin.AppendUvarint(v, 0)
	return batch.Record{Key: recordKey(recGroup, group, ""), Value: v}
}

func targetMetaRecord(group string, epoch int32) batch.Record {
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, epoch)
	v = kbin.AppendUvarint(v, 0)
	return batch.Record{Key: recordKey(recTargetMeta, group, ""), Value: v}
}

func memberRecord(group string, m *member) batch.Record {
	v := kbin.AppendInt16(nil, 0)
	var rack *string
	if m.rack != "" {
		rack = &m.rack
	}
	v = kbin.AppendCompactNullableString(v, rack)
	v = kbin.AppendCompactString(v, m.clientID)
	v = kbin.AppendCompactString(v, m.host)
	v = kbin.AppendCompactArrayLen(v, len(m.subscribed))
	for _, t := range m.subscribed {
		v = kbin.AppendCompactString(v, t)
	}
	v = kbin.AppendUvarint(v, 0)
	return batch.Record{Key: recordKey(recMember, group, m.id), Value: v}
}

func targetRecord(group string, m *member) batch.Record {
	v := kbin.AppendInt16(nil, 0)
	v = appendAssignment(v, m.assigned)
	v = kbin.AppendUvarint(v, 0)
	return batch.Record{Key: recordKey(recTarget, group, m.id), Value: v}
}

func currentRecord(group string, m *member) batch.Record {
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, m.epoch)
	v = kbin.AppendInt32(v, m.prevEpoch)
	v = kbin.AppendInt8(v, memberStable)
	v = appendAssignment(v, m.assigned)
	v = kbin.AppendUvarint(v, 0)
	return batch.Record{Key: recordKey(recCurrent, group, m.id), Value: v}
}

// memberRecords are the records of a member's whole state.
func memberRecords(group string, m *member) []batch.Record {
	return []batch.Record{memberRecord(group, m), targetRecord(group, m), currentRecord(group, m)}
}

// memberTombstones delete a member's records, the current assignment first
// (as Kafka does), so a half-written removal leaves no member without metadata.
func memberTombstones(group, id string) []batch.Record {
	return []batch.Record{
		{Key: recordKey(recCurrent, group, id)},
		{Key: recordKey(recTarget, group, id)},
		{Key: recordKey(recMember, group, id)},
	}
}

// groupTombstones delete an (empty) group's own records.
func groupTombstones(group string) []batch.Record {
	return []batch.Record{{Key: recordKey(recTargetMeta, group, "")}, {Key: recordKey(recGroup, group, "")}}
}

func appendAssignment(b []byte, a map[[16]byte][]int32) []byte {
	ids := make([][16]byte, 0, len(a))
	for id := range a {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		b = kbin.AppendCompactArrayLen(b, len(a[id]))
		for _, p := range a[id] {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return b
}

func readAssignment(r *kbin.Reader) map[[16]byte][]int32 {
	out := make(map[[16]byte][]int32)
	for range max(r.CompactArrayLen(), 0) {
		id := r.Uuid()
		ps := []int32{}
		for range max(r.CompactArrayLen(), 0) {
			ps = append(ps, r.Int32())
		}
		skipTags(r)
		out[id] = ps
	}
	return out
}

func skipTags(r *kbin.Reader) {
	for range r.Uvarint() {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// loader rebuilds share groups from their records (in any order: Pebble keeps
// the last record of each key).
type loader struct {
	groups map[string]*shareGroup
	meta   map[*member]bool // members whose metadata record was read
}

func newLoader() *loader {
	return &loader{groups: make(map[string]*shareGroup), meta: make(map[*member]bool)}
}

func (l *loader) group(name string) *shareGroup {
	g := l.groups[name]
	if g == nil {
		g = newShareGroup(name)
		l.groups[name] = g
	}
	return g
}

func (l *loader) member(g *shareGroup, id string) *member {
	m := g.members[id]
	if m == nil {
		m = &member{id: id}
		g.members[id] = m
	}
	return m
}

// add reads one stored record; a tombstone (nil value) deletes what its key names.
func (l *loader) add(key, value []byte) error {
	kr := kbin.Reader{Src: key}
	typ := kr.Int16()
	group := kr.String()
	var id string
	switch typ {
	case recMember, recTarget, recCurrent:
		id = kr.String()
	case recGroup, recTargetMeta:
	case 9, 15:
		return nil // Kafka's partition metadata: not needed
	default:
		return fmt.Errorf("share group record of unknown type %d", typ)
	}
	if err := kr.Complete(); err != nil {
		return fmt.Errorf("share group record key of type %d: %w", typ, err)
	}
	if value == nil {
		switch typ {
		case recGroup:
			delete(l.groups, group)
		case recMember:
			if g := l.groups[group]; g != nil {
				delete(g.members, id)
			}
		}
		return nil
	}
	r := kbin.Reader{Src: value}
	if v := r.Int16(); v != 0 {
		return fmt.Errorf("share group record type %d of group %q: unknown value version %d", typ, group, v)
	}
	g := l.group(group)
	switch typ {
	case recGroup:
		g.epoch = r.Int32()
	case recTargetMeta:
		r.Int32() // the assignment epoch is the group epoch here
	case recMember:
		m := l.member(g, id)
		if rack := r.CompactNullableString(); rack != nil {
			m.rack = *rack
		}
		m.clientID = r.CompactString()
		m.host = r.CompactString()
		m.subscribed = nil
		for range max(r.CompactArrayLen(), 0) {
			m.subscribed = append(m.subscribed, r.CompactString())
		}
		l.meta[m] = true
	case recTarget:
		readAssignment(&r) // the target is the current assignment here
	case recCurrent:
		m := l.member(g, id)
		m.epoch = r.Int32()
		m.prevEpoch = r.Int32()
		r.Int8()
		m.assigned = readAssignment(&r)
	}
	skipTags(&r)
	return r.Complete()
}

// finish drops members whose metadata record is missing (their records were
// half deleted) and returns the groups.
func (l *loader) finish() map[string]*shareGroup {
	for _, g := range l.groups {
		for id, m := range g.members {
			if !l.meta[m] {
				delete(g.members, id)
			}
		}
	}
	return l.groups
}
