package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Draining a broker moves every replica it holds to other brokers, one partition at
// a time, the way Kafka reassigns partitions: the controller adds a new replica to the
// partition's assignment, the new replica copies the log as a follower until the
// leader takes it into the ISR, leadership moves off the draining broker if it had
// it, and the draining broker leaves the assignment and the ISR. Replicas are never
// fewer than before at any step. `skiff cluster remove-node` drains a broker before
// its etcd member is removed.

const prefixDraining = Prefix + "draining/"

func drainingKey(id int32) string { return prefixDraining + strconv.FormatInt(int64(id), 10) }

type drainingValue struct {
	Version   int       `json:"version"`
	Requested time.Time `json:"requested"`
}

// Drain marks broker id for draining (idempotent).
func (s *Store) Drain(ctx context.Context, id int32) error {
	v, _ := json.Marshal(drainingValue{Version: valueVersion, Requested: time.Now().UTC()})
	_, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(drainingKey(id)), "=", 0)).
		Then(clientv3.OpPut(drainingKey(id), string(v))).
		Commit()
	if err != nil {
		return fmt.Errorf("cluster: drain broker %d: %w", id, err)
	}
	return nil
}

// Undrain clears the draining mark of broker id (it may hold replicas again).
func (s *Store) Undrain(ctx context.Context, id int32) error {
	if _, err := s.client.Delete(ctx, drainingKey(id)); err != nil {
		return fmt.Errorf("cluster: undrain broker %d: %w", id, err)
	}
	return nil
}

func parseDrainingKey(key string) (int32, bool) {
	n, ok := parseKeyNumber(strings.TrimPrefix(key, prefixDraining))
	return n, ok && n >= 0
}

// Draining reports whether broker id is being drained.
func (s *Snapshot) Draining(id int32) bool { return s.draining[id] }

// ReplicasOn names ("topic/partition") the partitions whose assignment lists broker
// id: while there are any, the broker's node may not be removed.
func (s *Snapshot) ReplicasOn(id int32) []string {
	var out []string
	for _, t := range s.Topics() {
		for p, replicas := range t.Assignment {
			if slices.Contains(replicas, id) {
				out = append(out, fmt.Sprintf("%s/%d", t.Name, p))
			}
		}
	}
	return out
}

// Stranded names ("topic/partition") the partitions with a replica on broker id that
// draining cannot move while the broker is down: no other live broker is in their
// ISR, so only id has their records. It is empty while id is live.
func (s *Snapshot) Stranded(id int32) []string {
	if _, live := s.Broker(id); live {
		return nil
	}
	var out []string
	for _, t := range s.Topics() {
		for p, replicas := range t.Assignment {
			if !slices.Contains(replicas, id) {
				continue
			}
			st, _ := s.Partition(t.Name, int32(p))
			if !slices.ContainsFunc(st.ISR, func(r int32) bool { _, live := s.Broker(r); return live && r != id }) {
				out = append(out, fmt.Sprintf("%s/%d", t.Name, p))
			}
		}
	}
	return out
}

// SetReplicas replaces the replica list of one partition, and with it (when next is
// not nil) the partition's state, in one transaction guarded by both keys' revisions
// and fence. It is the controller's reassignment step; the partition epoch of next is
// set to the current one plus one.
func (s *Store) SetReplicas(ctx context.Context, topic string, partition int32, replicas []int32, next *PartitionState, fence ...clientv3.Cmp) (int64, error) {
	tkey, pkey := topicKey(topic), partitionKey(topic, partition)
	resp, err := s.client.Txn(ctx).Then(clientv3.OpGet(tkey), clientv3.OpGet(pkey)).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: read %s/%d: %w", topic, partition, err)
	}
	tkvs, pkvs := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
	if len(tkvs) == 0 || len(pkvs) == 0 {
		return 0, fmt.Errorf("%w: %s/%d", ErrUnknownPartition, topic, partition)
	}
	t, err := decodeTopic(tkey, tkvs[0].Value)
	if err != nil {
		return 0, err
	}
	cur, err := decodePartition(pkey, pkvs[0].Value)
	if err != nil {
		return 0, err
	}
	if int(partition) >= len(t.Assignment) {
		return 0, fmt.Errorf("%w: %s/%d", ErrUnknownPartition, topic, partition)
	}
	t.Assignment = slices.Clone(t.Assignment)
	t.Assignment[partition] = replicas
	ops := []clientv3.Op{clientv3.OpPut(tkey, encodeTopic(t))}
	if next != nil {
		if err := validatePartitionState(*next, cur, replicas); err != nil {
			return 0, err
		}
		n := *next
		n.PartitionEpoch = cur.PartitionEpoch + 1
		ops = append(ops, clientv3.OpPut(pkey, encodePartition(n)))
	}
	cmps := append([]clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(tkey), "=", tkvs[0].ModRevision),
		clientv3.Compare(clientv3.ModRevision(pkey), "=", pkvs[0].ModRevision),
	}, fence...)
	tr, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: write replicas of %s/%d: %w", topic, partition, err)
	}
	if !tr.Succeeded {
		return 0, fmt.Errorf("%w: %s/%d changed meanwhile", ErrStalePartitionEpoch, topic, partition)
	}
	return tr.Header.Revision, nil
}

// reassignStep is one step of moving replicas off draining brokers.
type reassignStep struct {
	topic     string
	partition int32
	replicas  []int32         // the new replica list
	next      *PartitionState // the new state, or nil to keep it
	reason    string
}

// planReassign decides the next step for every partition with a replica on a draining
// broker: add a live, non-draining broker (the one holding fewest replicas), wait until
// it is in the ISR, move leadership off the draining broker, then drop the draining
// broker from the replicas and the ISR.
//
// Partitions with a reassignment in progress (reassignments.go) follow it
// instead; its steps come first.
func planReassign(snap *Snapshot) ([]reassignStep, map[string]int64) {
	out, done := planReassignments(snap)
	if len(snap.draining) == 0 {
		return out, done
	}
	live := make(map[int32]bool)
	for _, b := range snap.Brokers() {
		live[b.ID] = true
	}
	load := make(map[int32]int)
	for _, t := range snap.Topics() {
		for _, r := range t.Assignment {
			for _, b := range r {
				load[b]++
			}
		}
	}
	for _, t := range snap.Topics() {
		for p, replicas := range t.Assignment {
			st, ok := snap.Partition(t.Name, int32(p))
			if _, moving := snap.reassignments[TopicPartition{t.Name, int32(p)}]; !ok || moving {
				continue
			}
			var drained []int32
			for _, r := range replicas {
				if snap.draining[r] {
					drained = append(drained, r)
				}
			}
			if len(drained) == 0 {
				continue
			}
			d := drained[0]
			kept := len(replicas) - len(drained)
			step := reassignStep{topic: t.Name, partition: int32(p)}
			switch {
			case kept < int(t.ReplicationFactor):
				// Add a replacement first.
				target := NoLeader
				for _, b := range snap.Brokers() {
					if live[b.ID] && !snap.draining[b.ID] && !slices.Contains(replicas, b.ID) &&
						(target == NoLeader || load[b.ID] < load[target]) {
						target = b.ID
					}
				}
				if target == NoLeader {
					continue // nowhere to move it
				}
				load[target]++
				step.replicas = append(slices.Clone(replicas), target)
				step.reason = fmt.Sprintf("adding broker %d to replace draining broker %d", target, d)
			default:
				// Every replacement must have caught up before the draining one goes.
				caughtUp := true
				for _, r := range replicas {
					if !snap.draining[r] && !slices.Contains(st.ISR, r) {
						caughtUp = false
					}
				}
				if !caughtUp {
					continue
				}
				if st.Leader == d {
					next := PartitionState{Leader: NoLeader, LeaderEpoch: st.LeaderEpoch + 1, ISR: slices.Clone(st.ISR), ISREpochs: slices.Clone(st.ISREpochs)}
					for _, r := range replicas {
						if r != d && live[r] && slices.Contains(st.ISR, r) {
							next.Leader = r
							break
						}
					}
					if next.Leader == NoLeader {
						continue
					}
					step.replicas, step.next = replicas, &next
					step.reason = fmt.Sprintf("moving leadership off draining broker %d", d)
				} else {
					next := PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch}.WithISR(
						slices.DeleteFunc(slices.Clone(st.ISR), func(b int32) bool { return b == d }), st.EpochOf)
					step.replicas = slices.DeleteFunc(slices.Clone(replicas), func(b int32) bool { return b == d })
					step.next = &next
					step.reason = fmt.Sprintf("draining broker %d leaves the replicas", d)
				}
			}
			out = append(out, step)
		}
	}
	return out, done
}
