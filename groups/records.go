package groups

// The records of __consumer_offsets, in Kafka's own formats so that Kafka's tools
// and any reader of the topic recognise them (docs/format/offsets.md):
//
//	offset commit   key   OffsetCommitKey v1    (version i16, group, topic, partition i32)
//	                value OffsetCommitValue v3  (version i16, offset i64, leader epoch i32,
//	                                             metadata, commit timestamp i64); null: deleted
//	group metadata  key   GroupMetadataKey v2   (version i16, group)
//	                value GroupMetadataValue v3 (protocol type, generation, protocol, leader,
//	                                             current state timestamp, members); null: deleted
//
// KIP-848 consumer groups add Kafka's record types 3 and 5..8 (consumer_records.go),
// share groups 9..15 (share_records.go).
//
// Versions written must not change; every version Kafka has written (keys 0..2,
// offset values 0..4, group values 0..4) is read.

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/offsets"
)

// Record versions written; they are Kafka's and must not change.
const (
	offsetCommitKeyVersion    = 1
	groupMetadataKeyVersion   = 2
	offsetCommitValueVersion  = 3
	groupMetadataValueVersion = 3
)

// commitRecord is the record of one committed offset.
func commitRecord(o offsets.GroupOffset) batch.Record {
	k := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: o.Group, Topic: o.Topic, Partition: o.Partition}
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetCommitValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = o.Offset, o.LeaderEpoch, o.Metadata, o.CommitTimestamp
	return batch.Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// commitTombstone is the record deleting one committed offset.
func commitTombstone(group, topic string, partition int32) batch.Record {
	k := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: group, Topic: topic, Partition: partition}
	return batch.Record{Key: k.AppendTo(nil)}
}

// groupRecord is the record of a group's metadata (value nil: deleted).
func groupRecord(group string, value []byte) batch.Record {
	k := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: group}
	return batch.Record{Key: k.AppendTo(nil), Value: value}
}

// applyRecord adds the effect of one record of the log, written at batch
// timestamp ts, to b.
func applyRecord(b *offsets.GroupBatch, r batch.Record, ts int64) error {
	if len(r.Key) < 2 {
		return errors.New("key shorter than its version")
	}
	switch v := int16(binary.BigEndian.Uint16(r.Key)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("offset commit key: %w", err)
		}
		if r.Value == nil {
			b.DeleteOffset(k.Group, k.Topic, k.Partition)
			return nil
		}
		var val kmsg.OffsetCommitValue
		if err := val.ReadFrom(r.Value); err != nil {
			return fmt.Errorf("offset commit value of group %q: %w", k.Group, err)
		}
		epoch := val.LeaderEpoch
		if val.Version < 3 {
			epoch = -1
		}
		b.SetOffset(offsets.GroupOffset{
			Group: k.Group, Topic: k.Topic, Partition: k.Partition,
			Offset: val.Offset, LeaderEpoch: epoch, Metadata: val.Metadata,
			CommitTimestamp: val.CommitTimestamp, WrittenAt: ts,
		})
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("group metadata key: %w", err)
		}
		if r.Value == nil {
			b.DeleteGroup(k.Group)
			return nil
		}
		var val kmsg.GroupMetadataValue
		if err := val.ReadFrom(r.Value); err != nil {
			return fmt.Errorf("group metadata value of group %q: %w", k.Group, err)
		}
		b.SetGroup(k.Group, r.Value, ts)
	case 4:
		// Kafka's consumer group partition metadata (deprecated in 4.1): not needed.
	case 9, 10, 11, 12, 13, 14, 15:
		// Share group records (share_records.go), kept as Kafka's KIP-848 ones.
		if len(r.Key) < 4 {
			return errors.New("share group record key shorter than its group")
		}
		b.SetGroupRecord(r.Key, r.Value)
	case recConsumerGroup, recConsumerMember, recConsumerTargetMeta, recConsumerTarget, recConsumerCurrent:
		if _, _, _, err := parseConsumerKey(r.Key); err != nil {
			return fmt.Errorf("consumer group record key: %w", err)
		}
		b.SetGroupRecord(r.Key, r.Value)
	default:
		return fmt.Errorf("unknown key version %d", v)
	}
	return nil
}

// applyTxnRecord adds one record of producer pid's transaction (an offset commit
// of TxnOffsetCommit) to b as pending, until the transaction's marker.
func applyTxnRecord(b *offsets.GroupBatch, pid int64, r batch.Record, ts int64) error {
	if len(r.Key) < 2 || r.Value == nil {
		return errors.New("not an offset commit")
	}
	if v := int16(binary.BigEndian.Uint16(r.Key)); v > 1 {
		return fmt.Errorf("key version %d in a transaction", v)
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(r.Key); err != nil {
		return fmt.Errorf("offset commit key: %w", err)
	}
	var val kmsg.OffsetCommitValue
	if err := val.ReadFrom(r.Value); err != nil {
		return fmt.Errorf("offset commit value of group %q: %w", k.Group, err)
	}
	b.SetPendingOffset(pid, offsets.GroupOffset{
		Group: k.Group, Topic: k.Topic, Partition: k.Partition,
		Offset: val.Offset, LeaderEpoch: val.LeaderEpoch, Metadata: val.Metadata,
		CommitTimestamp: val.CommitTimestamp, WrittenAt: ts,
	})
	return nil
}
