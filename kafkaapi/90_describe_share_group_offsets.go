package kafkaapi

// DescribeShareGroupOffsets, key 90, versions 0..1.
//
// Behaviour: for each group this node coordinates, the start offset (SPSO) of each
// share-partition asked for (every one with a state when topics is null), as this
// node has read it from __share_group_state; -1 for one without a state. Lag (v1)
// is the high watermark minus the SPSO when this node leads the partition, else
// -1. A group with neither members nor states is GROUP_ID_NOT_FOUND; so is the id
// of a classic or consumer group, with "Group G is not a share group." (Kafka
// does not check the type here and answers such an id start offsets of -1; the
// other share group APIs refuse it with this message).
//
// Authorization, as in Kafka: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED),
// DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions; topics the
// client may not DESCRIBE are left out of a null listing).

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/sharegroup"
)

func init() {
	register(api[*kmsg.DescribeShareGroupOffsetsRequest]{
		min: 0, max: 1,
		handle: (*Server).handleDescribeShareGroupOffsets,
		entries: func(r *kmsg.DescribeShareGroupOffsetsRequest) (n int) {
			for _, g := range r.Groups {
				n++
				for _, t := range g.Topics {
					n += topicEntries(len(t.Partitions))
				}
			}
			return n
		},
	})
}

func (s *Server) handleDescribeShareGroupOffsets(c *conn, _ *RequestHeader, req *kmsg.DescribeShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	names := s.topicNames()
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		switch {
		case !c.allowed(acl.OpDescribe, acl.ResourceGroup, g.GroupID):
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case s.coordinatesGroup(g.GroupID) != 0:
			rg.ErrorCode = s.coordinatesGroup(g.GroupID)
		case s.notShareGroup(g.GroupID) != "":
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			rg.ErrorMessage = kmsg.StringPtr(s.notShareGroup(g.GroupID))
		default:
			rg.ErrorCode = s.describeShareOffsets(c, &rg, g.Topics, names)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (s *Server) describeShareOffsets(c *conn, rg *kmsg.DescribeShareGroupOffsetsResponseGroup, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic, names map[[16]byte]string) int16 {
	store := s.cfg.ShareConfigs
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	defer cancel()
	if err := store.LoadGroupConfigs(ctx); err != nil { // reads every state written before now
		return kerr.CoordinatorNotAvailable.Code
	}
	keys := store.GroupKeys(rg.GroupID)
	if len(keys) == 0 && !s.cfg.ShareGroups.Has(rg.GroupID) {
		return kerr.GroupIDNotFound.Code
	}
	if topics == nil { // every share-partition with a state
		byTopic := map[string][]int32{}
		for _, k := range keys {
			if name, ok := names[k.TopicID]; ok && c.may(acl.OpDescribe, acl.ResourceTopic, name) {
				byTopic[name] = append(byTopic[name], k.Partition)
			}
		}
		for name, ps := range byTopic {
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			topics = append(topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: ps})
		}
		sort.Slice(topics, func(i, j int) bool { return topics[i].Topic < topics[j].Topic })
	}
	for _, t := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic = t.Topic
		info, exists := s.cache.Topic(t.Topic)
		rt.TopicID = info.ID
		allowed := c.allowed(acl.OpDescribe, acl.ResourceTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
			switch {
			case !allowed:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !exists || p < 0 || p >= info.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				if st, ok := store.StartOffset(sharegroup.Key{Group: rg.GroupID, TopicID: info.ID, Partition: p}); ok {
					rp.StartOffset, rp.LeaderEpoch = st.StartOffset, st.LeaderEpoch
					if lp, code := s.localPartition(t.Topic, p); code == 0 {
						rp.Lag = max(lp.HighWatermark()-st.StartOffset, 0)
					}
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return 0
}
