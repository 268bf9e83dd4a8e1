package cluster

// Dynamic broker configs: values of broker configs set while the cluster runs
// (AlterConfigs and IncrementalAlterConfigs on a broker resource), for one broker
// or for all of them (Kafka's cluster-wide default, resource name ""). Each is
// kept in etcd as one key per broker and one for the default; every node reads
// them from its cache and applies them without a restart. Which names may be set
// and what their values mean is the business of the caller: cluster stores and
// serves them (and resolves topic configs through them, configs.go).

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ClusterDefault stands for every broker in the dynamic broker configs: Kafka's
// broker resource "".
const ClusterDefault int32 = -1

const prefixBrokerConfigs = Prefix + "broker-configs/"

// clusterDefaultName is the key name of the cluster-wide dynamic broker configs.
const clusterDefaultName = "default"

func brokerConfigsKey(id int32) string {
	if id == ClusterDefault {
		return prefixBrokerConfigs + clusterDefaultName
	}
	return prefixBrokerConfigs + strconv.FormatInt(int64(id), 10)
}

// parseBrokerConfigsKey returns the broker of a dynamic broker configs key
// (ClusterDefault for the default).
func parseBrokerConfigsKey(key string) (int32, bool) {
	rest := strings.TrimPrefix(key, prefixBrokerConfigs)
	if rest == clusterDefaultName {
		return ClusterDefault, true
	}
	n, ok := parseKeyNumber(rest)
	return n, ok && n >= 0
}

// brokerConfigsValue is /skiff/broker-configs/<id> and /skiff/broker-configs/default.
type brokerConfigsValue struct {
	Version int               `json:"version"`
	Configs map[string]string `json:"configs"`
}

func decodeBrokerConfigs(key string, data []byte) (map[string]string, error) {
	var v brokerConfigsValue
	if err := decode(key, data, &v, func() int { return v.Version }); err != nil {
		return nil, err
	}
	return v.Configs, nil
}

// BrokerConfigs returns the dynamic configs of broker id, or of every broker for
// ClusterDefault, by broker config name; nil when there are none. The map is
// shared with the snapshot: do not modify it.
func (s *Snapshot) BrokerConfigs(id int32) map[string]string { return s.brokerConfigs[id] }

// BrokerDefaults are the broker-level layers of topic configs on broker id, with
// static its own settings.
func (s *Snapshot) BrokerDefaults(id int32, static map[string]string) BrokerDefaults {
	return BrokerDefaults{Broker: s.BrokerConfigs(id), Cluster: s.BrokerConfigs(ClusterDefault), Static: static}
}

// AlterBrokerConfigs changes the dynamic configs of broker id (ClusterDefault: of
// every broker) to what alter returns when given the current ones (a copy it may
// change), and returns the write's revision. The caller validates the names and
// values (alter's error is returned as it is). Like AlterTopicConfigs it writes
// by compare-and-swap and calls alter again after a concurrent change. An empty
// result deletes the key.
func (s *Store) AlterBrokerConfigs(ctx context.Context, id int32, alter func(map[string]string) (map[string]string, error)) (int64, error) {
	if id < 0 && id != ClusterDefault {
		return 0, fmt.Errorf("%w: %d", ErrInvalidBroker, id)
	}
	key := brokerConfigsKey(id)
	for {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("cluster: read %s: %w", key, err)
		}
		var cur map[string]string
		cmp := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		if len(resp.Kvs) > 0 {
			if cur, err = decodeBrokerConfigs(key, resp.Kvs[0].Value); err != nil {
				return 0, err
			}
			cmp = clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)
		}
		next, err := alter(maps.Clone(cur))
		if err != nil {
			return 0, err
		}
		op := clientv3.OpDelete(key)
		if len(next) > 0 {
			op = clientv3.OpPut(key, encode(brokerConfigsValue{Version: valueVersion, Configs: next}))
		}
		tr, err := s.client.Txn(ctx).If(cmp).Then(op).Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: write %s: %w", key, err)
		}
		if tr.Succeeded {
			s.logger.Info("set dynamic broker configs", "key", key, "configs", next)
			return tr.Header.Revision, nil
		}
	}
}
