package kafkaapi

// IncrementalAlterConfigs, key 44, versions 0..1 (1 is flexible).
//
// Behaviour: group resources (type 32) only, for share groups: SET and DELETE of
// share.auto.offset.reset, share.record.lock.duration.ms, share.delivery.count.limit
// and errors.deadletterqueue.topic.name (KIP-1191), checked together and written
// to __share_group_state, or not at all; an unknown name or a bad value is
// INVALID_CONFIG; a name twice is INVALID_REQUEST; validate_only checks without
// writing. The answer comes once this node has read the change back.
//
// Authorization, as in Kafka: ALTER_CONFIGS on the group (GROUP_AUTHORIZATION_FAILED).
//
// Not implemented here: topic and broker resources (INVALID_REQUEST); the configs
// branch serves them.

import (
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
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		var msg string
		if r.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			rr.ErrorCode, msg = s.alterGroupConfigs(c, &r, req.ValidateOnly)
		} else {
			rr.ErrorCode, msg = kerr.InvalidRequest.Code, "only group resources can be changed"
		}
		if msg != "" {
			rr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}
