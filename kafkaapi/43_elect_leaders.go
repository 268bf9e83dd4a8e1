package kafkaapi

// ElectLeaders, key 43, versions 0..2 (KIP-183; unclean elections KIP-460).
//
// Behaviour: for each partition named (every partition when topics is null), a
// preferred election (v0, and election type 0) makes the first replica of the
// assignment leader; an unclean one (type 1) elects a leader for a partition
// that has none, from its in-sync replicas if one is live, else from any live
// replica (records only the old in-sync replicas had are lost). The node writes
// the request to etcd and the controller holds the elections at its next plan,
// with its preferred-leader rebalance and its unclean election
// (cluster/elections.go); the answer waits for the outcome, up to timeout_ms
// (then REQUEST_TIMED_OUT; the election still happens, as in Kafka).
// Per partition, as Kafka's controller answers: UNKNOWN_TOPIC_OR_PARTITION;
// ELECTION_NOT_NEEDED when the preferred replica leads already (preferred) or a
// replica leads (unclean); PREFERRED_LEADER_NOT_AVAILABLE when the preferred
// replica is not live and in sync; ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica
// is live (unclean). With topics null, partitions that needed no election are
// left out of the answer. An unknown election type is INVALID_REQUEST.
//
// Authorization, as in Kafka: ALTER on the cluster; without it
// CLUSTER_AUTHORIZATION_FAILED for the request (v1+) and each partition named.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/cluster"
)

func init() {
	register(api[*kmsg.ElectLeadersRequest]{
		min: 0, max: 2,
		handle: (*Server).handleElectLeaders,
		entries: func(r *kmsg.ElectLeadersRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleElectLeaders(c *conn, _ *RequestHeader, req *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	typ := cluster.ElectPreferred
	if req.Version >= 1 {
		typ = cluster.ElectionType(req.ElectionType)
	}
	snap := s.cache.Snapshot()
	all := req.Topics == nil
	var named []cluster.TopicPartition
	if all {
		for _, t := range snap.Topics() {
			for p := range t.Partitions {
				named = append(named, cluster.TopicPartition{Topic: t.Name, Partition: p})
			}
		}
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			named = append(named, cluster.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	listed := named // what the answer lists; named shrinks to what may be elected
	codes := make(map[cluster.TopicPartition]int16, len(named))
	switch {
	case !c.allowedCluster(acl.OpAlter):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, tp := range named {
			codes[tp] = resp.ErrorCode
		}
		named = nil
		if all {
			listed = nil // the names of every partition are not the client's to learn
		}
	case typ != cluster.ElectPreferred && typ != cluster.ElectUnclean:
		for _, tp := range named {
			codes[tp] = kerr.InvalidRequest.Code
		}
		named = nil
	}
	var pending []cluster.TopicPartition
	for _, tp := range named {
		switch err := snap.ElectionNeeded(tp.Topic, tp.Partition, typ); {
		case err == nil:
			pending = append(pending, tp)
		case errors.Is(err, cluster.ErrElectionNotNeeded):
			codes[tp] = kerr.ElectionNotNeeded.Code
		case errors.Is(err, cluster.ErrNoEligibleLeader):
			codes[tp] = notEligible(typ)
		default:
			codes[tp] = kerr.UnknownTopicOrPartition.Code
		}
	}
	if len(pending) > 0 {
		s.awaitElections(c, typ, pending, time.Duration(req.TimeoutMillis)*time.Millisecond, codes)
	}
	return electLeadersAnswer(resp, req, listed, codes, all)
}

// notEligible is the code of an election that cannot be held.
func notEligible(typ cluster.ElectionType) int16 {
	if typ == cluster.ElectUnclean {
		return kerr.EligibleLeadersNotAvailable.Code
	}
	return kerr.PreferredLeaderNotAvailable.Code
}

// awaitElections asks the controller for elections of pending and waits up to
// timeout for their outcome, which it records in codes.
func (s *Server) awaitElections(c *conn, typ cluster.ElectionType, pending []cluster.TopicPartition, timeout time.Duration, codes map[cluster.TopicPartition]int16) {
	ctx, cancel := context.WithTimeout(c.ctx, max(timeout, 0))
	defer cancel()
	wctx, wcancel := context.WithTimeout(c.ctx, metadataWriteTimeout)
	rev, err := s.meta.RequestElections(wctx, typ, pending)
	wcancel()
	if err == nil {
		err = s.cache.WaitRevision(ctx, rev)
	}
	if err != nil {
		c.logger.Warn("elect leaders failed", "err", err)
		for _, tp := range pending {
			codes[tp] = kerr.RequestTimedOut.Code
		}
		return
	}
	for {
		snap := s.cache.Snapshot()
		waiting := pending[:0]
		for _, tp := range pending {
			switch {
			case snap.ElectionDone(tp.Topic, tp.Partition, typ):
				codes[tp] = 0
			case !snap.PendingElection(tp.Topic, tp.Partition):
				codes[tp] = notEligible(typ) // planned, and no leader could be elected
			default:
				waiting = append(waiting, tp)
			}
		}
		if pending = waiting; len(pending) == 0 {
			return
		}
		select {
		case <-snap.Changed():
		case <-ctx.Done():
			for _, tp := range pending {
				codes[tp] = kerr.RequestTimedOut.Code
			}
			return
		}
	}
}

// electLeadersAnswer lists the outcome of each partition in the request's order
// (with all, the partitions of every topic, less those that needed no election).
func electLeadersAnswer(resp *kmsg.ElectLeadersResponse, req *kmsg.ElectLeadersRequest, listed []cluster.TopicPartition, codes map[cluster.TopicPartition]int16, all bool) *kmsg.ElectLeadersResponse {
	add := func(tp cluster.TopicPartition) {
		code := codes[tp]
		if all && code == kerr.ElectionNotNeeded.Code {
			return
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition, rp.ErrorCode = tp.Partition, code
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	if all {
		for _, tp := range listed {
			add(tp)
		}
		return resp
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			add(cluster.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return resp
}
