package appliance

import (
	"errors"
	"slices"
	"testing"

	"skiff/cluster"
	"skiff/replication"
)

func TestProposeISR(t *testing.T) {
	// Leader 1 (registration 10) with follower 2 in sync under registration 20.
	cur := cluster.PartitionState{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7}.
		WithISR([]int32{1, 2}, func(b int32) int64 { return map[int32]int64{1: 10, 2: 20}[b] })
	registered := map[int32]int64{1: 10, 2: 21, 3: 30} // 2 re-registered since; 4 unknown
	epochOf := func(b int32) int64 { return registered[b] }

	tests := []struct {
		name     string
		proposed []int32
		wantISR  []int32
		want     map[int32]int64
		wantErr  bool
	}{
		{name: "admit registered", proposed: []int32{1, 2, 3}, wantISR: []int32{1, 2, 3},
			want: map[int32]int64{1: 10, 2: 20, 3: 30}}, // 2 keeps the epoch it is in sync under
		{name: "shrink", proposed: []int32{1}, wantISR: []int32{1}, want: map[int32]int64{1: 10}},
		{name: "unregistered left out", proposed: []int32{1, 2, 3, 4}, wantISR: []int32{1, 2, 3},
			want: map[int32]int64{1: 10, 2: 20, 3: 30}},
		{name: "shrink while an unregistered replica waits", proposed: []int32{1, 4}, wantISR: []int32{1},
			want: map[int32]int64{1: 10}},
		{name: "only unregistered", proposed: []int32{1, 2, 4}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, err := proposeISR(cur, 1, 10, tt.proposed, epochOf)
			if tt.wantErr {
				if !errors.Is(err, replication.ErrISRUnchanged) {
					t.Fatalf("err = %v, want ErrISRUnchanged", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
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
