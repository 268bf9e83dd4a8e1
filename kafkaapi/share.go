package kafkaapi

// What the share-group keys (76..79) share: whether this node coordinates a share
// group, and how a request's topic ids resolve to partitions led here.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/acl"
	"skiff/cluster"
	"skiff/groups"
	"skiff/sharegroup"
)

// coordinatesGroup returns 0 when this node coordinates group (it leads the
// group's __consumer_offsets partition, as for classic groups) and has loaded its
// share groups, else the code to answer: COORDINATOR_LOAD_IN_PROGRESS until the
// load, during which a group with members would look unknown and empty.
func (s *Server) coordinatesGroup(group string) int16 {
	if s.cfg.ShareGroups == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	t, ok := s.cache.Topic(cluster.OffsetsTopic)
	if !ok {
		return kerr.CoordinatorNotAvailable.Code
	}
	p := s.parts.Partition(cluster.OffsetsTopic, groups.PartitionFor(group, t.Partitions))
	if p == nil || !p.IsLeader() {
		return kerr.NotCoordinator.Code
	}
	return s.cfg.ShareGroups.Serving(group)
}

// notShareGroup is the message of GROUP_ID_NOT_FOUND for a group id that is a
// classic or consumer group loaded here, or "" for any other id: Kafka keeps one
// group per id and refuses the share group APIs for another type's id
// (GroupMetadataManager.shareGroup). Asked only once coordinatesGroup answered
// 0, so the group's partition is loaded.
func (s *Server) notShareGroup(group string) string {
	if s.cfg.Groups != nil && s.cfg.Groups.IsGroup(group) {
		return "Group " + group + " is not a share group."
	}
	return ""
}

// topicNames maps the topic ids of the cluster to names.
func (s *Server) topicNames() map[cluster.UUID]string {
	ts := s.cache.Topics()
	out := make(map[cluster.UUID]string, len(ts))
	for _, t := range ts {
		out[t.ID] = t.Name
	}
	return out
}

// shareResolver resolves the partitions of a ShareFetch or ShareAcknowledge: an
// unknown topic id is UNKNOWN_TOPIC_ID, a topic the client may not READ
// TOPIC_AUTHORIZATION_FAILED, a partition not led here NOT_LEADER_OR_FOLLOWER.
func (s *Server) shareResolver(c *conn) sharegroup.Resolver {
	names := s.topicNames()
	mayRead := c.allowedTopics(acl.OpRead)
	return func(id [16]byte, p int32) sharegroup.Resolved {
		name, ok := names[id]
		if !ok {
			return sharegroup.Resolved{Code: kerr.UnknownTopicID.Code}
		}
		if !mayRead(name) {
			return sharegroup.Resolved{Topic: name, Code: kerr.TopicAuthorizationFailed.Code}
		}
		lp, code := s.localPartition(name, p)
		if code != 0 {
			return sharegroup.Resolved{Topic: name, Code: code}
		}
		return sharegroup.Resolved{Topic: name, Log: lp}
	}
}

// writesShareState reports whether a Produce to an internal topic is a broker's
// write of share state: to the state topic, from the store's client
// (sharegroup.StoreClientID), with CLUSTER_ACTION on the cluster, the right
// brokers hold.
func (s *Server) writesShareState(c *conn, hdr *RequestHeader, topic string) bool {
	return topic == sharegroup.StateTopic && hdr.ClientID == sharegroup.StoreClientID && c.allowedCluster(acl.OpClusterAction)
}

// deleteShareGroup deletes group when it is a share group this node coordinates
// (ok true, with the code to answer), with the states of its share-partitions,
// at their leaders (share_states.go). ok is false for any other group.
func (s *Server) deleteShareGroup(c *conn, group string) (code int16, ok bool) {
	if s.cfg.ShareGroups == nil || s.coordinatesGroup(group) != 0 {
		return 0, false
	}
	if _, ok := s.cache.Topic(sharegroup.StateTopic); !ok && !s.cfg.ShareGroups.Has(group) {
		return 0, false // no share group was ever used: do not create the state topic
	}
	ctx, cancel := context.WithTimeout(c.ctx, defaultRequestTimeout)
	defer cancel()
	if err := s.cfg.ShareConfigs.LoadGroupConfigs(ctx); err != nil && !s.cfg.ShareGroups.Has(group) {
		return 0, false // no share state readable: a classic group, or nothing
	}
	keys := s.cfg.ShareConfigs.GroupKeys(group)
	if !s.cfg.ShareGroups.Has(group) && len(keys) == 0 {
		return 0, false
	}
	if s.cfg.ShareGroups.Members(group) > 0 {
		return kerr.NonEmptyGroup.Code, true
	}
	// The states first, at their leaders: a state that could not be deleted
	// keeps the group, so that deleting it again finishes the work.
	names := s.topicNames()
	var ts []*shareTarget
	for _, k := range keys {
		if name, ok := names[k.TopicID]; ok { // a deleted topic's states are moot
			ts = append(ts, &shareTarget{Topic: name, ID: k.TopicID, Partition: k.Partition, Start: deleteShareState})
		}
	}
	s.changeShareStates(ctx, group, ts)
	for _, t := range ts {
		if t.Code != 0 && t.Code != kerr.UnknownTopicOrPartition.Code {
			return t.Code, true
		}
	}
	if code := s.cfg.ShareGroups.Delete(ctx, group); code != 0 && code != kerr.GroupIDNotFound.Code {
		return code, true
	}
	return 0, true
}

// shareRequestRefused is the top-level code of a ShareFetch or ShareAcknowledge
// that cannot be served: no group (INVALID_REQUEST), no READ on it, share groups
// not served here; 0 to serve it.
func (s *Server) shareRequestRefused(c *conn, group *string) int16 {
	switch {
	case group == nil:
		return kerr.InvalidRequest.Code
	case !c.allowed(acl.OpRead, acl.ResourceGroup, *group):
		return kerr.GroupAuthorizationFailed.Code
	case s.cfg.Shares == nil:
		return kerr.UnsupportedVersion.Code
	}
	return 0
}
