package cluster

import (
	"slices"
	"testing"
)

func TestProposeISR(t *testing.T) {
	// Leader 1 (registration 10) with follower 2 in sync under registration 20.
	cur := PartitionState{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7}.
		WithISR([]int32{1, 2}, func(b int32) int64 { return map[int32]int64{1: 10, 2: 20}[b] })
	// A state written before broker epochs: its members have none.
	legacy := PartitionState{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7, ISR: []int32{1, 2}}
	registered := map[int32]int64{1: 10, 2: 21, 3: 30} // 2 re-registered since; 4 unknown
	epochOf := func(b int32) int64 { return registered[b] }

	tests := []struct {
		name     string
		from     *PartitionState // nil: cur
		proposed []int32
		wantISR  []int32
		want     map[int32]int64
		waits    bool // nothing to write: the ISR stays st's
	}{
		{name: "admit registered", proposed: []int32{1, 2, 3}, wantISR: []int32{1, 2, 3},
			want: map[int32]int64{1: 10, 2: 20, 3: 30}}, // 2 keeps the epoch it is in sync under
		{name: "shrink", proposed: []int32{1}, wantISR: []int32{1}, want: map[int32]int64{1: 10}},
		{name: "unregistered left out", proposed: []int32{1, 2, 3, 4}, wantISR: []int32{1, 2, 3},
			want: map[int32]int64{1: 10, 2: 20, 3: 30}},
		{name: "shrink while an unregistered replica waits", proposed: []int32{1, 4}, wantISR: []int32{1},
			want: map[int32]int64{1: 10}},
		{name: "only unregistered", proposed: []int32{1, 2, 4}, waits: true},
		{name: "no change", proposed: []int32{2, 1}, waits: true},
		{name: "legacy members get their current registration", from: &legacy, proposed: []int32{1, 2, 3},
			wantISR: []int32{1, 2, 3}, want: map[int32]int64{1: 10, 2: 21, 3: 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := cur
			if tt.from != nil {
				from = *tt.from
			}
			next, changed := ProposeISR(from, 1, 10, tt.proposed, epochOf)
			if changed == tt.waits {
				t.Fatalf("changed = %v, want %v (next %+v)", changed, !tt.waits, next)
			}
			if tt.waits {
				return
			}
			if !slices.Equal(next.ISR, tt.wantISR) {
				t.Fatalf("ISR = %v, want %v", next.ISR, tt.wantISR)
			}
			for _, b := range next.ISR {
				if got := next.EpochOf(b); got != tt.want[b] {
					t.Errorf("epoch of %d = %d, want %d", b, got, tt.want[b])
				}
			}
			if next.Leader != 1 || next.LeaderEpoch != 4 {
				t.Errorf("leader %d epoch %d, want 1 and 4", next.Leader, next.LeaderEpoch)
			}
		})
	}
}
