package cluster

import "slices"

// Overview sums the metadata up for an operator (skiff cluster status).
type Overview struct {
	Topics, Partitions int
	// Brokers are the live brokers and every broker that holds replicas without
	// being live, sorted by id.
	Brokers []BrokerSummary
	// Offline are the partitions without a leader, UnderReplicated those with fewer
	// in-sync replicas than replicas; both sorted by topic, then partition.
	Offline, UnderReplicated []PartitionSummary
}

// BrokerSummary is one broker with what it holds. Host, Port and Rack are known
// only while it is live.
type BrokerSummary struct {
	ID   int32
	Host string
	Port int32
	Rack string
	Live bool
	// Draining: the controller is moving its replicas to other brokers.
	Draining bool
	// Replicas is the number of partition replicas assigned to it; Leaders the
	// number of partitions it leads now.
	Replicas int
	Leaders  int
}

// PartitionSummary names one partition with its leadership state. Leader is
// NoLeader for a partition whose state is missing.
type PartitionSummary struct {
	Topic     string
	Partition int32
	Leader    int32
	Replicas  []int32
	ISR       []int32
}

// Overview counts the snapshot's topics, partitions, each broker's replicas and
// leaderships, and lists the partitions that are offline or under-replicated.
func (s *Snapshot) Overview() Overview {
	var ov Overview
	brokers := map[int32]*BrokerSummary{}
	for _, b := range s.Brokers() {
		brokers[b.ID] = &BrokerSummary{ID: b.ID, Host: b.Host, Port: b.Port, Rack: b.Rack, Live: true, Draining: s.Draining(b.ID)}
	}
	broker := func(id int32) *BrokerSummary {
		if brokers[id] == nil {
			brokers[id] = &BrokerSummary{ID: id, Draining: s.Draining(id)}
		}
		return brokers[id]
	}
	for _, t := range s.Topics() {
		ov.Topics++
		for p, replicas := range t.Assignment {
			ov.Partitions++
			for _, r := range replicas {
				broker(r).Replicas++
			}
			ps := PartitionSummary{Topic: t.Name, Partition: int32(p), Leader: NoLeader, Replicas: replicas}
			if st, ok := s.Partition(t.Name, int32(p)); ok {
				ps.Leader, ps.ISR = st.Leader, st.ISR
			}
			if ps.Leader == NoLeader {
				ov.Offline = append(ov.Offline, ps)
			} else {
				broker(ps.Leader).Leaders++
			}
			if len(ps.ISR) < len(replicas) {
				ov.UnderReplicated = append(ov.UnderReplicated, ps)
			}
		}
	}
	for _, b := range brokers {
		ov.Brokers = append(ov.Brokers, *b)
	}
	slices.SortFunc(ov.Brokers, func(a, b BrokerSummary) int { return int(a.ID) - int(b.ID) })
	return ov
}
