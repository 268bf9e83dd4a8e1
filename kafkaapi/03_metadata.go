package kafkaapi

// Metadata, key 3, versions 0..8.
//
// Behaviour: every live broker with its advertised address on the listener the
// client came in on (a broker without a listener of that name is left out, as in
// Kafka); the controller id (-1 while there is none); the requested topics, or all
// of them when the list is null (v1+) or empty (v0). Each partition lists its leader (LEADER_NOT_AVAILABLE and -1
// when the leader has no live session), leader epoch (v7+), replicas, ISR and
// offline replicas (v5+). Unknown topics are created with the broker defaults when
// auto.create.topics.enable is on and the request allows it (v0..v3 always do; v4+
// carry allow_auto_topic_creation); otherwise UNKNOWN_TOPIC_OR_PARTITION. Invalid
// names get INVALID_TOPIC_EXCEPTION.
//
// Not implemented: authorized operations (v8 asks for them; the answer is Kafka's
// "not requested" value, since there are no ACLs).

import (
	"context"
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
)

// authorizedOperationsOmitted is Kafka's value for "authorized operations were not
// requested or are not known" (INT32_MIN).
const authorizedOperationsOmitted = -2147483648

func init() {
	register(api[*kmsg.MetadataRequest]{
		min: 0, max: 8,
		handle:  (*Server).handleMetadata,
		entries: func(r *kmsg.MetadataRequest) int { return len(r.Topics) },
	})
}

func (s *Server) handleMetadata(c *conn, _ *RequestHeader, req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	live := make(map[int32]bool)
	for _, b := range s.cache.Brokers() {
		live[b.ID] = true
		host, port, ok := b.Address(c.listener.Name)
		if !ok {
			continue
		}
		var rack *string
		if b.Rack != "" {
			r := b.Rack
			rack = &r
		}
		resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: b.ID, Host: host, Port: port, Rack: rack})
	}
	clusterID := s.cache.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = s.cache.Snapshot().Controller()
	resp.AuthorizedOperations = authorizedOperationsOmitted

	var names []string
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range s.cache.Topics() {
			names = append(names, t.Name)
		}
		sort.Strings(names)
	} else {
		for _, t := range req.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
	}
	allowCreate := !s.dynamic().DisableAutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, name := range names {
		t, ok := s.cache.Topic(name)
		if !ok && !all {
			var code int16
			t, code = s.autoCreate(c, name, allowCreate)
			if code != 0 {
				n := name
				resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{
					ErrorCode: code, Topic: &n, AuthorizedOperations: authorizedOperationsOmitted,
				})
				continue
			}
		}
		resp.Topics = append(resp.Topics, s.describeTopic(t, live))
	}
	return resp
}

func (s *Server) describeTopic(t cluster.Topic, live map[int32]bool) kmsg.MetadataResponseTopic {
	name := t.Name
	rt := kmsg.MetadataResponseTopic{
		Topic:                &name,
		TopicID:              t.ID,
		IsInternal:           cluster.IsInternalTopic(t.Name),
		AuthorizedOperations: authorizedOperationsOmitted,
		Partitions:           make([]kmsg.MetadataResponseTopicPartition, t.Partitions),
	}
	for i := int32(0); i < t.Partitions; i++ {
		rp := &rt.Partitions[i]
		*rp = kmsg.NewMetadataResponseTopicPartition()
		rp.Partition = i
		rp.Replicas = t.Assignment[i]
		rp.OfflineReplicas = []int32{}
		for _, r := range t.Assignment[i] {
			if !live[r] {
				rp.OfflineReplicas = append(rp.OfflineReplicas, r)
			}
		}
		st, ok := s.cache.Partition(t.Name, i)
		if !ok || st.Leader == cluster.NoLeader || !live[st.Leader] {
			rp.ErrorCode = kerr.LeaderNotAvailable.Code
			rp.Leader, rp.LeaderEpoch = -1, -1
			rp.ISR = []int32{}
			if ok {
				rp.ISR, rp.LeaderEpoch = st.ISR, st.LeaderEpoch
			}
			continue
		}
		rp.Leader, rp.LeaderEpoch, rp.ISR = st.Leader, st.LeaderEpoch, st.ISR
	}
	return rt
}

// autoCreate creates an unknown topic with the broker defaults when allowed, and
// waits briefly until this node serves it, so the client's next request finds it.
func (s *Server) autoCreate(c *conn, name string, allowed bool) (cluster.Topic, int16) {
	if err := cluster.ValidTopicName(name); err != nil {
		return cluster.Topic{}, kerr.InvalidTopicException.Code
	}
	if !allowed || cluster.IsInternalTopic(name) {
		return cluster.Topic{}, kerr.UnknownTopicOrPartition.Code
	}
	ctx, cancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	defer cancel()
	_, err := s.createTopic(ctx, topicRequest{name: name, partitions: -1, replicationFactor: -1})
	if errors.Is(err, kerr.TopicAlreadyExists) {
		// Another request created it first (createTopic reports that as a Kafka
		// error): wait until this node serves it too.
		err = s.waitTopic(ctx, name)
	}
	if err != nil {
		c.logger.Warn("auto-create topic failed", "topic", name, "err", err)
		return cluster.Topic{}, kerr.LeaderNotAvailable.Code
	}
	t, ok := s.cache.Topic(name)
	if !ok {
		return cluster.Topic{}, kerr.LeaderNotAvailable.Code
	}
	return t, 0
}

// waitTopic waits until the metadata cache lists topic name and the local partitions
// reflect that revision.
func (s *Server) waitTopic(ctx context.Context, name string) error {
	for {
		snap := s.cache.Snapshot()
		if _, ok := snap.Topic(name); ok {
			return s.parts.WaitApplied(ctx, snap.Revision())
		}
		select {
		case <-snap.Changed():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
