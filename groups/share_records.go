package groups

// Share group membership (KIP-932) lives in the group's __consumer_offsets
// partition too, in Kafka's record types 9..15 (docs/format/offsets.md, "Share
// groups"). Package sharegroup encodes and reads them; this package only appends
// them to the group's shard, stores them in Pebble with the other group records,
// and hands them back when a shard is loaded here.

import (
	"bytes"
	"context"
	"encoding/binary"

	"skiff/internal/batch"
)

// The share group record types, Kafka's: 9 (partition metadata) and 15 (state
// partition metadata) are kept but not written by Skiff.
const (
	firstShareRecordType = 9
	lastShareRecordType  = 15
)

// isShareRecord reports whether a stored key is one of a share group's records.
func isShareRecord(key []byte) bool {
	if len(key) < 2 {
		return false
	}
	t := int16(binary.BigEndian.Uint16(key))
	return t >= firstShareRecordType && t <= lastShareRecordType
}

// ShareGroups is the share group coordinator (package sharegroup), whose
// records this package keeps.
type ShareGroups interface {
	// LoadShareGroups gives the share group records of __consumer_offsets
	// partition id, once this node leads it and before its groups are served.
	LoadShareGroups(id int32, records []batch.Record)
	// DropShareGroups tells that this node no longer coordinates partition id.
	DropShareGroups(id int32)
}

// SetShareGroups sets who loads the share groups of each partition led here;
// it is called before any partition is elected.
func (c *Coordinator) SetShareGroups(sg ShareGroups) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.shareGroups = sg
}

func (c *Coordinator) shareLoader() ShareGroups {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.shareGroups
}

// ShareShard returns the __consumer_offsets partition of group when this node
// coordinates it and has loaded it, else the code to answer
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
func (c *Coordinator) ShareShard(group string) (int32, int16) {
	sh, code := c.shardFor(group)
	if code != 0 {
		return -1, code
	}
	return sh.id, 0
}

// AppendShareRecords appends a share group's records to its partition. The
// caller holds the share group's lock, so its records are in the log in the
// order of its changes; it then calls wait, without the lock, which returns
// once the records are applied (committed), or the code to answer.
func (c *Coordinator) AppendShareRecords(group string, recs []batch.Record) (wait func(context.Context) int16) {
	sh, code := c.shardFor(group)
	if code != 0 {
		return func(context.Context) int16 { return code }
	}
	last, err := sh.append(c.clock.Now(), recs)
	return func(ctx context.Context) int16 {
		if err == nil {
			err = sh.waitApplied(ctx, last)
		}
		return waitCode(ctx, err)
	}
}

// shareRecordCollector copies the share group records of a Pebble scan (its
// buffers are reused).
type shareRecordCollector []batch.Record

func (s *shareRecordCollector) add(key, value []byte) {
	*s = append(*s, batch.Record{Key: bytes.Clone(key), Value: bytes.Clone(value)})
}

// shareGroupNamed is what the share group coordinator tells of its groups.
type shareGroupNamed interface{ Has(name string) bool }

// isShareGroup reports whether name is a share group loaded here: Kafka keeps one
// group per id, so a classic or consumer group request for it is refused. Both
// kinds are loaded together from the partition (before it is served), so the
// answer holds right after a failover.
// While the partition loads, this is false and the request that asks is told
// COORDINATOR_LOAD_IN_PROGRESS by lockGroup.
func (c *Coordinator) isShareGroup(name string) bool {
	if _, code := c.shardFor(name); code != 0 {
		return false
	}
	sg, ok := c.shareLoader().(shareGroupNamed)
	return ok && sg.Has(name)
}

// IsGroup reports whether name is a classic or consumer group (one with only
// committed offsets included) of a partition loaded here; the share group
// coordinator refuses such an id, as Kafka does.
func (c *Coordinator) IsGroup(name string) bool {
	c.mu.Lock()
	g := c.mu.groups[name]
	c.mu.Unlock()
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state != stateDead
}
