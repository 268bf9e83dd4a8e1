package cluster

import (
	"reflect"
	"slices"
	"testing"
)

func TestOverview(t *testing.T) {
	// Brokers 1 and 2 live, 2 draining; 3 down. Partition 2 has no state yet.
	s := snapOf([]int32{1, 2}, false, [][]int32{{1, 2}, {3, 1}, {2, 3}}, []PartitionState{
		{Leader: 1, ISR: []int32{1, 2}},
		{Leader: NoLeader, ISR: []int32{3}},
	})
	s.draining = map[int32]bool{2: true}
	ov := s.Overview()
	if ov.Topics != 1 || ov.Partitions != 3 {
		t.Errorf("%d topics, %d partitions; want 1 and 3", ov.Topics, ov.Partitions)
	}
	wantBrokers := []BrokerSummary{
		{ID: 1, Host: "h", Port: 1, Live: true, Replicas: 2, Leaders: 1},
		{ID: 2, Host: "h", Port: 1, Live: true, Draining: true, Replicas: 2},
		{ID: 3, Replicas: 2},
	}
	if !reflect.DeepEqual(ov.Brokers, wantBrokers) {
		t.Errorf("brokers %+v\nwant %+v", ov.Brokers, wantBrokers)
	}
	wantOffline := []PartitionSummary{
		{Topic: "t", Partition: 1, Leader: NoLeader, Replicas: []int32{3, 1}, ISR: []int32{3}},
		{Topic: "t", Partition: 2, Leader: NoLeader, Replicas: []int32{2, 3}},
	}
	if !reflect.DeepEqual(ov.Offline, wantOffline) {
		t.Errorf("offline %+v\nwant %+v", ov.Offline, wantOffline)
	}
	// Partition 0 has its whole ISR; the offline ones lack members.
	if !reflect.DeepEqual(ov.UnderReplicated, wantOffline) {
		t.Errorf("under-replicated %+v\nwant %+v", ov.UnderReplicated, wantOffline)
	}

	if got := snapOf(nil, false, [][]int32{{1}}, nil).Overview(); len(got.Brokers) != 1 || got.Brokers[0].Live || len(got.Offline) != 1 {
		t.Errorf("a replica on a broker that is not live: %+v", got)
	}
}

func TestReplicasOnAndStranded(t *testing.T) {
	assign := [][]int32{{1, 2}, {2, 3}, {3}, {1, 3}}
	states := []PartitionState{
		{Leader: 1, ISR: []int32{1, 2}},
		{Leader: 3, ISR: []int32{3}},        // 2 out of sync: only 3 has the records
		{Leader: NoLeader, ISR: []int32{3}}, // no replica elsewhere
		{Leader: 1, ISR: []int32{1, 3}},     // 3 is down, 1 live in sync
	}
	for _, tc := range []struct {
		name     string
		live     []int32
		id       int32
		on       []string
		stranded []string
	}{
		{name: "live broker: nothing stranded", live: []int32{1, 2, 3}, id: 3, on: []string{"t/1", "t/2", "t/3"}},
		{name: "down broker, others in sync", live: []int32{1, 2}, id: 3, on: []string{"t/1", "t/2", "t/3"},
			stranded: []string{"t/1", "t/2"}},
		{name: "down broker with an in-sync live peer", live: []int32{1, 3}, id: 2, on: []string{"t/0", "t/1"}},
		{name: "holds nothing", live: []int32{1, 2, 3}, id: 4},
		{name: "down and nobody else live", live: nil, id: 1, on: []string{"t/0", "t/3"}, stranded: []string{"t/0", "t/3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapOf(tc.live, false, assign, states)
			if got := s.ReplicasOn(tc.id); !slices.Equal(got, tc.on) {
				t.Errorf("ReplicasOn(%d) = %v, want %v", tc.id, got, tc.on)
			}
			if got := s.Stranded(tc.id); !slices.Equal(got, tc.stranded) {
				t.Errorf("Stranded(%d) = %v, want %v", tc.id, got, tc.stranded)
			}
		})
	}
}
