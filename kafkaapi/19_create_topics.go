package kafkaapi

// CreateTopics, key 19, versions 0..7 (5+ are flexible and answer the topic's
// configs, KIP-525; 6 is 5 with the strict mutation quota, KIP-599; 7 answers the
// topic id, KIP-516).
//
// Behaviour: each topic is validated (name: INVALID_TOPIC_EXCEPTION; partition count:
// INVALID_PARTITIONS; replication factor against live brokers:
// INVALID_REPLICATION_FACTOR; manual assignment: INVALID_REPLICA_ASSIGNMENT; configs:
// INVALID_CONFIG; existing: TOPIC_ALREADY_EXISTS; a name twice in one request:
// INVALID_REQUEST) and placed; then all the topics of the request are written to
// etcd together (cluster.Store.CreateTopics: one transaction, each topic a nested
// transaction of its own, so TOPIC_ALREADY_EXISTS is per topic), and the answer
// waits until this node serves them all or timeout_ms passes (REQUEST_TIMED_OUT
// for each topic written): one raft commit and one round of partition opening per
// request instead of one per topic. validate_only (v1+)
// checks without creating. -1 partitions or replication factor (v4+, accepted at
// every version) take num.partitions and default.replication.factor. From v5 the
// answer lists the configs of the topic created (or that validate_only would create)
// as DescribeConfigs would, when the client may DESCRIBE_CONFIGS it (else
// topic_config_error_code TOPIC_AUTHORIZATION_FAILED).
//
// Quota: the partitions created count against the client's controller_mutation_rate
// (mutationQuota; validate_only does not count); from v6 a topic asked for while the
// client is in debt is refused with THROTTLING_QUOTA_EXCEEDED.
//
// Authorization, as in Kafka: CREATE on the cluster, or else on each topic
// (TOPIC_AUTHORIZATION_FAILED, not created).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

func init() {
	register(api[*kmsg.CreateTopicsRequest]{
		min: 0, max: 7,
		handle:  (*Server).handleCreateTopics,
		entries: createTopicsEntries,
	})
}

// createTopicsEntries counts the partitions each topic would have (up to the most a
// topic may have: more is answered INVALID_PARTITIONS) and its configs.
func createTopicsEntries(r *kmsg.CreateTopicsRequest) (n int) {
	for _, t := range r.Topics {
		n += topicEntries(min(max(int(t.NumPartitions), len(t.ReplicaAssignment)), cluster.MaxPartitions+1))
		n += len(t.Configs)
	}
	return n
}

func (s *Server) handleCreateTopics(c *conn, hdr *RequestHeader, req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	ctx, cancel := context.WithTimeout(c.ctx, requestTimeout(req.TimeoutMillis))
	defer cancel()
	count := countNames(req.Topics, func(t *kmsg.CreateTopicsRequestTopic) string { return t.Topic })
	mutations := mutationQuota{c: c, hdr: hdr, strict: req.GetVersion() >= 6}
	var (
		planned   []cluster.Topic // the topics to write, in order
		plannedAt []int           // their index in resp.Topics
		recorded  []bool          // their partitions are counted in the mutation quota
	)
	mayCreate := func(string) bool { return true }
	if !c.mayCluster(acl.OpCreate) {
		mayCreate = c.allowedTopics(acl.OpCreate)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		var err error
		if count[t.Topic] > 1 {
			err = newKafkaError(kerr.InvalidRequest, "topic %q is listed more than once", t.Topic)
		} else if !mayCreate(t.Topic) {
			err = newKafkaError(kerr.TopicAuthorizationFailed, "Authorization failed.")
		} else {
			r := topicRequest{name: t.Topic, partitions: t.NumPartitions, replicationFactor: t.ReplicationFactor, validateOnly: req.ValidateOnly}
			if len(t.ReplicaAssignment) > 0 {
				r.assignment, err = replicaAssignment(t.ReplicaAssignment)
			}
			if len(t.Configs) > 0 {
				r.configs = make(map[string]string, len(t.Configs))
				for _, kv := range t.Configs {
					if kv.Value == nil {
						continue // null: use the default
					}
					r.configs[kv.Name] = *kv.Value
				}
			}
			if err == nil && !r.validateOnly {
				if qerr := mutations.admit(); qerr != nil {
					// The topic's own error comes before the quota's, as in Kafka.
					v := r
					v.validateOnly = true
					if _, err = s.planTopic(v, planned); err == nil {
						err = qerr
					}
				}
			}
			if err == nil {
				var tp cluster.Topic
				if tp, err = s.planTopic(r, planned); err == nil {
					if r.validateOnly {
						rt.TopicID, rt.NumPartitions, rt.ReplicationFactor = tp.ID, tp.Partitions, tp.ReplicationFactor
						s.answerTopicConfigs(c, &rt, tp)
					} else {
						// Counted now, as Kafka's controller counts each topic
						// it accepts, so that the next topic of a strict
						// request meets the debt; a name the cache already has
						// is left to the write to refuse, and not counted.
						_, exists := s.cache.Topic(r.name)
						if !exists {
							mutations.record(tp.Partitions)
						}
						planned, plannedAt, recorded = append(planned, tp), append(plannedAt, len(resp.Topics)), append(recorded, !exists)
					}
				}
			}
		}
		setCreateError(&rt, err)
		resp.Topics = append(resp.Topics, rt)
	}
	if len(planned) == 0 {
		return resp
	}
	// One write for every topic of the request, then one wait until this node
	// serves them all: the nodes open the partitions of all of them at once.
	var created []int // indexes in planned
	var lastRev int64
	for i, res := range s.meta.CreateTopics(ctx, planned) {
		rt, tp := &resp.Topics[plannedAt[i]], planned[i]
		if res.Err != nil {
			setCreateError(rt, createError(tp.Name, res.Err))
			continue
		}
		if !recorded[i] {
			mutations.record(tp.Partitions)
		}
		rt.TopicID, rt.NumPartitions, rt.ReplicationFactor = tp.ID, tp.Partitions, tp.ReplicationFactor
		s.answerTopicConfigs(c, rt, tp)
		created = append(created, i)
		lastRev = max(lastRev, res.Rev)
	}
	if lastRev == 0 {
		return resp
	}
	if err := s.waitApplied(ctx, lastRev); err != nil {
		for _, i := range created {
			rt := &resp.Topics[plannedAt[i]]
			rt.TopicID, rt.NumPartitions, rt.ReplicationFactor, rt.Configs = [16]byte{}, -1, -1, nil
			setCreateError(rt, notServedError(planned[i].Name, err))
		}
	}
	return resp
}

// setCreateError puts err, if any, in rt.
func setCreateError(rt *kmsg.CreateTopicsResponseTopic, err error) {
	if err == nil {
		return
	}
	rt.ErrorCode = errorCode(err)
	var ke *kafkaError
	if errors.As(err, &ke) {
		msg := ke.msg
		rt.ErrorMessage = &msg
	}
}

// answerTopicConfigs lists the configs of the topic created in rt (v5+), as
// DescribeConfigs would, if the client may describe them.
func (s *Server) answerTopicConfigs(c *conn, rt *kmsg.CreateTopicsResponseTopic, tp cluster.Topic) {
	if code := c.configsRefused(acl.OpDescribeConfigs, kmsg.ConfigResourceTypeTopic, tp.Name); code != nil {
		rt.ConfigErrorCode = code.Code
		return
	}
	for _, e := range cluster.DescribeTopicConfigs(tp, s.brokerDefaults()) {
		rc := kmsg.NewCreateTopicsResponseTopicConfig()
		rc.Name, rc.Value, rc.ReadOnly, rc.IsSensitive = e.Name, kmsg.StringPtr(e.Value), e.ReadOnly, e.Sensitive
		rc.Source = int8(e.Source)
		rt.Configs = append(rt.Configs, rc)
	}
}

// replicaAssignment orders an explicit assignment by partition. As in Kafka, the
// partitions must be 0..n-1, each listed once (INVALID_REPLICA_ASSIGNMENT).
func replicaAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) ([][]int32, error) {
	out := make([][]int32, len(as))
	for _, a := range as {
		if a.Partition < 0 || int(a.Partition) >= len(as) || out[a.Partition] != nil {
			return nil, newKafkaError(kerr.InvalidReplicaAssignment, "partitions of a replica assignment must be 0..%d, each listed once; got partition %d", len(as)-1, a.Partition)
		}
		out[a.Partition] = a.Replicas
		if out[a.Partition] == nil {
			out[a.Partition] = []int32{}
		}
	}
	return out, nil
}
