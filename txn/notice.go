package txn

// Notices (replication/txn_notice.go): once a change that adds partitions to a
// producer's transaction is committed, the coordinator tells each of their
// leaders, so that the producer's first batch there is appended without the
// leader asking back (KIP-890 part 1's verification, a round trip on the data's
// path). A notice is bound to the producer's marker stamp on the partition as
// its leader reported it when it wrote the producer's previous marker there,
// read before the change is written: the marker that ends the noticed
// transaction changes the stamp, so the notice cannot outlive the
// transaction. Without a stamp (the producer's first transaction on the
// partition, a new coordinator) no notice goes, and the leader asks.

import (
	"context"
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Between brokers a stamp travels as a tagged field of WriteTxnMarkers v1 (a
// tag of Skiff's own, far above Kafka's, which start at 0): StampTag on a
// partition of the answer, the stamp its marker got; NoticeTag on a marker of
// the request, which is then a notice, its partition and stamp in the tag and
// no topics in the marker, so that a broker that does not know the tag
// writes nothing.
const (
	StampTag  = 0x5f5f0001
	NoticeTag = 0x5f5f0002
)

// AppendStamp encodes s: its stamp, then its leader epoch, big-endian.
func AppendStamp(dst []byte, s Stamp) []byte {
	dst = binary.BigEndian.AppendUint64(dst, s.Stamp)
	return binary.BigEndian.AppendUint32(dst, uint32(s.LeaderEpoch))
}

// AppendNotice encodes n's stamp, partition and topic for NoticeTag (its
// producer and epoch are the marker's).
func AppendNotice(dst []byte, n Notice) []byte {
	dst = AppendStamp(dst, n.At)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n.Partition))
	return append(dst, n.Topic...)
}

// TaggedNotice decodes the NoticeTag of a marker's tags, ok false when there
// is none or it is malformed.
func TaggedNotice(tags *kmsg.Tags) (tp TopicPartition, s Stamp, ok bool) {
	tags.Each(func(k uint32, v []byte) {
		if k == NoticeTag && len(v) > 16 {
			s = Stamp{Stamp: binary.BigEndian.Uint64(v), LeaderEpoch: int32(binary.BigEndian.Uint32(v[8:]))}
			tp, ok = TopicPartition{Topic: string(v[16:]), Partition: int32(binary.BigEndian.Uint32(v[12:]))}, true
		}
	})
	return tp, s, ok
}

// TaggedStamp decodes the StampTag of a partition's answer, ok false when there is
// none or it is malformed.
func TaggedStamp(tags *kmsg.Tags) (s Stamp, ok bool) {
	tags.Each(func(k uint32, v []byte) {
		if k == StampTag && len(v) == 12 {
			s, ok = Stamp{Stamp: binary.BigEndian.Uint64(v), LeaderEpoch: int32(binary.BigEndian.Uint32(v[8:]))}, true
		}
	})
	return s, ok
}

// Stamp is where a marker was written and the producer's marker stamp there
// after it (replication.Partition.MarkerStamp). The zero Stamp: unknown.
type Stamp struct {
	LeaderEpoch int32
	Stamp       uint64
}

// Notice tells a partition's leader that producer ProducerID at Epoch has the
// partition in its open transaction, while the leader epoch and the
// producer's marker stamp there are At's.
type Notice struct {
	TopicPartition
	ProducerID int64
	Epoch      int16
	At         Stamp
}

// noticesLocked returns the notices for parts, about to be added to m's
// transaction: those with a known stamp and not in the transaction already.
// The caller holds sh.mu and has not yet written the change.
func noticesLocked(m *txnMeta, parts []TopicPartition) []Notice {
	var out []Notice
	for _, tp := range parts {
		if _, in := m.partitions[tp]; in && m.state == Ongoing {
			continue
		}
		if s, ok := m.stamps[tp]; ok && s.Stamp != 0 {
			out = append(out, Notice{TopicPartition: tp, ProducerID: m.pid, Epoch: m.epoch, At: s})
		}
	}
	return out
}

// notify sends notices in the background; a lost notice costs the leader a
// round trip, nothing else.
func (sh *shard) notify(ns []Notice) {
	if len(ns) == 0 || sh.c.cfg.Notify == nil {
		return
	}
	go sh.c.cfg.Notify(context.WithoutCancel(sh.ctx), ns)
}

// noteStampsLocked records the stamps the markers of m's transaction were
// written with (stamps[i] for markers[i]; a zero or missing one forgets the
// partition's). The caller holds sh.mu.
func noteStampsLocked(m *txnMeta, markers []Marker, stamps []Stamp) {
	if m.stamps == nil {
		m.stamps = make(map[TopicPartition]Stamp)
	}
	for i, mk := range markers {
		tp := TopicPartition{Topic: mk.Topic, Partition: mk.Partition}
		if i < len(stamps) && stamps[i].Stamp != 0 {
			m.stamps[tp] = stamps[i]
		} else {
			delete(m.stamps, tp)
		}
	}
}
