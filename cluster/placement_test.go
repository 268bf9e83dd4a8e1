package cluster

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// brokersOf returns brokers 1..len(racks), broker i+1 on racks[i] ("" for none).
func brokersOf(racks ...string) []Broker {
	out := make([]Broker, len(racks))
	for i, r := range racks {
		out[i] = Broker{ID: int32(i + 1), Host: "h", Port: 9092, Rack: r}
	}
	return out
}

func TestPlaceReplicas(t *testing.T) {
	for _, tc := range []struct {
		name    string
		brokers []Broker
		count   int32
		rf      int16
		// minRacks is the least number of distinct racks every partition must span.
		minRacks int
		// maxReplicaSkew bounds max-min of the replicas per broker.
		maxReplicaSkew int
	}{
		{name: "no racks, 12 partitions on 3 brokers", brokers: brokersOf("", "", ""), count: 12, rf: 1, minRacks: 1},
		{name: "no racks, RF 2", brokers: brokersOf("", "", "", ""), count: 10, rf: 2, minRacks: 2, maxReplicaSkew: 1},
		{name: "racks, RF 3 over 3 racks", brokers: brokersOf("a", "a", "b", "b", "c", "c"), count: 12, rf: 3, minRacks: 3},
		{name: "uneven racks", brokers: brokersOf("a", "a", "a", "b"), count: 8, rf: 2, minRacks: 2, maxReplicaSkew: 6},
		{name: "RF above the rack count", brokers: brokersOf("a", "a", "b", "b"), count: 8, rf: 3, minRacks: 2, maxReplicaSkew: 1},
		{name: "RF equals the broker count", brokers: brokersOf("a", "b", "c"), count: 6, rf: 3, minRacks: 3},
		{name: "some brokers without a rack", brokers: brokersOf("a", "a", "", ""), count: 8, rf: 3, minRacks: 3, maxReplicaSkew: 4},
		{name: "one broker", brokers: brokersOf(""), count: 5, rf: 1, minRacks: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlaceReplicas(tc.brokers, nil, tc.count, tc.rf)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := PlaceReplicas(tc.brokers, nil, tc.count, tc.rf)
			if !slices.EqualFunc(got, again, slices.Equal[[]int32]) {
				t.Errorf("not deterministic: %v, then %v", got, again)
			}
			if len(got) != int(tc.count) {
				t.Fatalf("%d partitions placed, want %d", len(got), tc.count)
			}
			rackOf := map[int32]string{}
			for _, b := range tc.brokers {
				rackOf[b.ID] = b.Rack
				if b.Rack == "" {
					rackOf[b.ID] = fmt.Sprint("none-", b.ID)
				}
			}
			leaders, replicas := map[int32]int{}, map[int32]int{}
			for p, rs := range got {
				if len(rs) != int(tc.rf) {
					t.Fatalf("partition %d: %d replicas %v, want %d", p, len(rs), rs, tc.rf)
				}
				racks := map[string]bool{}
				for i, b := range rs {
					if _, ok := rackOf[b]; !ok {
						t.Fatalf("partition %d: unknown broker %d", p, b)
					}
					if slices.Contains(rs[:i], b) {
						t.Fatalf("partition %d lists broker %d twice: %v", p, b, rs)
					}
					racks[rackOf[b]] = true
					replicas[b]++
				}
				if len(racks) < tc.minRacks {
					t.Errorf("partition %d %v spans %d racks, want at least %d", p, rs, len(racks), tc.minRacks)
				}
				leaders[rs[0]]++
			}
			skew := func(m map[int32]int) int {
				lo, hi := int(tc.count)*int(tc.rf), 0
				for _, b := range tc.brokers {
					lo, hi = min(lo, m[b.ID]), max(hi, m[b.ID])
				}
				return hi - lo
			}
			// Leaders ignore racks: they spread as evenly as the count allows.
			wantSkew := 1
			if int(tc.count)%len(tc.brokers) == 0 {
				wantSkew = 0
			}
			if s := skew(leaders); s > wantSkew {
				t.Errorf("leaders per broker %v: skew %d, want at most %d", leaders, s, wantSkew)
			}
			if s := skew(replicas); s > tc.maxReplicaSkew {
				t.Errorf("replicas per broker %v: skew %d, want at most %d", replicas, s, tc.maxReplicaSkew)
			}
			t.Logf("%v", got)
		})
	}
}

// TestPlaceReplicasExistingLoad: one-partition topics placed one after the other (each
// seeing the load of the ones before) rotate their leaders over the brokers, and a new
// broker gets the next leaders, while a topic of its own still spreads evenly.
func TestPlaceReplicasExistingLoad(t *testing.T) {
	brokers := brokersOf("", "", "")
	load := map[int32]BrokerLoad{}
	leaders := map[int32]int{}
	for range 9 {
		got, err := PlaceReplicas(brokers, load, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		b := got[0][0]
		leaders[b]++
		l := load[b]
		l.Leaders++
		l.Replicas++
		load[b] = l
	}
	if leaders[1] != 3 || leaders[2] != 3 || leaders[3] != 3 {
		t.Fatalf("nine one-partition topics led %v, want 3 each", leaders)
	}

	brokers = append(brokers, Broker{ID: 4, Host: "h", Port: 9092})
	got, _ := PlaceReplicas(brokers, load, 1, 1)
	if got[0][0] != 4 {
		t.Errorf("a one-partition topic after broker 4 joined is led by %d, want 4 (it leads nothing yet)", got[0][0])
	}
	got, _ = PlaceReplicas(brokers, load, 12, 1)
	per := map[int32]int{}
	for _, rs := range got {
		per[rs[0]]++
	}
	for _, b := range brokers {
		if per[b.ID] != 3 {
			t.Fatalf("12 partitions on 4 brokers led %v, want 3 each", per)
		}
	}
}

func TestPlaceReplicasErrors(t *testing.T) {
	for _, tc := range []struct {
		brokers []Broker
		count   int32
		rf      int16
		want    error
	}{
		{brokersOf("", ""), 1, 3, ErrInvalidReplicationFactor},
		{nil, 1, 1, ErrInvalidReplicationFactor},
		{brokersOf(""), 1, 0, ErrInvalidReplicationFactor},
		{brokersOf(""), -1, 1, ErrInvalidPartitions},
	} {
		if _, err := PlaceReplicas(tc.brokers, nil, tc.count, tc.rf); !errors.Is(err, tc.want) {
			t.Errorf("%d brokers, count %d, RF %d: %v, want %v", len(tc.brokers), tc.count, tc.rf, err, tc.want)
		}
	}
	if got, err := PlaceReplicas(brokersOf(""), nil, 0, 1); err != nil || len(got) != 0 {
		t.Errorf("zero partitions: %v, %v", got, err)
	}
}

func TestRackAlternating(t *testing.T) {
	brokers := []Broker{{ID: 5, Rack: "b"}, {ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}, {ID: 4, Rack: "c"}, {ID: 6}}
	order, _ := rackAlternating(brokers)
	if want := []int32{1, 3, 4, 6, 2, 5}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

func TestPlacementBrokers(t *testing.T) {
	s := snapOf([]int32{1, 2, 3}, false, [][]int32{{1}}, nil)
	s.draining = map[int32]bool{2: true, 7: true}
	var ids []int32
	for _, b := range s.PlacementBrokers() {
		ids = append(ids, b.ID)
	}
	if !slices.Equal(ids, []int32{1, 3}) {
		t.Errorf("placement brokers %v, want [1 3] (2 drains)", ids)
	}
}

func TestSnapshotLoad(t *testing.T) {
	s := snapOf([]int32{1, 2, 3}, false, [][]int32{{1, 2}, {2, 3}, {1, 3}}, nil)
	got := s.Load()
	want := map[int32]BrokerLoad{1: {Replicas: 2, Leaders: 2}, 2: {Replicas: 2, Leaders: 1}, 3: {Replicas: 2}}
	if len(got) != len(want) {
		t.Fatalf("load %v, want %v", got, want)
	}
	for b, w := range want {
		if got[b] != w {
			t.Errorf("broker %d: %+v, want %+v", b, got[b], w)
		}
	}
}
