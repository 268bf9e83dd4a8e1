package kafkaapi

// AlterConfigs, key 33, versions 0..2 (2 is flexible).
//
// Behaviour: each resource's configs become exactly those listed: configs it set
// before and the request does not name go back to their defaults (Kafka's legacy
// replace). The new set is checked as a whole and written to etcd, or not at all
// (alter_configs.go). For a topic: unknown names and bad values are INVALID_CONFIG
// with Kafka's message, a value of null INVALID_CONFIG ("Null value not supported
// for topic configs"), a missing topic UNKNOWN_TOPIC_OR_PARTITION. A name twice in
// one resource or a resource listed twice is INVALID_REQUEST. validate_only checks
// without writing. The answer comes once this node applies the change. A broker
// resource replaces the dynamic configs of every broker ("") or of this one, as
// IncrementalAlterConfigs changes them.
//
// Authorization, as in Kafka: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED)
// or on the cluster for a broker (CLUSTER_AUTHORIZATION_FAILED), per resource,
// before anything else is checked.
//
// Not implemented: broker logger resources (INVALID_REQUEST).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api[*kmsg.AlterConfigsRequest]{
		min: 0, max: 2,
		handle: (*Server).handleAlterConfigs,
		entries: func(r *kmsg.AlterConfigsRequest) (n int) {
			for _, res := range r.Resources {
				n += topicEntries(len(res.Configs))
			}
			return n
		},
	})
}

func (s *Server) handleAlterConfigs(c *conn, _ *RequestHeader, req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	ctx, cancel := context.WithTimeout(c.ctx, defaultRequestTimeout)
	defer cancel()
	count := countNames(req.Resources, func(r *kmsg.AlterConfigsRequestResource) string {
		return resourceKey(r.ResourceType, r.ResourceName)
	})
	for _, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		configs, err := replacementConfigs(r)
		rr.ErrorCode, rr.ErrorMessage = s.alterOne(ctx, c, r.ResourceType, r.ResourceName, req.ValidateOnly,
			count[resourceKey(r.ResourceType, r.ResourceName)] > 1, err,
			func(configSchema, map[string]string) (map[string]string, error) { return configs, nil })
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// replacementConfigs is the set of configs a resource of AlterConfigs is to have.
func replacementConfigs(r kmsg.AlterConfigsRequestResource) (map[string]string, error) {
	out := make(map[string]string, len(r.Configs))
	for _, cf := range r.Configs {
		if _, dup := out[cf.Name]; dup {
			return nil, newKafkaError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		if cf.Value == nil {
			return nil, newKafkaError(kerr.InvalidConfig, "Null value not supported for topic configs: %s", cf.Name)
		}
		out[cf.Name] = *cf.Value
	}
	return out, nil
}
