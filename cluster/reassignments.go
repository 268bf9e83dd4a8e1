package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Reassignments (Kafka's AlterPartitionReassignments): a broker asked to move a
// partition's replicas writes the target under /skiff/reassignments/; the
// controller moves the partition there the way it drains a broker (reassign.go):
// it adds the target replicas that are missing, waits until every target replica
// is in the ISR, moves leadership onto a target replica if the leader is not one,
// then drops the replicas outside the target (the partition takes the target's
// order), and deletes the mark. Cancelling sets the target back to the replicas
// the partition had when the reassignment was asked for.

const prefixReassignments = Prefix + "reassignments/"

func reassignmentKey(topic string, p int32) string {
	return prefixReassignments + topic + "/" + formatBrokerID(p)
}

// reassignmentValue is /skiff/reassignments/<topic>/<p>.
type reassignmentValue struct {
	Version   int       `json:"version"`
	Target    []int32   `json:"target"`
	Original  []int32   `json:"original"`
	Requested time.Time `json:"requested"`
}

// Reassignment is a reassignment in progress: the replicas the partition moves to
// and those it had when it was asked for.
type Reassignment struct {
	Target, Original []int32
	modRev           int64
}

// ErrNoReassignment: a cancelled reassignment that is not in progress.
var ErrNoReassignment = fmt.Errorf("cluster: no reassignment in progress")

// Reassign asks for topic/p's replicas to become target (in that order), or,
// with target nil, cancels its reassignment in progress (ErrNoReassignment if
// none). The target must list distinct registered brokers (snap's); a target
// equal to the replicas with no reassignment in progress changes nothing.
func (s *Store) Reassign(ctx context.Context, snap *Snapshot, topic string, p int32, target []int32) error {
	// The controller rewrites the topic's value at each step of another
	// partition's move: try again on such a conflict.
	for range 10 {
		err := s.reassignOnce(ctx, snap, topic, p, target)
		if !errors.Is(err, ErrStalePartitionEpoch) {
			return err
		}
	}
	return fmt.Errorf("%w: %s/%d keeps changing", ErrStalePartitionEpoch, topic, p)
}

func (s *Store) reassignOnce(ctx context.Context, snap *Snapshot, topic string, p int32, target []int32) error {
	tkey, rkey := topicKey(topic), reassignmentKey(topic, p)
	resp, err := s.client.Txn(ctx).Then(clientv3.OpGet(tkey), clientv3.OpGet(rkey)).Commit()
	if err != nil {
		return fmt.Errorf("cluster: read %s/%d: %w", topic, p, err)
	}
	tkvs, rkvs := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
	if len(tkvs) == 0 {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	t, err := decodeTopic(tkey, tkvs[0].Value)
	if err != nil {
		return err
	}
	if p < 0 || int(p) >= len(t.Assignment) {
		return fmt.Errorf("%w: %s/%d", ErrUnknownPartition, topic, p)
	}
	current := t.Assignment[p]
	var cur *reassignmentValue
	if len(rkvs) > 0 {
		var v reassignmentValue
		if err := decode(rkey, rkvs[0].Value, &v, func() int { return v.Version }); err != nil {
			return err
		}
		cur = &v
	}
	var ops []clientv3.Op
	switch {
	case target == nil && cur == nil:
		return fmt.Errorf("%w: %s/%d", ErrNoReassignment, topic, p)
	case target == nil:
		target = cur.Original
	default:
		if err := validTarget(snap, target); err != nil {
			return err
		}
	}
	original := current
	if cur != nil {
		original = cur.Original
	}
	if cur == nil && slices.Equal(target, current) {
		return nil
	}
	v := reassignmentValue{Version: valueVersion, Target: target, Original: original, Requested: time.Now().UTC()}
	ops = append(ops, clientv3.OpPut(rkey, encode(v)))
	rmod := int64(0)
	if len(rkvs) > 0 {
		rmod = rkvs[0].ModRevision
	}
	tr, err := s.client.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(tkey), "=", tkvs[0].CreateRevision), // not recreated
		clientv3.Compare(clientv3.ModRevision(rkey), "=", rmod),
	).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("cluster: reassign %s/%d: %w", topic, p, err)
	}
	if !tr.Succeeded {
		return fmt.Errorf("%w: %s/%d changed meanwhile", ErrStalePartitionEpoch, topic, p)
	}
	return nil
}

// validTarget checks a reassignment's target: distinct registered brokers.
func validTarget(snap *Snapshot, target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: an empty replica list", ErrInvalidReplicaAssignment)
	}
	for i, b := range target {
		if slices.Contains(target[:i], b) {
			return fmt.Errorf("%w: broker %d listed twice", ErrInvalidReplicaAssignment, b)
		}
		if _, ok := snap.Broker(b); !ok {
			return fmt.Errorf("%w: broker %d is not live", ErrInvalidReplicaAssignment, b)
		}
	}
	return nil
}

// Reassignments returns the reassignments in progress.
func (s *Snapshot) Reassignments() map[TopicPartition]Reassignment { return s.reassignments }

func parseReassignmentKey(key string) (string, int32, bool) {
	return parseTopicPartitionKey(strings.TrimPrefix(key, prefixReassignments))
}

// decodeReassignment reads a reassignment mark written at modRev.
func decodeReassignment(key string, value []byte, modRev int64) (Reassignment, error) {
	var v reassignmentValue
	if err := decode(key, value, &v, func() int { return v.Version }); err != nil {
		return Reassignment{}, err
	}
	return Reassignment{Target: v.Target, Original: v.Original, modRev: modRev}, nil
}

// planReassignment decides the next step of moving a partition with replicas and
// state st to target; done when it is there.
func planReassignment(snap *Snapshot, replicas []int32, st PartitionState, target []int32) (step reassignStep, ok, done bool) {
	var adding []int32
	for _, r := range target {
		if !slices.Contains(replicas, r) {
			adding = append(adding, r)
		}
	}
	switch {
	case len(adding) > 0:
		step.replicas = append(slices.Clone(replicas), adding...)
		step.reason = fmt.Sprintf("reassignment to %v: adding replicas %v", target, adding)
		return step, true, false
	case slices.ContainsFunc(target, func(r int32) bool { return !snap.inSync(st, r) }):
		return step, false, false // the new replicas are catching up
	case !slices.Contains(target, st.Leader):
		next := PartitionState{Leader: target[0], LeaderEpoch: st.LeaderEpoch + 1, ISR: slices.Clone(st.ISR), ISREpochs: slices.Clone(st.ISREpochs)}
		step.replicas, step.next = replicas, &next
		step.reason = fmt.Sprintf("reassignment to %v: moving leadership onto it", target)
		return step, true, false
	case !slices.Equal(replicas, target):
		next := PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch}.WithISR(
			slices.DeleteFunc(slices.Clone(st.ISR), func(b int32) bool { return !slices.Contains(target, b) }), st.EpochOf)
		step.replicas, step.next = slices.Clone(target), &next
		step.reason = fmt.Sprintf("reassignment to %v: dropping the other replicas", target)
		return step, true, false
	}
	return step, false, true
}

// planReassignments decides the next step of every reassignment in progress, and
// returns the marks of those that are done.
func planReassignments(snap *Snapshot) (steps []reassignStep, done map[string]int64) {
	done = map[string]int64{}
	for tp, ra := range snap.reassignments {
		t, ok := snap.Topic(tp.Topic)
		st, okp := snap.Partition(tp.Topic, tp.Partition)
		if !ok || !okp || int(tp.Partition) >= len(t.Assignment) {
			done[reassignmentKey(tp.Topic, tp.Partition)] = ra.modRev // the topic is gone
			continue
		}
		step, ok, finished := planReassignment(snap, t.Assignment[tp.Partition], st, ra.Target)
		if finished {
			done[reassignmentKey(tp.Topic, tp.Partition)] = ra.modRev
		}
		if ok {
			step.topic, step.partition = tp.Topic, tp.Partition
			steps = append(steps, step)
		}
	}
	return steps, done
}
