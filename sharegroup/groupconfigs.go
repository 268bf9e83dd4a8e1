package sharegroup

// Share group configs (the GROUP config resource of DescribeConfigs and
// IncrementalAlterConfigs): kept in __share_group_state too, one record per group
// (docs/format/share-state.md), so that every node, tailing the topic, knows them.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"sort"
	"strconv"
	"strings"
	"time"

	"skiff/groups"
)

// configKeyVersion is the first byte of a group-config key (a share-partition
// key starts with stateVersion, 1).
const configKeyVersion = 2

func encodeConfigKey(group string) []byte {
	b := []byte{configKeyVersion}
	b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
	return append(b, group...)
}

func decodeConfigKey(b []byte) (string, bool) {
	if len(b) < 3 || b[0] != configKeyVersion || int(binary.BigEndian.Uint16(b[1:]))+3 != len(b) {
		return "", false
	}
	return string(b[3:]), true
}

// encodeConfigs: version u8 (=1), crc32c u32 of the rest, JSON object name->value.
func encodeConfigs(c map[string]string) []byte {
	j, _ := json.Marshal(c)
	b := make([]byte, 5, 5+len(j))
	b[0] = 1
	b = append(b, j...)
	binary.BigEndian.PutUint32(b[1:], crc32.Checksum(b[5:], castagnoli))
	return b
}

func decodeConfigs(b []byte) (map[string]string, error) {
	if len(b) < 5 || b[0] != 1 || crc32.Checksum(b[5:], castagnoli) != binary.BigEndian.Uint32(b[1:]) {
		return nil, errCorrupt
	}
	var c map[string]string
	if err := json.Unmarshal(b[5:], &c); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	return c, nil
}

// GroupConfigSpec is one group config Skiff knows, with its default.
type GroupConfigSpec struct {
	Name, Default string
	Int           bool // an int, else a string
	Validate      func(v string) error
}

// GroupConfigSpecs are the group configs of share groups, sorted by name, with
// the broker's defaults in cfg.
func GroupConfigSpecs(cfg Config) []GroupConfigSpec {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	positive := func(max int64) func(string) error {
		return func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 || n > max {
				return fmt.Errorf("Invalid value %s: must be an integer in [1, %d]", v, max)
			}
			return nil
		}
	}
	specs := []GroupConfigSpec{
		{Name: ConfigDeadLetterTopic, Default: "", Validate: func(v string) error {
			if v != "" && !strings.HasPrefix(v, DefaultDeadLetterPrefix) {
				return fmt.Errorf("Invalid value %s for configuration %s: a dead-letter topic's name must start with %q (errors.deadletterqueue.topic.name.prefix)", v, ConfigDeadLetterTopic, DefaultDeadLetterPrefix)
			}
			return nil
		}},
		{Name: ConfigAutoOffsetReset, Default: "latest", Validate: func(v string) error {
			if v != "latest" && v != "earliest" {
				return fmt.Errorf("Invalid value %s for configuration %s: must be latest or earliest", v, ConfigAutoOffsetReset)
			}
			return nil
		}},
		{Name: ConfigDeliveryCountLimit, Default: strconv.Itoa(int(cfg.DeliveryCountLimit)), Int: true, Validate: positive(1 << 14)},
		{Name: ConfigRecordLockDuration, Default: ms(cfg.RecordLockDuration), Int: true, Validate: positive(1 << 31)},
		// Checked together, against the broker's bounds (ValidateGroupConfigs).
		{Name: ConfigSessionTimeout, Default: ms(cfg.SessionTimeout), Int: true, Validate: func(string) error { return nil }},
		{Name: ConfigHeartbeatInterval, Default: ms(cfg.HeartbeatInterval), Int: true, Validate: func(string) error { return nil }},
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}

// GroupConfigs returns a group's config overrides as this node knows them.
func (s *TopicStore) GroupConfigs(group string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.configs[group]
}

// SetGroupConfigs replaces a group's overrides (nil or empty: none, written as a
// tombstone, which compaction removes) and returns once this node's tail has read
// the write back.
func (s *TopicStore) SetGroupConfigs(ctx context.Context, group string, c map[string]string) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	n, err := s.partitions(ctx)
	if err != nil {
		return err
	}
	p := configPartition(group, n)
	var value []byte
	if len(c) > 0 {
		value = encodeConfigs(c)
	}
	res := s.cl.ProduceSync(ctx, kgoRecord(encodeConfigKey(group), value, p))
	if err := res.FirstErr(); err != nil {
		return err
	}
	return s.waitConsumed(ctx, p, res[0].Record.Offset+1)
}

// LoadGroupConfigs waits until this node has read every group config written
// before now.
func (s *TopicStore) LoadGroupConfigs(ctx context.Context) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	n, err := s.partitions(ctx)
	if err != nil {
		return err
	}
	parts := make([]int32, n)
	for i := range parts {
		parts[i] = int32(i)
	}
	ends, err := s.endOffsets(ctx, parts...)
	if err != nil {
		return err
	}
	for p, end := range ends {
		if err := s.waitConsumed(ctx, p, end); err != nil {
			return err
		}
	}
	return nil
}

// GroupConfigEntry is one group config as DescribeConfigs reports it.
type GroupConfigEntry struct {
	Name, Value string
	IsDefault   bool
	Int         bool
}

// DescribeGroupConfigs resolves every group config of group: its override, else
// the broker's default.
func (m *Manager) DescribeGroupConfigs(group string) []GroupConfigEntry {
	var set map[string]string
	if m.cfg.GroupConfigs != nil {
		set = m.cfg.GroupConfigs(group)
	}
	var out []GroupConfigEntry
	for _, sp := range m.groupConfigSpecs() {
		e := GroupConfigEntry{Name: sp.Name, Value: sp.Default, IsDefault: true, Int: sp.Int}
		if v, ok := set[sp.Name]; ok {
			e.Value, e.IsDefault = v, false
		}
		out = append(out, e)
	}
	return out
}

func (m *Manager) groupConfigSpecs() []GroupConfigSpec {
	return GroupConfigSpecs(m.cfg)
}

// ValidateGroupConfigs checks a group's new overrides: an unknown name or a bad
// value is an error worded as Kafka's.
func (m *Manager) ValidateGroupConfigs(c map[string]string) error {
	specs := m.groupConfigSpecs()
	for name, v := range c {
		i := sort.Search(len(specs), func(i int) bool { return specs[i].Name >= name })
		if i == len(specs) || specs[i].Name != name {
			return fmt.Errorf("Unknown group config name: %s", name)
		}
		if err := specs[i].Validate(v); err != nil {
			return err
		}
	}
	return groups.Timeouts{
		Session: ConfigSessionTimeout, Heartbeat: ConfigHeartbeatInterval, Broker: "group.share",
		SessionDefault: m.cfg.SessionTimeout, HeartbeatDefault: m.cfg.HeartbeatInterval,
		MinSession: m.cfg.MinSessionTimeout, MaxSession: m.cfg.MaxSessionTimeout,
		MinHeartbeat: m.cfg.MinHeartbeatInterval, MaxHeartbeat: m.cfg.MaxHeartbeatInterval,
	}.Validate(c)
}
