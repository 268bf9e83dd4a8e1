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
// names are left to their owners) as Kafka's GroupConfig.validate does: integers
// of at least 1, within the broker's bounds, the session timeout above the
// heartbeat interval once defaults fill in what is not set. Errors are worded as
// Kafka's (INVALID_CONFIG).
func (c *Coordinator) ValidateGroupConfigs(set map[string]string) error {
	hb, err := c.groupMillis(set, ConfigConsumerHeartbeatInterval, c.cfg.ConsumerHeartbeatInterval)
	if err != nil {
		return err
	}
	session, err := c.groupMillis(set, ConfigConsumerSessionTimeout, c.cfg.ConsumerSessionTimeout)
	if err != nil {
		return err
	}
	for _, b := range []struct {
		name        string
		v, min, max time.Duration
		minName     string
		maxName     string
	}{
		{name: ConfigConsumerHeartbeatInterval, v: hb, min: c.cfg.ConsumerMinHeartbeatInterval, max: c.cfg.ConsumerMaxHeartbeatInterval,
			minName: "group.consumer.min.heartbeat.interval.ms", maxName: "group.consumer.max.heartbeat.interval.ms"},
		{name: ConfigConsumerSessionTimeout, v: session, min: c.cfg.ConsumerMinSessionTimeout, max: c.cfg.ConsumerMaxSessionTimeout,
			minName: "group.consumer.min.session.timeout.ms", maxName: "group.consumer.max.session.timeout.ms"},
	} {
		if b.v < b.min {
			return fmt.Errorf("%s must be greater than or equal to %s", b.name, b.minName)
		}
		if b.v > b.max {
			return fmt.Errorf("%s must be less than or equal to %s", b.name, b.maxName)
		}
	}
	if session <= hb {
		return fmt.Errorf("%s must be greater than %s", ConfigConsumerSessionTimeout, ConfigConsumerHeartbeatInterval)
	}
	return nil
}

// groupMillis is the override name in set (in ms), else def.
func (c *Coordinator) groupMillis(set map[string]string, name string, def time.Duration) (time.Duration, error) {
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
	d, err := c.groupMillis(c.cfg.GroupConfigs(group), name, def)
	if err != nil {
		return def
	}
	return d
}
