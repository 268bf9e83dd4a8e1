package groups

// Target assignments of consumer groups: which partitions each member should own,
// computed by a server-side assignor whenever the group epoch moves ahead of the
// target's, and the reconciliation of one member towards its target. Neither
// assignor reads members' racks: Kafka's server-side assignors are not rack-aware
// either (rack awareness was removed in 3.8, KAFKA-16694).

import (
	"hash/fnv"
	"slices"

	"skiff/internal/batch"
)

// topicIndex returns the cluster's topics by name (internal ones included: a
// regex subscription matches them too, as in Kafka).
func (c *Coordinator) topicIndex() map[string]TopicMeta {
	out := make(map[string]TopicMeta)
	if c.cfg.Topics == nil {
		return out
	}
	for _, t := range c.cfg.Topics() {
		out[t.Name] = t
	}
	return out
}

// subscribedIDs resolves m's subscription (names and regex) against topics. The
// regex matches only topics m's principal may DESCRIBE (as Kafka filters them,
// KAFKA-18813); named topics were checked when subscribed. Until a member loaded
// from the log heartbeats (its rights are not known yet), its regex keeps the
// topics of its target, target.
func (m *cmember) subscribedIDs(topics map[string]TopicMeta, target partSet) map[[16]byte]bool {
	out := make(map[[16]byte]bool)
	for _, n := range m.topics {
		if t, ok := topics[n]; ok {
			out[t.ID] = true
		}
	}
	if m.re != nil {
		var had map[[16]byte][]int32
		if m.rightsUnknown {
			had = target.byTopic()
		}
		for n, t := range topics {
			if !m.re.MatchString(n) {
				continue
			}
			if _, ok := had[t.ID]; m.rightsUnknown && !ok {
				continue
			}
			if m.mayDescribe == nil || m.mayDescribe(n) {
				out[t.ID] = true
			}
		}
	}
	return out
}

// maybeNewTargetLocked computes a new target assignment when the group epoch is
// ahead of it, or when the metadata of the subscribed topics changed (which moves
// the group epoch), and returns the records of the changes since startEpoch.
func (g *group) maybeNewTargetLocked(startEpoch int32) []batch.Record {
	cg := g.cg
	topics := g.c.topicIndex()
	subs := make(map[string]map[[16]byte]bool, len(cg.members))
	used := make(map[[16]byte]bool)
	regexMoved := false
	for id, m := range cg.members {
		s := m.subscribedIDs(topics, cg.target[id])
		subs[id] = s
		for t := range s {
			used[t] = true
		}
		if m.re != nil {
			// What a regex matches changes with topics and with the member's
			// rights: either is a change of its subscription. Not known after a
			// load: taken as it is.
			sum := idsHash(s)
			regexMoved = regexMoved || (m.regexHash != 0 && m.regexHash != sum)
			m.regexHash = sum
		}
	}
	h := fnv.New64a()
	parts := make(map[[16]byte]int32)
	names := make([]string, 0, len(used))
	for n, t := range topics {
		if used[t.ID] {
			names = append(names, n)
			parts[t.ID] = t.Partitions
		}
	}
	slices.Sort(names)
	for _, n := range names {
		t := topics[n]
		h.Write([]byte(n))
		h.Write(t.ID[:])
		h.Write([]byte{byte(t.Partitions >> 24), byte(t.Partitions >> 16), byte(t.Partitions >> 8), byte(t.Partitions)})
	}
	hashChanged, bump := false, regexMoved
	if sum := h.Sum64() | 1; sum != cg.metaHash {
		// 0: not known (a group stored without it); the target stands until a change.
		bump = bump || cg.metaHash != 0
		cg.metaHash, hashChanged = sum, true
	}
	if bump && cg.epoch == startEpoch {
		cg.epoch++
	}
	var recs []batch.Record
	if cg.epoch != startEpoch || hashChanged {
		recs = append(recs, consumerGroupRecord(g.name, cg.epoch, cg.metaHash))
	}
	if cg.epoch <= cg.targetEpoch {
		return recs
	}
	members := make([]string, 0, len(cg.members))
	for id := range cg.members {
		members = append(members, id)
	}
	slices.Sort(members)
	in := assignInput{members: members, subs: subs, parts: parts, prev: cg.target}
	cg.assignor = g.chooseAssignorLocked()
	var target map[string]partSet
	if cg.assignor == "range" {
		target = assignRange(in)
	} else {
		target = assignUniform(in)
	}
	for _, id := range members {
		if old, ok := cg.target[id]; !ok || !old.equal(target[id]) {
			recs = append(recs, consumerTargetRecord(g.name, id, target[id]))
		}
	}
	cg.target = target
	cg.targetEpoch = cg.epoch
	return append(recs, consumerTargetMetaRecord(g.name, cg.targetEpoch))
}

// idsHash is a hash of a set of topic ids, never 0.
func idsHash(ids map[[16]byte]bool) uint64 {
	h := fnv.New64a()
	for _, id := range sortedIDs(ids) {
		h.Write(id[:])
	}
	return h.Sum64() | 1
}

// chooseAssignorLocked is the assignor most members ask for, ties going to the
// one configured first; the default (the first configured) if none asks.
func (g *group) chooseAssignorLocked() string {
	names := g.c.cfg.ConsumerAssignors
	count := make(map[string]int)
	for _, m := range g.cg.members {
		if m.serverAssignor != nil {
			count[*m.serverAssignor]++
		}
	}
	best := names[0]
	for _, n := range names {
		if count[n] > count[best] {
			best = n
		}
	}
	return best
}

type assignInput struct {
	members []string                     // sorted
	subs    map[string]map[[16]byte]bool // member -> subscribed topic ids
	parts   map[[16]byte]int32           // subscribed topic -> partition count
	prev    map[string]partSet           // the previous target
}

func (in assignInput) allPartitions() []topicPart {
	var out []topicPart
	for _, id := range sortedIDs(in.parts) {
		for p := range in.parts[id] {
			out = append(out, topicPart{id, p})
		}
	}
	return out
}

// assignUniform spreads partitions evenly over the members subscribed to them,
// keeping each partition where the previous target had it when that stays
// balanced (Kafka's uniform assignor is sticky too): the counts of two members that
// could swap a partition differ by at most one.
func assignUniform(in assignInput) map[string]partSet {
	out := make(map[string]partSet, len(in.members))
	for _, m := range in.members {
		out[m] = partSet{}
	}
	owner := make(map[topicPart]string)
	for _, m := range in.members {
		for tp := range in.prev[m] {
			n, ok := in.parts[tp.topic]
			if ok && in.subs[m][tp.topic] && tp.partition < n && owner[tp] == "" {
				owner[tp] = m
				out[m][tp] = struct{}{}
			}
		}
	}
	all := in.allPartitions()
	// fewest returns the member subscribed to topic with the fewest partitions.
	fewest := func(topic [16]byte) string {
		best := ""
		for _, m := range in.members {
			if in.subs[m][topic] && (best == "" || len(out[m]) < len(out[best])) {
				best = m
			}
		}
		return best
	}
	for _, tp := range all {
		if owner[tp] == "" {
			if m := fewest(tp.topic); m != "" {
				owner[tp] = m
				out[m][tp] = struct{}{}
			}
		}
	}
	for moved := true; moved; {
		moved = false
		for _, tp := range all {
			from := owner[tp]
			if from == "" {
				continue
			}
			to := fewest(tp.topic)
			if len(out[from])-len(out[to]) > 1 {
				delete(out[from], tp)
				out[to][tp] = struct{}{}
				owner[tp] = to
				moved = true
			}
		}
	}
	return out
}

// assignRange gives each member subscribed to a topic a contiguous range of its
// partitions, members in member id order, the first ones one more when the count
// does not divide (Kafka's range assignor).
func assignRange(in assignInput) map[string]partSet {
	out := make(map[string]partSet, len(in.members))
	for _, m := range in.members {
		out[m] = partSet{}
	}
	for _, id := range sortedIDs(in.parts) {
		var subs []string
		for _, m := range in.members {
			if in.subs[m][id] {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := in.parts[id]
		per, extra := n/int32(len(subs)), n%int32(len(subs))
		next := int32(0)
		for i, m := range subs {
			count := per
			if int32(i) < extra {
				count++
			}
			for p := next; p < next+count; p++ {
				out[m][topicPart{id, p}] = struct{}{}
			}
			next += count
		}
	}
	return out
}

// reconcileLocked moves m one step towards its target (Kafka's
// CurrentAssignmentBuilder). owned is what the member says it owns (nil: it did
// not say). Partitions leave first: while m owns partitions its target does not
// hold, it keeps its epoch and must revoke them; then it takes the target epoch
// and every target partition no other member owns.
func (g *group) reconcileLocked(m *cmember, owned partSet) {
	cg := g.cg
	if m.epoch == epochStaticLeft {
		return
	}
	if m.state == memberUnrevoked {
		if owned == nil {
			return
		}
		for tp := range m.revoking {
			if _, ok := owned[tp]; ok {
				return // not revoked yet
			}
		}
		m.revoking = partSet{}
		m.revokeSeq++
		m.state = memberStable
	}
	if m.epoch == cg.targetEpoch && m.state == memberStable {
		return
	}
	target := cg.target[m.id]
	keep, revoke := partSet{}, partSet{}
	for tp := range m.assigned {
		if _, ok := target[tp]; ok {
			keep[tp] = struct{}{}
		} else {
			revoke[tp] = struct{}{}
		}
	}
	if len(revoke) > 0 {
		m.assigned, m.revoking, m.state = keep, revoke, memberUnrevoked
		g.armRevocationLocked(m)
		return
	}
	owners := make(map[topicPart]bool)
	for id, o := range cg.members {
		if id == m.id {
			continue
		}
		for tp := range o.assigned {
			owners[tp] = true
		}
		for tp := range o.revoking {
			owners[tp] = true
		}
	}
	unreleased := false
	for tp := range target {
		if _, ok := keep[tp]; ok {
			continue
		}
		if owners[tp] {
			unreleased = true
		} else {
			keep[tp] = struct{}{}
		}
	}
	if m.epoch != cg.targetEpoch {
		m.prevEpoch, m.epoch = m.epoch, cg.targetEpoch
	}
	m.assigned, m.state = keep, memberStable
	if unreleased {
		m.state = memberUnreleased
	}
}
