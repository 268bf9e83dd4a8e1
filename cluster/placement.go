package cluster

import (
	"fmt"
	"slices"
)

// BrokerLoad is what one broker holds already, counted over every topic's assignment.
type BrokerLoad struct {
	// Replicas is the number of partition replicas assigned to the broker.
	Replicas int
	// Leaders is the number of partitions whose preferred leader (first replica) it
	// is: the controller's preferred-leader rebalance makes those the leaders it has.
	Leaders int
}

// Load counts, for every broker named in an assignment, its replicas and preferred
// leaderships over all topics of the snapshot; brokers holding nothing are absent.
func (s *Snapshot) Load() map[int32]BrokerLoad {
	load := make(map[int32]BrokerLoad)
	for _, name := range s.names {
		for _, replicas := range s.topics[name].topic.Assignment {
			for i, b := range replicas {
				l := load[b]
				l.Replicas++
				if i == 0 {
					l.Leaders++
				}
				load[b] = l
			}
		}
	}
	return load
}

// PlacementBrokers returns the brokers new replicas may go to: the live ones that are
// not being drained (a draining broker is emptied by the controller, so placing a new
// replica there would only make it move again).
func (s *Snapshot) PlacementBrokers() []Broker {
	var out []Broker
	for _, b := range s.Brokers() {
		if !s.draining[b.ID] {
			out = append(out, b)
		}
	}
	return out
}

// PlaceReplicas chooses the replicas of count new partitions with replication factor
// rf among brokers (the live ones), preferred leader first, as the controller places
// new topics and new partitions of a topic:
//
//   - Racks: brokers are ordered in Kafka's rack-alternating list (racks sorted by
//     name, brokers by id within a rack, then taken one per rack in turn: a1 b1 c1 a2
//     b2 ...). The replicas of one partition go to distinct racks while a rack without
//     one of them is left; once every rack has one (rf above the rack count) the next
//     replicas again go to distinct racks, and so on. With uneven racks this means a
//     small rack holds a replica of most partitions: rack safety comes first. A broker
//     without a rack counts as a rack of its own, so without racks every broker is one.
//   - Leaders: each partition's leader is the broker with the fewest leaders of this
//     placement (so a topic's leaders spread evenly: 12 partitions on 3 brokers give 4
//     leaders each), then the fewest leaders overall (load plus this placement, so that
//     many one-partition topics do not all lead on the same broker), then the fewest
//     replicas, then the next in the rack-alternating list after the previous leader.
//   - Followers: a broker on a rack this partition does not use yet, then with the
//     fewest replicas of this placement, then the fewest overall, then the next along
//     the list after the leader, skipping one more broker with every round of
//     partitions over the brokers (Kafka's replica shift: the followers of one
//     broker's partitions are not always the same brokers).
//
// load is what brokers hold already (Snapshot.Load); nil means nothing. The result is
// deterministic for the same input. Errors wrap ErrInvalidReplicationFactor (rf below
// 1 or above the broker count) or ErrInvalidPartitions (count below 0).
func PlaceReplicas(brokers []Broker, load map[int32]BrokerLoad, count int32, rf int16) ([][]int32, error) {
	switch {
	case count < 0:
		return nil, fmt.Errorf("%w: %d new partitions", ErrInvalidPartitions, count)
	case rf < 1:
		return nil, fmt.Errorf("%w: %d; it must be at least 1", ErrInvalidReplicationFactor, rf)
	case int(rf) > len(brokers):
		return nil, fmt.Errorf("%w: %d is larger than the %d live brokers", ErrInvalidReplicationFactor, rf, len(brokers))
	}
	order, racks := rackAlternating(brokers)
	n := len(order)
	rackCount := 0
	seen := map[string]bool{}
	for _, r := range racks {
		if !seen[r] {
			seen[r] = true
			rackCount++
		}
	}
	total := make([]BrokerLoad, n)  // load plus this placement
	placed := make([]BrokerLoad, n) // this placement only
	for i, b := range order {
		total[i] = load[b]
	}
	out := make([][]int32, count)
	cursor := 0 // where the search for the next leader starts
	for p := range out {
		leader := -1
		for k := range n {
			i := (cursor + k) % n
			if leader < 0 || less(
				[]int{placed[i].Leaders, total[i].Leaders, total[i].Replicas},
				[]int{placed[leader].Leaders, total[leader].Leaders, total[leader].Replicas}) {
				leader = i
			}
		}
		cursor = (leader + 1) % n
		// Ties among followers start a little further from the leader with every round
		// over the brokers (Kafka's replica shift), so that the followers of one broker's
		// partitions are not always the same brokers.
		shift := 0
		if n > 1 {
			shift = p / n % (n - 1)
		}
		chosen := []int{leader}
		used := map[string]bool{racks[leader]: true}
		for len(chosen) < int(rf) {
			if len(used) == rackCount {
				used = map[string]bool{}
			}
			best := -1
			var bestKey []int
			for k := range n - 1 {
				i := (leader + 1 + (shift+k)%(n-1)) % n
				if slices.Contains(chosen, i) {
					continue
				}
				key := []int{0, placed[i].Replicas, total[i].Replicas}
				if used[racks[i]] {
					key[0] = 1
				}
				if best < 0 || less(key, bestKey) {
					best, bestKey = i, key
				}
			}
			chosen = append(chosen, best)
			used[racks[best]] = true
		}
		replicas := make([]int32, len(chosen))
		for r, i := range chosen {
			replicas[r] = order[i]
			placed[i].Replicas++
			total[i].Replicas++
		}
		placed[leader].Leaders++
		total[leader].Leaders++
		out[p] = replicas
	}
	return out, nil
}

// less compares two keys of the same length lexicographically.
func less(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// rackAlternating returns broker ids in Kafka's rack-alternating order and the rack of
// each (a broker without a rack gets a rack key of its own, which no named rack can
// equal).
func rackAlternating(brokers []Broker) (order []int32, racks []string) {
	byRack := map[string][]Broker{}
	var names []string
	var alone []Broker
	for _, b := range brokers {
		if b.Rack == "" {
			alone = append(alone, b)
			continue
		}
		if byRack[b.Rack] == nil {
			names = append(names, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	slices.Sort(names)
	byID := func(x, y Broker) int { return int(x.ID) - int(y.ID) }
	var groups [][]Broker
	for _, r := range names {
		slices.SortFunc(byRack[r], byID)
		groups = append(groups, byRack[r])
	}
	slices.SortFunc(alone, byID)
	for _, b := range alone {
		groups = append(groups, []Broker{b})
	}
	for round := 0; len(order) < len(brokers); round++ {
		for _, g := range groups {
			if round < len(g) {
				order = append(order, g[round].ID)
				rack := g[round].Rack
				if rack == "" {
					rack = fmt.Sprintf("\x00broker %d", g[round].ID)
				}
				racks = append(racks, rack)
			}
		}
	}
	return order, racks
}
