package kafkaapi

// DescribeConfigs, key 32, versions 0..3.
//
// Behaviour: a topic resource (type 2) lists every topic config Skiff knows with its
// effective value: the topic's override (source DYNAMIC_TOPIC_CONFIG), else the
// broker's setting (STATIC_BROKER_CONFIG), else the built-in default
// (DEFAULT_CONFIG); config_names narrows the list. A broker resource (type 4, name ""
// or this broker's id) lists the broker settings (read-only unless dynamic). Synonyms (v1+) are
// returned when asked for; types (v3) always; documentation (v3) is null.
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
// (INVALID_REQUEST); changing configs is IncrementalAlterConfigs, a later API.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

// BrokerConfig is one broker setting reported by DescribeConfigs.
type BrokerConfig struct {
	Name, Value string
	Type        cluster.ConfigType
	IsDefault   bool
	ReadOnly    bool // it cannot be changed while the broker runs
}

func init() {
	register(api[*kmsg.DescribeConfigsRequest]{
		min: 0, max: 3,
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
		if code := c.describeConfigsRefused(r.ResourceType, r.ResourceName); code != nil {
			msg := code.Description
			rr.ErrorCode, rr.ErrorMessage = code.Code, &msg
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, ok := s.cache.Topic(r.ResourceName)
			if !ok {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				msg := "topic " + strconv.Quote(r.ResourceName) + " does not exist"
				rr.ErrorMessage = &msg
				break
			}
			for _, e := range cluster.DescribeTopicConfigs(t, s.cfg.TopicDefaults) {
				if !want(e.Name) {
					continue
				}
				rc := kmsg.NewDescribeConfigsResponseResourceConfig()
				v := e.Value
				rc.Name, rc.Value, rc.ReadOnly, rc.IsDefault, rc.IsSensitive = e.Name, &v, e.ReadOnly, e.IsDefault, e.Sensitive
				rc.Source = kmsg.ConfigSource(e.Source)
				rc.ConfigType = kmsg.ConfigType(e.Type)
				if req.IncludeSynonyms {
					rc.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{{Name: e.Name, Value: &v, Source: rc.Source}}
				}
				rr.Configs = append(rr.Configs, rc)
			}
		case kmsg.ConfigResourceTypeBroker:
			if r.ResourceName != "" && r.ResourceName != strconv.Itoa(int(s.cfg.NodeID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				msg := "ask broker " + r.ResourceName + " for its own configs"
				rr.ErrorMessage = &msg
				break
			}
			for _, bc := range s.cfg.BrokerConfigs {
				if !want(bc.Name) {
					continue
				}
				rc := kmsg.NewDescribeConfigsResponseResourceConfig()
				v := bc.Value
				rc.Name, rc.Value, rc.ReadOnly, rc.IsDefault = bc.Name, &v, bc.ReadOnly, bc.IsDefault
				rc.Source = kmsg.ConfigSourceStaticBrokerConfig
				if bc.IsDefault {
					rc.Source = kmsg.ConfigSourceDefaultConfig
				}
				rc.ConfigType = kmsg.ConfigType(bc.Type)
				rr.Configs = append(rr.Configs, rc)
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			s.describeGroupConfigs(c, &rr, want)
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			msg := "only topic, broker and group resources can be described"
			rr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// describeConfigsRefused checks DESCRIBE_CONFIGS on a config resource: the
// error of a refusal, or nil. Resources of other types are not checked.
func (c *conn) describeConfigsRefused(t kmsg.ConfigResourceType, name string) *kerr.Error {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		if !c.allowed(acl.OpDescribeConfigs, acl.ResourceTopic, name) {
			return kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !c.allowedCluster(acl.OpDescribeConfigs) {
			return kerr.ClusterAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !c.allowed(acl.OpDescribeConfigs, acl.ResourceGroup, name) {
			return kerr.GroupAuthorizationFailed
		}
	}
	return nil
}
