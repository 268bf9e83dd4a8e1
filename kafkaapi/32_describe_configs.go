package kafkaapi

// DescribeConfigs, key 32, versions 0..4 (4 is flexible).
//
// Behaviour: a topic resource (type 2) lists every topic config with its effective
// value: the topic's override (source DYNAMIC_TOPIC_CONFIG), else the broker's
// dynamic config (DYNAMIC_BROKER_CONFIG), else the dynamic default of all brokers
// (DYNAMIC_DEFAULT_BROKER_CONFIG), else the broker's setting (STATIC_BROKER_CONFIG),
// else the built-in default (DEFAULT_CONFIG); config_names narrows the list. A
// broker resource (type 4, name "" or this broker's id) lists the broker settings
// (read-only unless dynamic) and the broker defaults of topic configs
// (log.retention.ms, ...), resolved the same way (broker_configs.go). Synonyms (v1+)
// are returned when asked for: every value that applies, the one in effect first;
// types (v3) always; documentation (v3) when asked for.
//
// A group resource (type 32) lists the share group configs (share.auto.offset.reset,
// share.record.lock.duration.ms, share.delivery.count.limit and KIP-1191's
// errors.deadletterqueue.topic.name): the group's override (DYNAMIC_GROUP_CONFIG),
// else the broker's default (DEFAULT_CONFIG), as this node has read them from
// __share_group_state (share_configs.go).
//
// Authorization, as in Kafka: DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED),
// on the cluster for a broker (CLUSTER_AUTHORIZATION_FAILED) or on the group
// (GROUP_AUTHORIZATION_FAILED), per resource.
//
// Not implemented: broker logger resources (type 8) and resources of other brokers
// (INVALID_REQUEST).

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

func init() {
	register(api[*kmsg.DescribeConfigsRequest]{
		min: 0, max: 4,
		handle: (*Server).handleDescribeConfigs,
		entries: func(r *kmsg.DescribeConfigsRequest) (n int) {
			for _, res := range r.Resources {
				n += topicEntries(len(res.ConfigNames))
			}
			return n
		},
	})
}

func (s *Server) handleDescribeConfigs(c *conn, _ *RequestHeader, req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		want := func(name string) bool {
			if r.ConfigNames == nil {
				return true
			}
			for _, n := range r.ConfigNames {
				if n == name {
					return true
				}
			}
			return false
		}
		if code := c.configsRefused(acl.OpDescribeConfigs, r.ResourceType, r.ResourceName); code != nil {
			msg := code.Description
			rr.ErrorCode, rr.ErrorMessage = code.Code, &msg
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		var entries []cluster.ConfigEntry
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, ok := s.cache.Topic(r.ResourceName)
			if !ok {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				msg := "topic " + strconv.Quote(r.ResourceName) + " does not exist"
				rr.ErrorMessage = &msg
				break
			}
			entries = cluster.DescribeTopicConfigs(t, s.brokerDefaults())
		case kmsg.ConfigResourceTypeBroker:
			if r.ResourceName != "" && r.ResourceName != strconv.Itoa(int(s.cfg.NodeID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				msg := "ask broker " + r.ResourceName + " for its own configs"
				rr.ErrorMessage = &msg
				break
			}
			entries = s.brokerEntries()
		case kmsg.ConfigResourceTypeGroupConfig:
			s.describeGroupConfigs(c, &rr, want)
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			msg := "only topic, broker and group resources can be described"
			rr.ErrorMessage = &msg
		}
		for _, e := range entries {
			if want(e.Name) {
				rr.Configs = append(rr.Configs, describedConfig(e, req))
			}
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// describedConfig is one config of an answer.
func describedConfig(e cluster.ConfigEntry, req *kmsg.DescribeConfigsRequest) kmsg.DescribeConfigsResponseResourceConfig {
	rc := kmsg.NewDescribeConfigsResponseResourceConfig()
	rc.Name, rc.Value, rc.ReadOnly, rc.IsDefault, rc.IsSensitive = e.Name, kmsg.StringPtr(e.Value), e.ReadOnly, e.IsDefault, e.Sensitive
	rc.Source = kmsg.ConfigSource(e.Source)
	rc.ConfigType = kmsg.ConfigType(e.Type)
	if req.IncludeDocumentation && e.Doc != "" {
		rc.Documentation = kmsg.StringPtr(e.Doc)
	}
	if req.IncludeSynonyms {
		for _, syn := range e.Synonyms {
			rc.ConfigSynonyms = append(rc.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{
				Name: syn.Name, Value: kmsg.StringPtr(syn.Value), Source: kmsg.ConfigSource(syn.Source)})
		}
	}
	return rc
}

// configsRefused checks op (DESCRIBE_CONFIGS, ALTER_CONFIGS) on a config resource:
// the error of a refusal, or nil. Resources of other types are not checked.
func (c *conn) configsRefused(op acl.Operation, t kmsg.ConfigResourceType, name string) *kerr.Error {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		if !c.allowed(op, acl.ResourceTopic, name) {
			return kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !c.allowedCluster(op) {
			return kerr.ClusterAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !c.allowed(op, acl.ResourceGroup, name) {
			return kerr.GroupAuthorizationFailed
		}
	}
	return nil
}
