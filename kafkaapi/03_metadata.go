package kafkaapi

// Metadata, key 3, versions 0..12.
//
// Behaviour: every live broker with its advertised address on the listener the
// client came in on (a broker without a listener of that name is left out, as in
// Kafka); the controller id (-1 while there is none); the requested topics, or all
// of them when the list is null (v1+) or empty (v0). Each partition lists its leader (LEADER_NOT_AVAILABLE and -1
// when the leader has no live session), leader epoch (v7+), replicas, ISR and
// offline replicas (v5+). A node names only leaders it knows to be current: while its
// view of the cluster may be stale (after a pause of the process or a loss of its
// session, until its metadata has caught up with etcd: Config.ViewCurrent) the answer
// waits up to staleViewWait, and if the view is still stale then, every partition is
// LEADER_NOT_AVAILABLE, so that clients ask another broker; and it never names itself
// leader of a partition its replica does not lead now (a broker without a certainly
// valid session leads nothing). A partition whose leader is named but cannot be
// named yet (its registration has just ended, or this node has not applied its
// election) is waited for up to leaderSettleWait before it is LEADER_NOT_AVAILABLE.
// The answer is read from one snapshot of the metadata. Unknown topics are created
// with the broker defaults when auto.create.topics.enable is on and the request
// allows it (v0..v3 always do; v4+ carry allow_auto_topic_creation); otherwise
// UNKNOWN_TOPIC_OR_PARTITION. Invalid names get INVALID_TOPIC_EXCEPTION.
//
// Topic ids (v10+) are reported with each topic (KIP-848 assignments and other
// newer APIs name topics by id); a request may name a topic by id alone (v10+),
// UNKNOWN_TOPIC_ID if there is none with that id.
//
// Authorization, as in Kafka: a listing of all topics leaves out those the client
// may not DESCRIBE; a topic named in the request without DESCRIBE answers
// TOPIC_AUTHORIZATION_FAILED (without saying whether it exists). Creating an unknown
// topic needs CREATE on the cluster or on the topic (TOPIC_AUTHORIZATION_FAILED,
// nothing created). Asked for (v8), the authorized operations of the cluster (0
// without DESCRIBE on it) and of each topic are reported; without an authorizer they
// are Kafka's "not known" value.

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

// authorizedOperationsOmitted is Kafka's value for "authorized operations were not
// requested or are not known" (INT32_MIN).
const authorizedOperationsOmitted = -2147483648

func init() {
	register(api[*kmsg.MetadataRequest]{
		min: 0, max: 12,
		handle:  (*Server).handleMetadata,
		entries: func(r *kmsg.MetadataRequest) int { return len(r.Topics) },
	})
}

func (s *Server) handleMetadata(c *conn, _ *RequestHeader, req *kmsg.MetadataRequest) kmsg.Response {
	current := s.viewCurrent(c)
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	var names []string
	var unknownIDs [][16]byte
	for _, t := range req.Topics {
		switch {
		case all:
		case t.Topic != nil:
			names = append(names, *t.Topic)
		case t.TopicID != [16]byte{}:
			if name, ok := s.topicByID(t.TopicID); ok {
				names = append(names, name)
			} else {
				unknownIDs = append(unknownIDs, t.TopicID)
			}
		}
	}
	// Unknown topics are created first (or refused): the answer then describes them.
	refused := make(map[string]int16)
	allowCreate := !s.dynamic().DisableAutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	mayDescribe := c.allowedTopics(acl.OpDescribe)
	for _, name := range names {
		if !mayDescribe(name) {
			refused[name] = kerr.TopicAuthorizationFailed.Code
			continue
		}
		if _, ok := s.cache.Topic(name); !ok {
			if allowCreate && !c.mayCluster(acl.OpCreate) && !c.allowed(acl.OpCreate, acl.ResourceTopic, name) {
				refused[name] = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if _, code := s.autoCreate(c, name, allowCreate); code != 0 {
				refused[name] = code
			}
		}
	}
	settle := time.NewTimer(leaderSettleWait)
	defer settle.Stop()
	poll := time.NewTicker(leaderSettlePoll)
	defer poll.Stop()
	for {
		snap := s.cache.Snapshot()
		resp, unsettled := s.describeCluster(c, req, snap, all, names, refused, current)
		for _, id := range unknownIDs {
			rt := kmsg.NewMetadataResponseTopic()
			rt.ErrorCode, rt.TopicID, rt.AuthorizedOperations = kerr.UnknownTopicID.Code, id, authorizedOperationsOmitted
			resp.Topics = append(resp.Topics, rt)
		}
		if !unsettled {
			return c.withAuthorizedOperations(req, resp)
		}
		select {
		case <-snap.Changed():
		case <-poll.C:
		case <-settle.C:
			return c.withAuthorizedOperations(req, resp)
		case <-c.ctx.Done():
			return resp
		}
	}
}

// withAuthorizedOperations reports the authorized operations the request asks
// for (v8), once an authorizer decides them: the cluster's (0 without DESCRIBE
// on it) and each described topic's.
func (c *conn) withAuthorizedOperations(req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) *kmsg.MetadataResponse {
	if c.srv.authorizer() == nil {
		return resp
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = 0
		if c.allowedCluster(acl.OpDescribe) {
			resp.AuthorizedOperations = c.authorizedOperations(acl.ResourceCluster, acl.ClusterName)
		}
	}
	if req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			if rt := &resp.Topics[i]; rt.ErrorCode == 0 && rt.Topic != nil {
				rt.AuthorizedOperations = c.authorizedOperations(acl.ResourceTopic, *rt.Topic)
			}
		}
	}
	return resp
}

// leaderSettleWait bounds how long Metadata waits for partitions whose leader is
// named but cannot be named yet: a leader whose registration has just ended (the
// controller moves its partitions within milliseconds, or it registers again), or
// this node before it has applied its election. Answering LEADER_NOT_AVAILABLE at
// once would send the client away for longer (franz-go asks again only 5 s later).
// leaderSettlePoll is how often it looks again without a metadata change (this
// node's own partitions change role just after the cache does).
const (
	leaderSettleWait = 500 * time.Millisecond
	leaderSettlePoll = 20 * time.Millisecond
)

// describeCluster answers Metadata from one snapshot: the live brokers (at their
// addresses on c's listener), the topics requested (every topic when all), and
// whether a partition's leader is named but cannot be named yet (see
// leaderSettleWait). current is false while this node's view of the cluster may be
// stale (viewCurrent); then no leader is named.
func (s *Server) describeCluster(c *conn, req *kmsg.MetadataRequest, snap *cluster.Snapshot, all bool, names []string, refused map[string]int16, current bool) (resp *kmsg.MetadataResponse, unsettled bool) {
	resp = req.ResponseKind().(*kmsg.MetadataResponse)
	live := make(map[int32]bool)
	for _, b := range snap.Brokers() {
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
	clusterID := snap.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = snap.Controller()
	resp.AuthorizedOperations = authorizedOperationsOmitted
	if all {
		names = names[:0]
		for _, t := range snap.Topics() {
			if c.may(acl.OpDescribe, acl.ResourceTopic, t.Name) {
				names = append(names, t.Name)
			}
		}
		sort.Strings(names)
	}
	for _, name := range names {
		t, ok := snap.Topic(name)
		code := refused[name]
		if !ok && code == 0 {
			code = kerr.UnknownTopicOrPartition.Code // deleted meanwhile
		}
		if code != 0 {
			n := name
			resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{
				ErrorCode: code, Topic: &n, AuthorizedOperations: authorizedOperationsOmitted,
			})
			continue
		}
		rt, wait := s.describeTopic(snap, t, live, current)
		resp.Topics = append(resp.Topics, rt)
		unsettled = unsettled || wait
	}
	return resp, unsettled
}

// describeTopic describes t's partitions, and reports whether one names a leader
// that cannot be named yet.
func (s *Server) describeTopic(snap *cluster.Snapshot, t cluster.Topic, live map[int32]bool, current bool) (rt kmsg.MetadataResponseTopic, unsettled bool) {
	name := t.Name
	rt = kmsg.MetadataResponseTopic{
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
		st, ok := snap.Partition(t.Name, i)
		named := ok && st.Leader != cluster.NoLeader
		if !named || !current || !live[st.Leader] || !s.nameable(t.Name, i, st.Leader) {
			unsettled = unsettled || named && current
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
	return rt, unsettled
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

// topicByID returns the name of the topic with id.
func (s *Server) topicByID(id [16]byte) (string, bool) {
	for _, t := range s.cache.Topics() {
		if t.ID == id {
			return t.Name, true
		}
	}
	return "", false
}
