package appliance

// Dynamic broker configs: the settings marked Dynamic in settings.go take the
// value the cluster metadata holds for this broker, else the one it holds for
// every broker, else the static one, and are handed to the node's parts at every
// metadata snapshot applied, without a restart. The broker defaults of topic
// configs (log.retention.ms, ...) need nothing here: they are resolved with each
// topic's configs (partitionConfig).

import (
	"maps"
	"sync"

	"skiff/cluster"
	"skiff/kafkaapi"
)

// dynamicState is what applyDynamic last applied.
type dynamicState struct {
	sync.Mutex
	kafka   *kafkaapi.Server  // set once it is created
	applied map[string]string // dynamic values by Kafka name, as last applied
	started bool
}

// dynamicValues are the dynamic values of this broker's dynamic settings in snap,
// by Kafka name: its own, else the cluster-wide one.
func (n *Node) dynamicValues(snap *cluster.Snapshot) map[string]string {
	mine, all := snap.BrokerConfigs(n.id), snap.BrokerConfigs(cluster.ClusterDefault)
	out := map[string]string{}
	for _, s := range n.cfg.Settings() {
		if !s.Dynamic || s.Kafka == "" {
			continue
		}
		if v, ok := mine[s.Kafka]; ok {
			out[s.Kafka] = v
		} else if v, ok := all[s.Kafka]; ok {
			out[s.Kafka] = v
		}
	}
	return out
}

// applyDynamic hands the dynamic settings of snap to the node's parts when they
// changed since the last call (and on the first call for each part).
func (n *Node) applyDynamic(snap *cluster.Snapshot) {
	n.dyn.Lock()
	defer n.dyn.Unlock()
	values := n.dynamicValues(snap)
	if n.dyn.started && maps.Equal(values, n.dyn.applied) {
		return
	}
	cfg := n.cfg // the static settings, with the dynamic values on top
	for _, s := range cfg.Settings() {
		if v, ok := values[s.Kafka]; ok && s.Dynamic {
			if err := s.SetKafka(v); err != nil { // validated when set; a value from a newer version
				n.logger.Warn("ignoring a dynamic broker config", "name", s.Kafka, "value", v, "err", err)
			}
		}
	}
	cfg.setDefaults()
	if n.dyn.started {
		n.logger.Info("applying dynamic broker configs", "configs", values)
	}
	n.dyn.applied, n.dyn.started = values, true
	n.parts.SetRetentionCheckInterval(cfg.RetentionCheckInterval)
	n.parts.SetFollowerThrottleRate(cfg.FollowerThrottledRate)
	n.parts.SetLeaderThrottleRate(cfg.LeaderThrottledRate)
	n.parts.SetCleaner(cfg.cleanerConfig())
	if n.groups != nil {
		n.groups.SetOffsetsRetention(cfg.Groups.OffsetsRetention, cfg.Groups.OffsetsRetentionCheckInterval)
	}
	n.applyKafkaDynamic(cfg)
}

// applyKafkaDynamic hands the dynamic settings of cfg to the Kafka server, if
// there is one yet; n.dyn is locked.
func (n *Node) applyKafkaDynamic(cfg Config) {
	if n.dyn.kafka == nil {
		return
	}
	n.dyn.kafka.SetDynamic(kafkaapi.Dynamic{
		DisableAutoCreateTopics:  cfg.DisableAutoCreateTopics,
		DefaultPartitions:        cfg.DefaultPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		MaxConnections:           cfg.MaxConnections,
		MaxConnectionsPerIP:      cfg.MaxConnectionsPerIP,
	})
}

// serveDynamic makes the Kafka server take the dynamic settings from now on,
// starting with those of the current snapshot.
func (n *Node) serveDynamic(k *kafkaapi.Server) {
	n.dyn.Lock()
	n.dyn.kafka, n.dyn.started = k, false // apply everything again, to the server too
	n.dyn.Unlock()
	n.applyDynamic(n.cache.Snapshot())
}
