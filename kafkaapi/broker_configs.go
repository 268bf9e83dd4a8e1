package kafkaapi

// This broker's configs as DescribeConfigs lists them and AlterConfigs and
// IncrementalAlterConfigs change them: the settings the node hands over
// (Config.BrokerConfigs), each with the dynamic values of the cluster metadata on
// top when it is dynamic, and the broker defaults of topic configs
// (log.retention.ms, ...), which are all dynamic, resolved like the topic configs
// they set.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/cluster"
)

// BrokerConfig is one broker setting reported by DescribeConfigs.
type BrokerConfig struct {
	Name, Value string
	Type        cluster.ConfigType
	IsDefault   bool
	ReadOnly    bool // it cannot be changed while the broker runs
	Doc         string
	// Check validates a new value in Kafka's form (milliseconds for .ms names) for
	// a setting that is not ReadOnly: set by AlterConfigs, it takes effect
	// without a restart.
	Check func(value string) error
}

// brokerEntries resolves every config of this broker: the static list first, then
// the topic defaults it does not name.
func (s *Server) brokerEntries() []cluster.ConfigEntry {
	snap := s.cache.Snapshot()
	mine, all := snap.BrokerConfigs(s.cfg.NodeID), snap.BrokerConfigs(cluster.ClusterDefault)
	out := make([]cluster.ConfigEntry, 0, len(s.cfg.BrokerConfigs))
	listed := make(map[string]bool, len(s.cfg.BrokerConfigs))
	for _, bc := range s.cfg.BrokerConfigs {
		listed[bc.Name] = true
		var syn []cluster.ConfigSynonym
		if !bc.ReadOnly {
			if v, ok := mine[bc.Name]; ok {
				syn = append(syn, cluster.ConfigSynonym{Name: bc.Name, Value: v, Source: cluster.SourceDynamicBroker})
			}
			if v, ok := all[bc.Name]; ok {
				syn = append(syn, cluster.ConfigSynonym{Name: bc.Name, Value: v, Source: cluster.SourceDynamicDefaultBroker})
			}
		}
		src := cluster.SourceStaticBroker
		if bc.IsDefault {
			src = cluster.SourceDefault
		}
		syn = append(syn, cluster.ConfigSynonym{Name: bc.Name, Value: bc.Value, Source: src})
		out = append(out, cluster.ConfigEntry{Name: bc.Name, Value: syn[0].Value, Source: syn[0].Source,
			IsDefault: syn[0].Source == cluster.SourceDefault, ReadOnly: bc.ReadOnly, Type: bc.Type, Doc: bc.Doc, Synonyms: syn})
	}
	for _, e := range cluster.DescribeTopicDefaults(s.brokerDefaults()) {
		if !listed[e.Name] {
			out = append(out, e)
		}
	}
	return out
}

// brokerDefaults are the broker-level layers of topic configs on this broker.
func (s *Server) brokerDefaults() cluster.BrokerDefaults {
	return s.cache.Snapshot().BrokerDefaults(s.cfg.NodeID, s.cfg.TopicDefaults)
}

// brokerResource returns the broker a broker resource names: this one, or every
// broker for "" (cluster.ClusterDefault). Another broker's configs are asked of
// that broker, as in Kafka.
func (s *Server) brokerResource(name string) (int32, error) {
	if name == "" {
		return cluster.ClusterDefault, nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, newKafkaError(kerr.InvalidRequest, "Node id must be an integer, but it is: %s", name)
	}
	if int32(id) != s.cfg.NodeID {
		return 0, newKafkaError(kerr.InvalidRequest, "Unexpected broker id, expected %d, but received %s", s.cfg.NodeID, name)
	}
	return int32(id), nil
}

// brokerSchema is the schema of broker configs: log.cleanup.policy is their only
// list.
var brokerSchema = configSchema{
	isList: func(name string) bool {
		spec, ok := cluster.LookupTopicDefault(name)
		return ok && spec.Type == cluster.ConfigTypeList
	},
	defaultOf: func(name string) string {
		spec, _ := cluster.LookupTopicDefault(name)
		return spec.Default
	},
}

// checkBrokerConfigs validates a broker's dynamic configs as a whole. Failures are
// INVALID_REQUEST, as Kafka answers them (KAFKA-13609).
func (s *Server) checkBrokerConfigs(configs map[string]string) error {
	names := make([]string, 0, len(configs))
	for name := range configs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := configs[name]
		i := slices.IndexFunc(s.cfg.BrokerConfigs, func(bc BrokerConfig) bool { return bc.Name == name })
		switch {
		case i >= 0 && (s.cfg.BrokerConfigs[i].ReadOnly || s.cfg.BrokerConfigs[i].Check == nil):
			return newKafkaError(kerr.InvalidRequest, "Cannot update these configs dynamically: Set(%s)", name)
		case i >= 0:
			if err := s.cfg.BrokerConfigs[i].Check(v); err != nil {
				return newKafkaError(kerr.InvalidRequest, "Invalid value %s for configuration %s: %v", v, name, err)
			}
			continue
		}
		if ok, err := cluster.ValidateTopicDefault(name, v); !ok {
			return newKafkaError(kerr.InvalidRequest, "Unknown broker config name: %s", name)
		} else if err != nil {
			return newKafkaError(kerr.InvalidRequest, "%v", err)
		}
	}
	return nil
}

// alterBrokerConfigs changes the dynamic configs of this broker or of every broker.
func (s *Server) alterBrokerConfigs(ctx context.Context, name string, validateOnly bool, alter alterFunc) error {
	id, err := s.brokerResource(name)
	if err != nil {
		return err
	}
	change := func(cur map[string]string) (map[string]string, error) {
		if cur == nil {
			cur = map[string]string{}
		}
		next, err := alter(brokerSchema, cur)
		if err == nil {
			err = s.checkBrokerConfigs(next)
		}
		return next, err
	}
	if validateOnly {
		_, err := change(maps.Clone(s.cache.Snapshot().BrokerConfigs(id)))
		return err
	}
	rev, err := s.meta.AlterBrokerConfigs(ctx, id, change)
	if err != nil {
		var ke *kafkaError
		if errors.As(err, &ke) {
			return err
		}
		return metadataWriteError("alter broker configs", err)
	}
	if err := s.waitApplied(ctx, rev); err != nil {
		return newKafkaError(kerr.RequestTimedOut, "the broker configs were changed but are not applied here yet: %v", err)
	}
	return nil
}
