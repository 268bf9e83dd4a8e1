package kafkaapi

// IncrementalAlterConfigs, key 44, versions 0..1 (1 is flexible).
//
// Behaviour: each resource's changes (SET, DELETE, APPEND, SUBTRACT) are applied
// to its current configs together, checked as a whole and written to etcd, or not
// at all (alter_configs.go). A topic's overrides: unknown names and bad values are
// INVALID_CONFIG with Kafka's message ("Unknown topic config name: x", "Invalid
// value ... for configuration ..."), a missing topic UNKNOWN_TOPIC_OR_PARTITION;
// APPEND and SUBTRACT work on list configs only (INVALID_CONFIG otherwise) and
// start from the default when the topic does not set the config; DELETE of a
// config the topic does not set changes nothing. A name twice in one resource, a
// resource listed twice, an unknown operation or a SET without a value is
// INVALID_REQUEST. validate_only checks without writing. The answer comes once
// this node applies the change.
//
// A broker resource ("" for every broker, or this broker's id; another broker's id
// is INVALID_REQUEST, as it is asked of that broker) changes dynamic broker
// configs (broker_configs.go): the settings marked dynamic and the broker
// defaults of topic configs; any other name, and a bad value, is INVALID_REQUEST
// with Kafka's message (Kafka answers broker config errors so, KAFKA-13609).
//
// Authorization, as in Kafka: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED)
// or on the cluster for a broker (CLUSTER_AUTHORIZATION_FAILED), per resource,
// before anything else is checked.
//
// A group resource (type 32) changes a share group's configs (SET and DELETE of
// share.auto.offset.reset, share.record.lock.duration.ms, share.delivery.count.limit
// and KIP-1191's errors.deadletterqueue.topic.name), checked together and written to
// __share_group_state, or not at all (share_configs.go); ALTER_CONFIGS on the group
// is needed (GROUP_AUTHORIZATION_FAILED).
//
// Not implemented: broker logger resources (INVALID_REQUEST).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api[*kmsg.IncrementalAlterConfigsRequest]{
		min: 0, max: 1,
		handle: (*Server).handleIncrementalAlterConfigs,
		entries: func(r *kmsg.IncrementalAlterConfigsRequest) (n int) {
			for _, res := range r.Resources {
				n += topicEntries(len(res.Configs))
			}
			return n
		},
	})
}

func (s *Server) handleIncrementalAlterConfigs(c *conn, _ *RequestHeader, req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	ctx, cancel := context.WithTimeout(c.ctx, defaultRequestTimeout)
	defer cancel()
	count := countNames(req.Resources, func(r *kmsg.IncrementalAlterConfigsRequestResource) string {
		return resourceKey(r.ResourceType, r.ResourceName)
	})
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		if r.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			var msg string
			if rr.ErrorCode, msg = s.alterGroupConfigs(c, &r, req.ValidateOnly); msg != "" {
				rr.ErrorMessage = &msg
			}
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		changes, err := incrementalChanges(r.Configs)
		rr.ErrorCode, rr.ErrorMessage = s.alterOne(ctx, c, r.ResourceType, r.ResourceName, req.ValidateOnly,
			count[resourceKey(r.ResourceType, r.ResourceName)] > 1, err,
			func(schema configSchema, cur map[string]string) (map[string]string, error) {
				return applyIncremental(schema, cur, changes)
			})
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// incrementalChanges checks a resource's changes as Kafka's broker does before
// they reach its controller.
func incrementalChanges(configs []kmsg.IncrementalAlterConfigsRequestResourceConfig) ([]incrementalChange, error) {
	seen := make(map[string]bool, len(configs))
	out := make([]incrementalChange, 0, len(configs))
	for _, cf := range configs {
		if seen[cf.Name] {
			return nil, newKafkaError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[cf.Name] = true
		switch cf.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if cf.Value == nil {
				return nil, newKafkaError(kerr.InvalidRequest, "Null value not supported for : %s", cf.Name)
			}
		case kmsg.IncrementalAlterConfigOpDelete:
		default:
			return nil, newKafkaError(kerr.InvalidRequest, "Unknown alter config operation %d for %s", cf.Op, cf.Name)
		}
		out = append(out, incrementalChange{name: cf.Name, op: cf.Op, value: cf.Value})
	}
	return out, nil
}
