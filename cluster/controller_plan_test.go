package cluster

import (
	"slices"
	"testing"
	"time"
)

// snapOf builds a snapshot with live brokers and one topic "t" whose partition p has
// replicas assign[p] and state states[p].
func snapOf(live []int32, unclean bool, assign [][]int32, states []PartitionState) *Snapshot {
	s := &Snapshot{brokers: map[int32]Broker{}, topics: map[string]*topicState{}, names: []string{"t"}}
	for _, b := range live {
		s.brokers[b] = Broker{ID: b, Host: "h", Port: 1, Epoch: 100 * int64(b)} // broker b's current registration
	}
	t := Topic{Name: "t", Partitions: int32(len(assign)), ReplicationFactor: int16(len(assign[0])), Assignment: assign}
	if unclean {
		t.Configs = map[string]string{ConfigUncleanLeaderElect: "true"}
	}
	ts := &topicState{topic: t}
	for i := range states {
		st := states[i]
		ts.parts = append(ts.parts, &st)
	}
	s.topics["t"] = ts
	return s
}

func TestPlanLeaders(t *testing.T) {
	for _, tc := range []struct {
		name      string
		live      []int32
		unclean   bool
		rebalance bool
		asked     []ElectionType // an election asked for the partition (ElectLeaders)
		replicas  []int32
		state     PartitionState
		want      *PartitionState // nil: no change
	}{
		{name: "leader live", live: []int32{1, 2, 3}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}}},
		{name: "a follower without a session leaves the ISR", live: []int32{1, 3}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}},
			want:  &PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 3}}},
		{name: "failover to the next ISR replica", live: []int32{2, 3}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}},
			want:  &PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}}},
		{name: "failover skips out-of-sync replicas", live: []int32{2, 3}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 3}},
			want:  &PartitionState{Leader: 3, LeaderEpoch: 5, ISR: []int32{3}}},
		{name: "RF 1 goes offline, keeping the last ISR member", live: []int32{2}, replicas: []int32{1},
			state: PartitionState{Leader: 1, LeaderEpoch: 0, ISR: []int32{1}},
			want:  &PartitionState{Leader: NoLeader, LeaderEpoch: 1, ISR: []int32{1}}},
		{name: "offline stays offline", live: []int32{2}, replicas: []int32{1},
			state: PartitionState{Leader: NoLeader, LeaderEpoch: 1, ISR: []int32{1}}},
		{name: "offline partition's replica returns", live: []int32{1, 2}, replicas: []int32{1},
			state: PartitionState{Leader: NoLeader, LeaderEpoch: 1, ISR: []int32{1}},
			want:  &PartitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1}}},
		{name: "no clean candidate", live: []int32{2, 3}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1}},
			want:  &PartitionState{Leader: NoLeader, LeaderEpoch: 5, ISR: []int32{1}}},
		{name: "unclean election", live: []int32{2, 3}, unclean: true, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1}},
			want:  &PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2}}},
		{name: "rebalance to the preferred replica", live: []int32{1, 2, 3}, rebalance: true, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3, 1}},
			want:  &PartitionState{Leader: 1, LeaderEpoch: 6, ISR: []int32{2, 3, 1}}},
		{name: "no rebalance when not asked", live: []int32{1, 2, 3}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3, 1}}},
		{name: "a restarted leader hands over to an in-sync replica", live: []int32{1, 2, 3}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, ISREpochs: []int64{99, 200, 300}},
			want:  &PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}}},
		{name: "a restarted follower leaves the ISR", live: []int32{1, 2, 3}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, ISREpochs: []int64{100, 199, 300}},
			want:  &PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 3}}},
		{name: "the sole replica restarted leads again", live: []int32{1}, replicas: []int32{1},
			state: PartitionState{Leader: 1, LeaderEpoch: 0, ISR: []int32{1}, ISREpochs: []int64{42}},
			want:  &PartitionState{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}}},
		{name: "whole cluster restarted: the preferred replica leads", live: []int32{1, 2}, replicas: []int32{1, 2},
			state: PartitionState{Leader: NoLeader, LeaderEpoch: 5, ISR: []int32{2, 1}, ISREpochs: []int64{7, 8}},
			want:  &PartitionState{Leader: 1, LeaderEpoch: 6, ISR: []int32{1}}},
		{name: "no rebalance to an out-of-sync preferred replica", live: []int32{1, 2, 3}, rebalance: true, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}}},
		{name: "an asked preferred election moves the leader", live: []int32{1, 2, 3}, asked: []ElectionType{ElectPreferred}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3, 1}},
			want:  &PartitionState{Leader: 1, LeaderEpoch: 6, ISR: []int32{2, 3, 1}}},
		{name: "an asked preferred election waits for an in-sync preferred replica", live: []int32{1, 2, 3}, asked: []ElectionType{ElectPreferred}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}}},
		{name: "an asked unclean election elects an out-of-sync replica", live: []int32{2, 3}, asked: []ElectionType{ElectUnclean}, replicas: []int32{1, 2, 3},
			state: PartitionState{Leader: NoLeader, LeaderEpoch: 5, ISR: []int32{1}},
			want:  &PartitionState{Leader: 2, LeaderEpoch: 6, ISR: []int32{2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapOf(tc.live, tc.unclean, [][]int32{tc.replicas}, []PartitionState{tc.state})
			for _, typ := range tc.asked {
				snap.elections = map[TopicPartition]election{{"t", 0}: {typ: typ}}
			}
			plan := planLeaders(snap, tc.rebalance)
			if tc.want == nil {
				if len(plan) != 0 {
					t.Fatalf("planned %+v, want nothing", plan[0].next)
				}
				return
			}
			if len(plan) != 1 {
				t.Fatalf("planned %d changes, want 1", len(plan))
			}
			got := plan[0].next
			if got.Leader != tc.want.Leader || got.LeaderEpoch != tc.want.LeaderEpoch || !slices.Equal(got.ISR, tc.want.ISR) {
				t.Fatalf("planned %+v, want %+v", got, *tc.want)
			}
			// A new leader's ISR is stamped with broker epochs; the leader with its current one.
			if got.Leader != NoLeader && len(got.ISREpochs) != len(got.ISR) {
				t.Fatalf("ISR %v with broker epochs %v", got.ISR, got.ISREpochs)
			}
			if got.Leader != NoLeader && got.EpochOf(got.Leader) != 100*int64(got.Leader) {
				t.Fatalf("leader %d stamped with broker epoch %d, its registration is %d", got.Leader, got.EpochOf(got.Leader), 100*int64(got.Leader))
			}
			if err := validatePartitionState(got, tc.state, tc.replicas); err != nil {
				t.Fatalf("planned an invalid state: %v", err)
			}
		})
	}
}

func TestPlanReassign(t *testing.T) {
	drain := func(s *Snapshot, ids ...int32) *Snapshot {
		s.draining = map[int32]bool{}
		for _, id := range ids {
			s.draining[id] = true
		}
		return s
	}
	for _, tc := range []struct {
		name      string
		live      []int32
		rf        int16 // the topic's replication factor
		replicas  []int32
		state     PartitionState
		draining  []int32
		target    []int32         // a reassignment in progress to these replicas
		wantDone  bool            // the reassignment is done: its mark goes
		wantReps  []int32         // nil: no step
		wantState *PartitionState // nil: state kept
	}{
		{name: "nothing draining", live: []int32{1, 2, 3}, rf: 2, replicas: []int32{1, 2},
			state: PartitionState{Leader: 1, ISR: []int32{1, 2}}},
		{name: "add a replacement", live: []int32{1, 2, 3}, rf: 2, replicas: []int32{1, 2}, draining: []int32{2},
			state:    PartitionState{Leader: 1, ISR: []int32{1, 2}},
			wantReps: []int32{1, 2, 3}},
		{name: "wait for the replacement to catch up", live: []int32{1, 2, 3}, rf: 2, replicas: []int32{1, 2, 3}, draining: []int32{2},
			state: PartitionState{Leader: 1, ISR: []int32{1, 2}}},
		{name: "drop the draining follower", live: []int32{1, 2, 3}, rf: 2, replicas: []int32{1, 2, 3}, draining: []int32{2},
			state:    PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}},
			wantReps: []int32{1, 3}, wantState: &PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 3}}},
		{name: "move leadership off the draining leader first", live: []int32{1, 2, 3}, rf: 2, replicas: []int32{1, 2, 3}, draining: []int32{1},
			state:    PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}},
			wantReps: []int32{1, 2, 3}, wantState: &PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{1, 2, 3}}},
		{name: "RF 1: add, then hand over", live: []int32{1, 2}, rf: 1, replicas: []int32{1}, draining: []int32{1},
			state:    PartitionState{Leader: 1, ISR: []int32{1}},
			wantReps: []int32{1, 2}},
		{name: "nowhere to go", live: []int32{1, 2}, rf: 2, replicas: []int32{1, 2}, draining: []int32{2},
			state: PartitionState{Leader: 1, ISR: []int32{1, 2}}},
		{name: "a reassignment adds the target replicas first", live: []int32{1, 2, 3}, rf: 2, replicas: []int32{1, 2}, target: []int32{2, 3},
			state:    PartitionState{Leader: 1, ISR: []int32{1, 2}},
			wantReps: []int32{1, 2, 3}},
		{name: "a reassignment waits for the new replicas in the ISR", live: []int32{1, 2, 3}, rf: 2, replicas: []int32{1, 2, 3}, target: []int32{2, 3},
			state: PartitionState{Leader: 1, ISR: []int32{1, 2}}},
		{name: "a reassignment moves leadership onto the target", live: []int32{1, 2, 3}, rf: 2, replicas: []int32{1, 2, 3}, target: []int32{2, 3},
			state:    PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}},
			wantReps: []int32{1, 2, 3}, wantState: &PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{1, 2, 3}}},
		{name: "a reassignment drops the other replicas, in the target's order", live: []int32{1, 2, 3}, rf: 2, replicas: []int32{1, 2, 3}, target: []int32{3, 2},
			state:    PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{1, 2, 3}},
			wantReps: []int32{3, 2}, wantState: &PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{2, 3}}},
		{name: "a reassignment is done, and the partition is not drained meanwhile", live: []int32{1, 2, 3}, rf: 2, replicas: []int32{2, 3}, target: []int32{2, 3},
			draining: []int32{3}, state: PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{2, 3}}, wantDone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := drain(snapOf(tc.live, false, [][]int32{tc.replicas}, []PartitionState{tc.state}), tc.draining...)
			snap.topics["t"].topic.ReplicationFactor = tc.rf
			if tc.target != nil {
				snap.reassignments = map[TopicPartition]Reassignment{{"t", 0}: {Target: tc.target, Original: tc.replicas, modRev: 7}}
			}
			plan, done := planReassign(snap)
			if _, ok := done[reassignmentKey("t", 0)]; ok != tc.wantDone {
				t.Fatalf("done %v, want %v", done, tc.wantDone)
			}
			if tc.wantReps == nil {
				if len(plan) != 0 {
					t.Fatalf("planned %+v, want nothing", plan[0])
				}
				return
			}
			if len(plan) != 1 || !slices.Equal(plan[0].replicas, tc.wantReps) {
				t.Fatalf("planned %+v, want replicas %v", plan, tc.wantReps)
			}
			got := plan[0].next
			switch {
			case tc.wantState == nil && got != nil:
				t.Fatalf("state changed to %+v", *got)
			case tc.wantState != nil && (got == nil || got.Leader != tc.wantState.Leader ||
				got.LeaderEpoch != tc.wantState.LeaderEpoch || !slices.Equal(got.ISR, tc.wantState.ISR)):
				t.Fatalf("state %+v, want %+v", got, *tc.wantState)
			}
			if got != nil {
				if err := validatePartitionState(*got, tc.state, plan[0].replicas); err != nil {
					t.Fatalf("invalid step: %v", err)
				}
			}
		})
	}
}

// TestDepartGrace: a broker whose registration ended without it leaving still counts
// as live for the grace, so a leader whose lease was revoked by mistake keeps its
// partitions if it registers again within it; one that left, or one past its grace,
// does not.
func TestDepartGrace(t *testing.T) {
	state := PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, ISREpochs: []int64{100, 200, 300}}
	replicas := [][]int32{{2, 1, 3}}
	all := snapOf([]int32{1, 2, 3}, false, replicas, []PartitionState{state})
	if planned, until := all.graced(time.Second, time.Now()); planned != all || !until.IsZero() {
		t.Fatalf("nothing departed: planned %p (want the snapshot), grace ends %v", planned, until)
	}
	start := time.Now()
	without2 := snapOf([]int32{1, 3}, false, replicas, []PartitionState{state})
	without2.departed = map[int32]departure{2: {b: all.brokers[2], at: start}}
	planned, until := without2.graced(time.Second, start.Add(100*time.Millisecond))
	if until != start.Add(time.Second) {
		t.Fatalf("grace ends %v after the departure, want 1s", until.Sub(start))
	}
	if ch := planLeaders(planned, false); len(ch) != 0 {
		t.Fatalf("within its grace, broker 2 lost its leadership or ISR place: %+v", ch)
	}
	if ch := planLeaders(without2, false); len(ch) != 1 || ch[0].next.Leader == 2 {
		t.Fatalf("without the grace broker 2 would have been replaced: %+v", ch)
	}
	planned, until = without2.graced(time.Second, start.Add(1100*time.Millisecond))
	if ch := planLeaders(planned, false); len(ch) != 1 || ch[0].next.Leader == 2 || !until.IsZero() {
		t.Fatalf("after its grace, broker 2 still leads: %+v (grace ends %v)", ch, until)
	}

	// A broker that left is not waited for.
	left := all.brokers[2]
	left.Leaving = true
	without2.departed[2] = departure{b: left, at: start}
	if planned, until := without2.graced(time.Second, start.Add(10*time.Millisecond)); planned != without2 || !until.IsZero() {
		t.Fatalf("a broker that left was given a grace until %v", until)
	}
}
