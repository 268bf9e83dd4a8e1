package groups

// The records of KIP-848 consumer groups in __consumer_offsets, in Kafka's own
// formats (docs/format/offsets.md, "Consumer groups (KIP-848)"). A key is the
// record type (int16) and the group id, and the member id for per-member records;
// a value is version 0 of Kafka's flexible encoding. A null value deletes.
//
//	type 3  ConsumerGroupMetadata              group epoch
//	type 5  ConsumerGroupMemberMetadata        subscription, client, timeouts
//	type 6  ConsumerGroupTargetAssignmentMetadata  assignment epoch
//	type 7  ConsumerGroupTargetAssignmentMember    the member's target partitions
//	type 8  ConsumerGroupCurrentMemberAssignment   member epoch, state, owned and revoking
//
// Type 4 (partition metadata, deprecated by Kafka 4.1) is neither written nor needed.
// Record types and layouts are Kafka's and must not change.

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"

	"skiff/internal/batch"
)

// Record types (the key's version field), Kafka's.
const (
	recConsumerGroup      = 3
	recConsumerMember     = 5
	recConsumerTargetMeta = 6
	recConsumerTarget     = 7
	recConsumerCurrent    = 8
)

func consumerKey(typ int16, group string, member *string) []byte {
	k := kbin.AppendInt16(nil, typ)
	k = kbin.AppendString(k, group)
	if member != nil {
		k = kbin.AppendString(k, *member)
	}
	return k
}

// parseConsumerKey returns the record type, group and member id ("" for the
// group-level types) of a key.
func parseConsumerKey(k []byte) (typ int16, group, member string, err error) {
	r := kbin.Reader{Src: k}
	typ = r.Int16()
	group = r.String()
	switch typ {
	case recConsumerMember, recConsumerTarget, recConsumerCurrent:
		member = r.String()
	}
	return typ, group, member, r.Complete()
}

func appendTopicParts(b []byte, parts partSet) []byte {
	byTopic := parts.byTopic()
	ids := sortedIDs(byTopic)
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		ps := byTopic[id]
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, p := range ps {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0) // no tagged fields
	}
	return b
}

func readTopicParts(r *kbin.Reader) partSet {
	out := partSet{}
	n := r.CompactArrayLen()
	for range max(n, 0) {
		id := r.Uuid()
		np := r.CompactArrayLen()
		for range max(np, 0) {
			out[topicPart{id, r.Int32()}] = struct{}{}
		}
		skipTags(r)
	}
	return out
}

// skipTags skips a tagged-field section (fields this version does not keep).
func skipTags(r *kbin.Reader) {
	n := r.Uvarint()
	for range n {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// consumerGroupRecord is the group's epoch and, in Kafka's tagged field 0
// (MetadataHash), the hash of the subscribed topics' metadata its target was
// computed for (Skiff's own hash: a Kafka reading it rebalances once).
func consumerGroupRecord(group string, epoch int32, metaHash uint64) batch.Record {
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, epoch)
	v = kbin.AppendUvarint(v, 1)
	v = kbin.AppendUvarint(v, 0) // tag 0
	v = kbin.AppendUvarint(v, 8)
	v = kbin.AppendInt64(v, int64(metaHash))
	return batch.Record{Key: consumerKey(recConsumerGroup, group, nil), Value: v}
}

func consumerTargetMetaRecord(group string, epoch int32) batch.Record {
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, epoch)
	v = kbin.AppendUvarint(v, 0)
	return batch.Record{Key: consumerKey(recConsumerTargetMeta, group, nil), Value: v}
}

func consumerMemberRecord(group string, m *cmember) batch.Record {
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendCompactNullableString(v, m.instanceID)
	v = kbin.AppendCompactNullableString(v, m.rackID)
	v = kbin.AppendCompactString(v, m.clientID)
	v = kbin.AppendCompactString(v, m.clientHost)
	v = kbin.AppendCompactArrayLen(v, len(m.topics))
	for _, t := range m.topics {
		v = kbin.AppendCompactString(v, t)
	}
	v = kbin.AppendCompactNullableString(v, m.regex)
	v = kbin.AppendInt32(v, int32(m.rebalanceTimeout/time.Millisecond))
	v = kbin.AppendCompactNullableString(v, m.serverAssignor)
	if m.classic == nil {
		v = kbin.AppendUvarint(v, 0)
	} else {
		// Tagged field 0, ClassicMemberMetadata: a member using the classic protocol.
		c := kbin.AppendInt32(nil, int32(m.classic.session/time.Millisecond))
		c = kbin.AppendCompactArrayLen(c, len(m.classic.protocols))
		for _, p := range m.classic.protocols {
			c = kbin.AppendCompactString(c, p.name)
			c = kbin.AppendCompactBytes(c, p.metadata)
			c = kbin.AppendUvarint(c, 0)
		}
		c = kbin.AppendUvarint(c, 0)
		v = kbin.AppendUvarint(v, 1)
		v = kbin.AppendUvarint(v, 0)
		v = kbin.AppendUvarint(v, uint32(len(c)))
		v = append(v, c...)
	}
	return batch.Record{Key: consumerKey(recConsumerMember, group, &m.id), Value: v}
}

// readClassicMeta reads the tagged fields of a member record: 0 is its classic
// protocol metadata.
func readClassicMeta(r *kbin.Reader) *classicMeta {
	var out *classicMeta
	for range r.Uvarint() {
		tag, size := r.Uvarint(), r.Uvarint()
		if tag != 0 {
			r.Span(int(size))
			continue
		}
		c := kbin.Reader{Src: r.Span(int(size))}
		out = &classicMeta{session: time.Duration(c.Int32()) * time.Millisecond}
		for range max(c.CompactArrayLen(), 0) {
			p := protocol{name: c.CompactString(), metadata: bytes.Clone(c.CompactBytes())}
			skipTags(&c)
			out.protocols = append(out.protocols, p)
		}
		skipTags(&c)
		if c.Complete() != nil || len(out.protocols) == 0 {
			out = nil
		}
	}
	return out
}

func consumerTargetRecord(group, member string, parts partSet) batch.Record {
	v := kbin.AppendInt16(nil, 0)
	v = appendTopicParts(v, parts)
	v = kbin.AppendUvarint(v, 0)
	return batch.Record{Key: consumerKey(recConsumerTarget, group, &member), Value: v}
}

func consumerCurrentRecord(group string, m *cmember) batch.Record {
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, m.epoch)
	v = kbin.AppendInt32(v, m.prevEpoch)
	v = kbin.AppendInt8(v, int8(m.state))
	v = appendTopicParts(v, m.assigned)
	v = appendTopicParts(v, m.revoking)
	v = kbin.AppendUvarint(v, 0)
	return batch.Record{Key: consumerKey(recConsumerCurrent, group, &m.id), Value: v}
}

// consumerTombstone deletes the record of type typ (of member, if set).
func consumerTombstone(typ int16, group string, member *string) batch.Record {
	return batch.Record{Key: consumerKey(typ, group, member)}
}

// consumerLoader rebuilds consumer groups from their stored records.
type consumerLoader struct {
	groups map[string]*consumerGroup
}

func (l *consumerLoader) group(name string) *consumerGroup {
	cg := l.groups[name]
	if cg == nil {
		cg = newConsumerGroup()
		l.groups[name] = cg
	}
	return cg
}

func (l *consumerLoader) member(cg *consumerGroup, id string) *cmember {
	m := cg.members[id]
	if m == nil {
		m = &cmember{id: id, assigned: partSet{}, revoking: partSet{}}
		cg.members[id] = m
	}
	return m
}

// add reads one stored record (key and value as in the log).
func (l *consumerLoader) add(key, value []byte) error {
	typ, group, member, err := parseConsumerKey(key)
	if err != nil {
		return fmt.Errorf("consumer group record key: %w", err)
	}
	r := kbin.Reader{Src: value}
	if v := r.Int16(); v != 0 {
		return fmt.Errorf("consumer group record type %d of group %q: unknown value version %d", typ, group, v)
	}
	cg := l.group(group)
	switch typ {
	case recConsumerGroup:
		cg.epoch = r.Int32()
		for range r.Uvarint() { // tagged fields: 0 is the metadata hash
			tag, size := r.Uvarint(), r.Uvarint()
			if tag == 0 && size == 8 {
				cg.metaHash = uint64(r.Int64())
			} else {
				r.Span(int(size))
			}
		}
		return r.Complete()
	case recConsumerTargetMeta:
		cg.targetEpoch = r.Int32()
	case recConsumerMember:
		m := l.member(cg, member)
		m.instanceID = r.CompactNullableString()
		m.rackID = r.CompactNullableString()
		m.clientID = r.CompactString()
		m.clientHost = r.CompactString()
		n := r.CompactArrayLen()
		m.topics = nil
		for range max(n, 0) {
			m.topics = append(m.topics, r.CompactString())
		}
		m.regex = r.CompactNullableString()
		m.rebalanceTimeout = time.Duration(r.Int32()) * time.Millisecond
		m.serverAssignor = r.CompactNullableString()
		m.hasMetadata = true
		m.classic = readClassicMeta(&r)
		return r.Complete()
	case recConsumerTarget:
		cg.target[member] = readTopicParts(&r)
	case recConsumerCurrent:
		m := l.member(cg, member)
		m.epoch = r.Int32()
		m.prevEpoch = r.Int32()
		m.state = memberState(r.Int8())
		m.assigned = readTopicParts(&r)
		m.revoking = readTopicParts(&r)
	default:
		return fmt.Errorf("consumer group record of unknown type %d", typ)
	}
	skipTags(&r)
	return r.Complete()
}

// finish drops members whose metadata record is missing (their records were
// half deleted) and returns the groups.
func (l *consumerLoader) finish() map[string]*consumerGroup {
	for _, cg := range l.groups {
		for id, m := range cg.members {
			if !m.hasMetadata {
				delete(cg.members, id)
			}
		}
		for id := range cg.target {
			if cg.members[id] == nil {
				delete(cg.target, id)
			}
		}
	}
	return l.groups
}

func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
	return ids
}
