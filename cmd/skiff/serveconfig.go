package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// setting is one `skiff serve` setting: a flag, a YAML key of the same name, and a
// SKIFF_<NAME> environment variable. Precedence: environment, then flag, then file,
// then the default (the environment wins so that a systemd drop-in or a container can
// override what a unit's command line or /etc/skiff/skiff.yaml says).
type setting struct {
	name  string
	kind  settingKind
	def   string
	usage string
}

type settingKind int

const (
	kindString settingKind = iota
	kindBool
	kindInt
	kindDuration
)

// serveSettings lists every serve setting; the packaged skiff.yaml documents each.
var serveSettings = []setting{
	{"data-dir", kindString, "./skiff-data", "folder holding this node's data (etcd member, Pebble, topic segments)"},
	{"listen", kindString, ":9092", "Kafka API listen address HOST:PORT"},
	{"advertise", kindString, "", "Kafka address clients are told to dial HOST:PORT (default: listen, with a wildcard host replaced by this machine's host name)"},
	{"etcd-client", kindString, ":9093", "embedded etcd client listen address HOST:PORT (cluster-internal)"},
	{"etcd-peer", kindString, ":9094", "embedded etcd peer listen address HOST:PORT (cluster-internal)"},
	{"http", kindString, ":9644", "HTTP listen address for /metrics, /healthz and /readyz"},
	{"pprof", kindBool, "false", "also serve Go's profiler under /debug/pprof/ on the HTTP address (CPU, heap and goroutine profiles; docs/performance.md)"},
	{"node-name", kindString, "", "name of this node's etcd member (default: skiff-<node id>)"},
	{"bootstrap", kindBool, "false", "start a new cluster (also what an empty data directory without --join does)"},
	{"join", kindString, "", "join the cluster of running nodes at HOST:PORT[,HOST:PORT] (their etcd-client addresses) when the data directory is empty"},
	{"join-timeout", kindDuration, "60s", "give up joining when no running node answers within this time"},
	{"force-new-cluster", kindBool, "false", "restart this node's data as a one-member cluster, dropping every other etcd member: only to recover when most nodes are lost for good (docs/operations.md); remove it after that one restart"},
	{"rack", kindString, "", "rack of this broker (broker.rack): replicas of a partition go to different racks"},
	{"etcd-advertise-client", kindString, "", "etcd client address other nodes dial HOST:PORT (default: etcd-client, a wildcard host replaced by the host name)"},
	{"etcd-advertise-peer", kindString, "", "etcd peer address other nodes dial HOST:PORT (default: etcd-peer, a wildcard host replaced by the host name)"},
	{"log-level", kindString, "info", "log level: debug, info, warn or error"},
	{"log-format", kindString, "auto", "log format: auto (JSON unless stderr is a terminal), json or text"},
	{"auto-create-topics", kindBool, "true", "create unknown topics on Metadata requests that allow it (auto.create.topics.enable)"},
	{"num-partitions", kindInt, "1", "partitions of topics created without a count (num.partitions)"},
	{"default-replication-factor", kindInt, "1", "replication factor of topics created without one (default.replication.factor)"},
	{"auto-leader-rebalance", kindBool, "true", "move partition leadership back to preferred replicas (auto.leader.rebalance.enable)"},
	{"leader-imbalance-check-interval", kindDuration, "5m", "how often leadership moves back to preferred replicas (leader.imbalance.check.interval.seconds)"},
	{"replica-lag-time-max", kindDuration, "30s", "a follower that has not caught up with its leader for this long leaves the ISR (replica.lag.time.max.ms)"},
	{"session-timeout", kindDuration, "6s", "broker session lease TTL: a broker silent this long is gone for the cluster (broker.session.timeout.ms)"},
	{"socket-request-max-bytes", kindInt, "104857600", "largest Kafka request frame accepted; larger ones close the connection (socket.request.max.bytes)"},
	{"connections-max-idle", kindDuration, "10m", "close Kafka connections idle this long (connections.max.idle.ms)"},
	{"socket-read-timeout", kindDuration, "30s", "close a Kafka connection that takes longer than this to send one request from its first byte (slow or stalled clients)"},
	{"max-connections", kindInt, "10000", "most Kafka connections open at once; more are closed when accepted (max.connections)"},
	{"max-connections-per-ip", kindInt, "0", "most Kafka connections open at once from one client address; more are closed when accepted; 0: no limit (max.connections.per.ip)"},
	{"queued-max-request-bytes", kindInt, "268435456", "memory all Kafka requests being read and handled may take together; readers wait for it; at least socket-request-max-bytes (queued.max.request.bytes)"},
	{"max-partitions-per-request", kindInt, "100000", "most partitions (or topics, groups) one Kafka request may name; a request naming more closes its connection"},
	{"log-retention-check-interval", kindDuration, "5m", "how often retention deletes old segments (log.retention.check.interval.ms)"},
	{"flush-policy", kindString, "", "default flush.policy of topics: replicated (acknowledged in the page cache of every in-sync replica), always (fdatasync before acknowledging) or interval (fdatasync every flush-interval); empty: always for topics with one replica, replicated for more (docs/durability.md)"},
	{"flush-interval", kindDuration, "1s", "default flush.ms of topics: how often flush.policy=interval fdatasyncs (log.flush.interval.ms)"},
	{"shutdown-timeout", kindDuration, "30s", "how long a stop waits for in-flight requests before closing connections"},
	{"group-min-session-timeout", kindDuration, "6s", "shortest session timeout a consumer group member may ask for (group.min.session.timeout.ms)"},
	{"group-max-session-timeout", kindDuration, "30m", "longest session timeout a consumer group member may ask for (group.max.session.timeout.ms)"},
	{"group-initial-rebalance-delay", kindDuration, "3s", "how long the first rebalance of a new consumer group waits for more members to join; 0: none (group.initial.rebalance.delay.ms)"},
	{"group-max-size", kindInt, "1000", "most members (and members being admitted) of one consumer group (group.max.size)"},
	{"offsets-retention", kindDuration, "168h", "delete a consumer group's committed offsets once the group has been empty this long (offsets.retention.minutes)"},
	{"offsets-retention-check-interval", kindDuration, "10m", "how often expired committed offsets are deleted (offsets.retention.check.interval.ms)"},
	{"offsets-topic-num-partitions", kindInt, "16", "partitions of the internal topic __consumer_offsets, fixed when it is created (offsets.topic.num.partitions)"},
	{"offsets-topic-replication-factor", kindInt, "3", "replication factor of __consumer_offsets when it is created, capped at the live brokers (offsets.topic.replication.factor)"},
}

func settingByName(name string) setting {
	for _, s := range serveSettings {
		if s.name == name {
			return s
		}
	}
	return setting{}
}

func envName(name string) string {
	return "SKIFF_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// settingValues holds resolved settings as strings, checked against their kinds.
type settingValues map[string]string

func (v settingValues) str(name string) string { return v[name] }

func (v settingValues) bool(name string) bool {
	b, _ := strconv.ParseBool(v[name])
	return b
}

func (v settingValues) int(name string) int64 {
	n, _ := strconv.ParseInt(v[name], 10, 64)
	return n
}

func (v settingValues) duration(name string) time.Duration {
	d, _ := time.ParseDuration(v[name])
	return d
}

func checkValue(s setting, val string) error {
	switch s.kind {
	case kindBool:
		if _, err := strconv.ParseBool(val); err != nil {
			return fmt.Errorf("%q is not true or false", val)
		}
	case kindInt:
		if _, err := strconv.ParseInt(val, 10, 64); err != nil {
			return fmt.Errorf("%q is not a whole number", val)
		}
	case kindDuration:
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 {
			return fmt.Errorf("%q is not a duration such as 30s or 10m", val)
		}
	}
	return nil
}

// readConfigFile reads a YAML file of settings. Unknown keys and bad values are
// refused with the file, line and key named.
func readConfigFile(path string) (settingValues, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	out := settingValues{}
	if len(doc.Content) == 0 { // empty file
		return out, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config file %s:%d: expected key: value lines", path, root.Line)
	}
	known := make(map[string]setting, len(serveSettings))
	for _, s := range serveSettings {
		known[s.name] = s
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		s, ok := known[k.Value]
		if !ok {
			return nil, fmt.Errorf("config file %s:%d: unknown key %q (see `skiff serve --help` for the settings)", path, k.Line, k.Value)
		}
		if v.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("config file %s:%d: key %q needs a single value", path, v.Line, k.Value)
		}
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("config file %s:%d: key %q is set twice", path, k.Line, k.Value)
		}
		if err := checkValue(s, v.Value); err != nil {
			return nil, fmt.Errorf("config file %s:%d: key %q: %v", path, v.Line, k.Value, err)
		}
		out[k.Value] = v.Value
	}
	return out, nil
}

// resolveSettings merges defaults, the file, flags that were set, and the environment.
func resolveSettings(file settingValues, flagSet func(name string) (string, bool)) (settingValues, error) {
	out := settingValues{}
	var errs []error
	for _, s := range serveSettings {
		val := s.def
		if v, ok := file[s.name]; ok {
			val = v
		}
		if v, ok := flagSet(s.name); ok {
			if err := checkValue(s, v); err != nil {
				errs = append(errs, fmt.Errorf("flag --%s: %v", s.name, err))
			}
			val = v
		}
		if v, ok := os.LookupEnv(envName(s.name)); ok {
			if err := checkValue(s, v); err != nil {
				errs = append(errs, fmt.Errorf("environment %s: %v", envName(s.name), err))
			}
			val = v
		}
		out[s.name] = val
	}
	return out, errors.Join(errs...)
}
