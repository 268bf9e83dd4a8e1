package kafkaapi

// DescribeConfigs, key 32, versions 0..3.
//
// Behaviour: a topic resource (type 2) lists every topic config Skiff knows with its
// effective value: the topic's override (source DYNAMIC_TOPIC_CONFIG), else the
// broker's setting (STATIC_BROKER_CONFIG), else the built-in default
// (DEFAULT_CONFIG); config_names narrows the list. A broker resource (type 4, name ""
// or this broker's id) lists the broker settings (read-only unless dynamic). Synonyms (v1+)
// are returned when asked for: every value that applies to a topic config, the one in
// effect first (the topic's override, the broker's, the built-in default); types (v3)
// always; documentation (v3) when asked for, for topic configs.
//
// Not implemented: broker logger resources (type 8) and resources of other brokers
// (INVALID_REQUEST); changing configs is IncrementalAlterConfigs, a later API.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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

func (s *Server) handleDescribeConfigs(_ *conn, _ *RequestHeader, req *kmsg.DescribeConfigsRequest) kmsg.Response {
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
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, ok := s.cache.Topic(r.ResourceName)
			if !ok {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				msg := "topic " + strconv.Quote(r.ResourceName) + " does not exist"
				rr.ErrorMessage = &msg
				break
			}
			for _, e := range cluster.DescribeTopicConfigs(t, s.brokerDefaults()) {
				if !want(e.Name) {
					continue
				}
				rc := kmsg.NewDescribeConfigsResponseResourceConfig()
				v := e.Value
				rc.Name, rc.Value, rc.ReadOnly, rc.IsDefault, rc.IsSensitive = e.Name, &v, e.ReadOnly, e.IsDefault, e.Sensitive
				rc.Source = kmsg.ConfigSource(e.Source)
				rc.ConfigType = kmsg.ConfigType(e.Type)
				if req.IncludeDocumentation {
					rc.Documentation = kmsg.StringPtr(e.Doc)
				}
				if req.IncludeSynonyms {
					for _, syn := range e.Synonyms {
						rc.ConfigSynonyms = append(rc.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{
							Name: syn.Name, Value: kmsg.StringPtr(syn.Value), Source: kmsg.ConfigSource(syn.Source)})
					}
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
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			msg := "only topic and broker resources can be described"
			rr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// brokerDefaults are the broker-level layers of topic configs on this broker.
func (s *Server) brokerDefaults() cluster.BrokerDefaults {
	return cluster.BrokerDefaults{Static: s.cfg.TopicDefaults}
}
