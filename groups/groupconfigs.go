package groups

// A consumer group's own configs (the GROUP config resource, KIP-848's part of
// Kafka's GroupConfig): consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms override the broker's
// group.consumer.session.timeout.ms and group.consumer.heartbeat.interval.ms
// for one group. They are kept with the share group configs (Config.GroupConfigs
// reads them); this file defines, validates and resolves them.

import (
	"fmt"
	"strconv"
	"time"
)

// The consumer group configs of the GROUP resource.
const (
	ConfigConsumerSessionTimeout    = "consumer.session.timeout.ms"
	ConfigConsumerHeartbeatInterval = "consumer.heartbeat.interval.ms"
)

// The broker's bounds of those configs (Kafka's group.consumer.min/max.*).
const (
	DefaultConsumerMinSessionTimeout    = 45 * time.Second
	DefaultConsumerMaxSessionTimeout    = 60 * time.Second
	DefaultConsumerMinHeartbeatInterval = 5 * time.Second
	DefaultConsumerMaxHeartbeatInterval = 15 * time.Second
)

// GroupConfigEntry is one consumer group config as DescribeConfigs reports it.
type GroupConfigEntry struct {
	Name, Value string
	IsDefault   bool
}

// IsConsumerGroupConfig reports whether name is a config this package owns.
func IsConsumerGroupConfig(name string) bool {
	return name == ConfigConsumerSessionTimeout || name == ConfigConsumerHeartbeatInterval
}

// DescribeGroupConfigs resolves the consumer group configs of a group with
// overrides set: each override, else the broker's value. Sorted by name.
func (c *Coordinator) DescribeGroupConfigs(set map[string]string) []GroupConfigEntry {
	out := make([]GroupConfigEntry, 0, 2)
	for _, d := range []struct {
		name string
		def  time.Duration
	}{
		{ConfigConsumerHeartbeatInterval, c.cfg.ConsumerHeartbeatInterval},
		{ConfigConsumerSessionTimeout, c.cfg.ConsumerSessionTimeout},
	} {
		e := GroupConfigEntry{Name: d.name, Value: strconv.FormatInt(d.def.Milliseconds(), 10), IsDefault: true}
		if v, ok := set[d.name]; ok {
			e.Value, e.IsDefault = v, false
		}
		out = append(out, e)
	}
	return out
}

// ValidateGroupConfigs checks a group's consumer group overrides in set (other
// names are left to their owners) as Kafka's GroupConfig.validate does
// (Timeouts.Validate).
func (c *Coordinator) ValidateGroupConfigs(set map[string]string) error {
	return Timeouts{
		Session: ConfigConsumerSessionTimeout, Heartbeat: ConfigConsumerHeartbeatInterval, Broker: "group.consumer",
		SessionDefault: c.cfg.ConsumerSessionTimeout, HeartbeatDefault: c.cfg.ConsumerHeartbeatInterval,
		MinSession: c.cfg.ConsumerMinSessionTimeout, MaxSession: c.cfg.ConsumerMaxSessionTimeout,
		MinHeartbeat: c.cfg.ConsumerMinHeartbeatInterval, MaxHeartbeat: c.cfg.ConsumerMaxHeartbeatInterval,
	}.Validate(set)
}

// Timeouts are a group type's session timeout and heartbeat interval configs
// (consumer.* of KIP-848 groups, share.* of share groups) with the broker's
// defaults and bounds.
type Timeouts struct {
	Session, Heartbeat string // the group configs' names, in ms
	Broker             string // prefix of the broker's bound names: "group.consumer"
	SessionDefault, HeartbeatDefault,
	MinSession, MaxSession, MinHeartbeat, MaxHeartbeat time.Duration
}

// Validate checks the overrides in set: integers of at least 1, within the
// broker's bounds, the session timeout above the heartbeat interval once
// defaults fill in what is not set. Errors are worded as Kafka's (INVALID_CONFIG).
func (t Timeouts) Validate(set map[string]string) error {
	hb, err := GroupMillis(set, t.Heartbeat, t.HeartbeatDefault)
	if err != nil {
		return err
	}
	session, err := GroupMillis(set, t.Session, t.SessionDefault)
	if err != nil {
		return err
	}
	for _, b := range []struct {
		name, bound string
		v, min, max time.Duration
	}{
		{name: t.Heartbeat, bound: "heartbeat.interval.ms", v: hb, min: t.MinHeartbeat, max: t.MaxHeartbeat},
		{name: t.Session, bound: "session.timeout.ms", v: session, min: t.MinSession, max: t.MaxSession},
	} {
		if b.v < b.min {
			return fmt.Errorf("%s must be greater than or equal to %s.min.%s", b.name, t.Broker, b.bound)
		}
		if b.v > b.max {
			return fmt.Errorf("%s must be less than or equal to %s.max.%s", b.name, t.Broker, b.bound)
		}
	}
	if session <= hb {
		return fmt.Errorf("%s must be greater than %s", t.Session, t.Heartbeat)
	}
	return nil
}

// GroupMillis is the override name in set (in ms), else def.
func GroupMillis(set map[string]string, name string, def time.Duration) (time.Duration, error) {
	v, ok := set[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, name)
	}
	if n < 1 {
		return 0, fmt.Errorf("Invalid value %s for configuration %s: Value must be at least 1", v, name)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// consumerSessionTimeout is a group's consumer.session.timeout.ms, else the
// broker's. A stored value that no longer parses falls back to the broker's.
func (c *Coordinator) consumerSessionTimeout(group string) time.Duration {
	return c.groupDuration(group, ConfigConsumerSessionTimeout, c.cfg.ConsumerSessionTimeout)
}

// consumerHeartbeatInterval is a group's consumer.heartbeat.interval.ms, else the
// broker's.
func (c *Coordinator) consumerHeartbeatInterval(group string) time.Duration {
	return c.groupDuration(group, ConfigConsumerHeartbeatInterval, c.cfg.ConsumerHeartbeatInterval)
}

func (c *Coordinator) groupDuration(group, name string, def time.Duration) time.Duration {
	if c.cfg.GroupConfigs == nil {
		return def
	}
	d, err := GroupMillis(c.cfg.GroupConfigs(group), name, def)
	if err != nil {
		return def
	}
	return d
}
