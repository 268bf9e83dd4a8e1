package kafkaapi

// The group coordinator's changes of share-partition states (AlterShareGroupOffsets,
// DeleteShareGroupOffsets, DeleteGroups of a share group). A share-partition lives
// at the leader of its partition, which may be another node: the coordinator
// sends that node InitializeShareGroupState (a new start offset) or
// DeleteShareGroupState, which it applies to its in-memory window under the
// share-partition's lock and answers once durable. Writing the state topic from
// the coordinator instead would race the leader's own writes of its window (a
// later write of the old window would undo the change) and would need the leader
// fenced and reloaded, losing the acquisitions it had not written yet
// (docs/share-groups.md).

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
	"skiff/sharegroup"
)

// deleteShareState, as a shareTarget's Start, deletes the share-partition's state;
// it is also Kafka's uninitialized start offset of InitializeShareGroupState,
// which has the same effect here (the next load starts from share.auto.offset.reset).
const deleteShareState = -1

// shareTarget is one share-partition whose state the coordinator changes, and
// the code of the change.
type shareTarget struct {
	Topic     string
	ID        cluster.UUID
	Partition int32
	// Start is the new start offset (SPSO), or deleteShareState.
	Start int64
	Code  int16
}

// changeShareStates applies every target of group at its partition's leader: here
// directly, elsewhere with one request per leader, the leaders in parallel. A
// partition without a leader, or whose leader cannot be reached, gets
// LEADER_NOT_AVAILABLE (retriable: ask again once the partition has a leader);
// one whose leader does not answer before ctx ends REQUEST_TIMED_OUT.
func (s *Server) changeShareStates(ctx context.Context, group string, ts []*shareTarget) {
	byLeader := map[int32][]*shareTarget{}
	for _, t := range ts {
		st, ok := s.cache.Partition(t.Topic, t.Partition)
		switch {
		case !ok:
			t.Code = kerr.UnknownTopicOrPartition.Code
		case st.Leader == cluster.NoLeader:
			t.Code = kerr.LeaderNotAvailable.Code
		default:
			byLeader[st.Leader] = append(byLeader[st.Leader], t)
		}
	}
	var wg sync.WaitGroup
	for leader, lts := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if leader == s.cfg.NodeID {
				for _, t := range lts {
					t.Code = s.applyShareState(ctx, group, t.Topic, t.ID, t.Partition, t.Start)
				}
				return
			}
			s.sendShareStates(ctx, leader, group, lts)
		}()
	}
	wg.Wait()
}

// applyShareState changes the state of a share-partition led here: a new start
// offset, or deleted (start deleteShareState). It answers once that is durable.
func (s *Server) applyShareState(ctx context.Context, group, topic string, id cluster.UUID, partition int32, start int64) int16 {
	lp, code := s.localPartition(topic, partition)
	if code != 0 {
		return code
	}
	key := sharegroup.Key{Group: group, TopicID: id, Partition: partition}
	if start == deleteShareState {
		return s.cfg.Shares.DeleteState(ctx, key, topic, lp)
	}
	return s.cfg.Shares.ResetStart(ctx, key, topic, lp, start)
}

// sendShareStates sends the targets to their leader: InitializeShareGroupState
// for new start offsets, DeleteShareGroupState for deletions.
func (s *Server) sendShareStates(ctx context.Context, leader int32, group string, ts []*shareTarget) {
	type tp struct {
		id cluster.UUID
		p  int32
	}
	resetReq := kmsg.NewPtrInitializeShareGroupStateRequest()
	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	resetReq.GroupID, del.GroupID = group, group
	byTP := map[tp]*shareTarget{}
	for _, t := range ts {
		byTP[tp{t.ID, t.Partition}] = t
		if t.Start == deleteShareState {
			i := shareTopicIndex(len(del.Topics), func(i int) bool { return del.Topics[i].TopicID == t.ID })
			if i == len(del.Topics) {
				del.Topics = append(del.Topics, kmsg.DeleteShareGroupStateRequestTopic{TopicID: t.ID})
			}
			del.Topics[i].Partitions = append(del.Topics[i].Partitions, kmsg.DeleteShareGroupStateRequestTopicPartition{Partition: t.Partition})
			continue
		}
		i := shareTopicIndex(len(resetReq.Topics), func(i int) bool { return resetReq.Topics[i].TopicID == t.ID })
		if i == len(resetReq.Topics) {
			resetReq.Topics = append(resetReq.Topics, kmsg.InitializeShareGroupStateRequestTopic{TopicID: t.ID})
		}
		resetReq.Topics[i].Partitions = append(resetReq.Topics[i].Partitions, kmsg.InitializeShareGroupStateRequestTopicPartition{Partition: t.Partition, StartOffset: t.Start})
	}
	answered := func(id cluster.UUID, p int32, code int16) {
		if t := byTP[tp{id, p}]; t != nil {
			t.Code = code
			delete(byTP, tp{id, p})
		}
	}
	var errs []error
	if len(resetReq.Topics) > 0 {
		resp, err := s.parts.BrokerRequest(ctx, leader, resetReq)
		errs = append(errs, err)
		if err == nil {
			for _, rt := range resp.(*kmsg.InitializeShareGroupStateResponse).Topics {
				for _, rp := range rt.Partitions {
					answered(rt.TopicID, rp.Partition, rp.ErrorCode)
				}
			}
		}
	}
	if len(del.Topics) > 0 {
		resp, err := s.parts.BrokerRequest(ctx, leader, del)
		errs = append(errs, err)
		if err == nil {
			for _, rt := range resp.(*kmsg.DeleteShareGroupStateResponse).Topics {
				for _, rp := range rt.Partitions {
					answered(rt.TopicID, rp.Partition, rp.ErrorCode)
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		s.logger.Debug("change share-partition states at their leader", "group", group, "broker", leader, "err", err)
	}
	code := kerr.LeaderNotAvailable.Code // unanswered: the leader could not be reached
	if ctx.Err() != nil {
		code = kerr.RequestTimedOut.Code // or did not answer in time
	}
	for _, t := range byTP {
		t.Code = code
	}
}

// shareTopicIndex is the first index below n for which is holds, else n.
func shareTopicIndex(n int, is func(int) bool) int {
	for i := range n {
		if is(i) {
			return i
		}
	}
	return n
}
