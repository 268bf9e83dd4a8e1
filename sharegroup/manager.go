package sharegroup

// The share-partitions this node leads and the share sessions of the members
// fetching from it: ShareFetch and ShareAcknowledge.

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func asKerr(err error) (*kerr.Error, bool) {
	var ke *kerr.Error
	ok := errors.As(err, &ke)
	return ke, ok
}

// AckBatch is one acknowledgement batch of a request.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

// Resolved is a partition a request names, as the Kafka front end finds it.
type Resolved struct {
	Topic string
	Log   Log   // the leader replica here; nil with Code set
	Code  int16 // UNKNOWN_TOPIC_ID, NOT_LEADER_OR_FOLLOWER, TOPIC_AUTHORIZATION_FAILED, ...
}

// Resolver finds the partition of a topic id here.
type Resolver func(topicID [16]byte, partition int32) Resolved

type tidp struct {
	id [16]byte
	p  int32
}

type sessionKey struct{ group, member string }

// session is a member's share session with this broker: the partitions it
// fetches, and the epoch its next request carries.
type session struct {
	epoch int32
	parts map[tidp]struct{}
	busy  bool // a request of the session is being served
	// conn is the client connection of its last request: when it closes, the
	// session ends and what its member holds is released (ConnClosed), as in Kafka.
	conn ConnID
}

// ConnID identifies one client connection of this node.
type ConnID uint64

// Manager holds the share-partitions led here and the share sessions.
type Manager struct {
	cfg    Config
	logger *slog.Logger

	mu struct {
		sync.Mutex
		parts    map[Key]*sharePartition
		sessions map[sessionKey]*session
	}
}

// NewManager returns a Manager with no share-partition loaded.
func NewManager(cfg Config) *Manager {
	cfg.setDefaults()
	m := &Manager{cfg: cfg, logger: cfg.Logger}
	m.mu.parts = make(map[Key]*sharePartition)
	m.mu.sessions = make(map[sessionKey]*session)
	return m
}

func (m *Manager) now() time.Time { return m.cfg.Clock() }

func (m *Manager) groupSettings(group string) Settings { return m.cfg.settings(group) }

// partition returns the share-partition of key on log, loading it when it is new
// here, its leadership changed, or its last load failed (the store was not
// reachable yet, as right after a failover: a failed load must not stop the
// share-partition for good).
func (m *Manager) partition(key Key, topic string, log Log) *sharePartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	sp := m.mu.parts[key]
	if sp != nil && sp.log == log && sp.epoch == log.LeaderEpoch() && !sp.loadFailed() && !sp.isDead() {
		return sp
	}
	if sp != nil {
		sp.mu.Lock()
		sp.deposeLocked()
		sp.mu.Unlock()
	}
	sp = newSharePartition(m, key, topic, log)
	m.mu.parts[key] = sp
	return sp
}

// isDead reports whether sp was deposed (deposeLocked).
func (sp *sharePartition) isDead() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.mu.dead
}

// lookup returns the loaded share-partition of key, or nil.
func (m *Manager) lookup(key Key) *sharePartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.parts[key]
}

// beginSession checks a request's session epoch and returns the session to serve
// it with, or a top-level error code. Epoch 0 opens a new session (replacing one
// the member had), -1 closes it after this request, others must be the next one.
func (m *Manager) beginSession(conn ConnID, group, member string, epoch int32, opening bool) (*session, int16) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := sessionKey{group, member}
	s := m.mu.sessions[k]
	switch {
	case epoch == 0:
		if !opening {
			return nil, kerr.InvalidShareSessionEpoch.Code
		}
		s = &session{parts: make(map[tidp]struct{})}
		m.mu.sessions[k] = s
	case s == nil:
		return nil, kerr.ShareSessionNotFound.Code
	case s.busy:
		return nil, kerr.InvalidShareSessionEpoch.Code
	case epoch == -1:
	case epoch != s.epoch:
		return nil, kerr.InvalidShareSessionEpoch.Code
	}
	s.busy, s.conn = true, conn
	return s, 0
}

// endSession bumps the epoch after a request, or drops a closed session and
// releases what its member held in its partitions.
func (m *Manager) endSession(group, member string, s *session, epoch int32, resolve Resolver) {
	m.mu.Lock()
	s.busy = false
	if epoch != -1 {
		s.epoch++
		if s.epoch <= 0 {
			s.epoch = 1 // after MaxInt32, as in Kafka
		}
		m.mu.Unlock()
		return
	}
	k := sessionKey{group, member}
	if m.mu.sessions[k] == s {
		delete(m.mu.sessions, k)
	}
	sps := m.sessionPartitionsLocked(group, s)
	m.mu.Unlock()
	for _, sp := range sps {
		sp.releaseMember(member)
	}
}

// sessionPartitionsLocked returns the share-partitions here of a session's
// partitions. The caller holds m.mu.
func (m *Manager) sessionPartitionsLocked(group string, s *session) []*sharePartition {
	var sps []*sharePartition
	for tp := range s.parts {
		if sp := m.mu.parts[Key{group, tp.id, tp.p}]; sp != nil {
			sps = append(sps, sp)
		}
	}
	return sps
}

// ConnClosed ends the share sessions whose last request came on conn, which
// closed, and releases the records their members hold here (Kafka's share
// session cache does so on a disconnection): another member gets them at once
// rather than after the acquisition lock. A session being served (its member
// moved to another connection) is left alone.
func (m *Manager) ConnClosed(conn ConnID) {
	type release struct {
		member string
		sps    []*sharePartition
	}
	var rs []release
	m.mu.Lock()
	for k, s := range m.mu.sessions {
		if s.conn != conn || s.busy {
			continue
		}
		delete(m.mu.sessions, k)
		rs = append(rs, release{k.member, m.sessionPartitionsLocked(k.group, s)})
	}
	m.mu.Unlock()
	for _, r := range rs {
		for _, sp := range r.sps {
			sp.releaseMember(r.member)
		}
	}
}

// ReleaseMember releases what a member that left the group or timed out holds in
// the share-partitions here, and drops its session.
func (m *Manager) ReleaseMember(group, member string) {
	m.mu.Lock()
	delete(m.mu.sessions, sessionKey{group, member})
	var sps []*sharePartition
	for k, sp := range m.mu.parts {
		if k.Group == group {
			sps = append(sps, sp)
		}
	}
	m.mu.Unlock()
	for _, sp := range sps {
		sp.releaseMember(member)
	}
}

// selfBlockedWait bounds how long a ShareFetch waits when a share-partition's
// window is at its record-lock limit with records the fetching member holds: the
// member's acknowledgements (which free the window) come with its next request,
// so waiting the whole max_wait_ms would only stall it.
const selfBlockedWait = 20 * time.Millisecond

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// fetchBudget is what one ShareFetch may still take.
type fetchBudget struct {
	records int
	bytes   int64
}

// ShareFetch serves a ShareFetch request whose group and topics the front end
// authorized (a partition it refuses is resolved with its code).
// conn is the connection the request came on.
func (m *Manager) ShareFetch(ctx context.Context, conn ConnID, req *kmsg.ShareFetchRequest, resolve Resolver) *kmsg.ShareFetchResponse {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	resp.AcquisitionLockTimeoutMillis = int32(m.groupSettings(deref(req.GroupID)).RecordLockDuration / time.Millisecond)
	group, member := deref(req.GroupID), deref(req.MemberID)
	if group == "" || member == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if req.ShareSessionEpoch == -1 && len(req.Topics) > 0 && hasFetch(req) {
		resp.ErrorCode = kerr.InvalidRequest.Code // a closing request only acknowledges
		return resp
	}
	s, code := m.beginSession(conn, group, member, req.ShareSessionEpoch, true)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	defer m.endSession(group, member, s, req.ShareSessionEpoch, resolve)

	out := newFetchAnswer()
	defer out.fill(resp)
	// Acknowledgements first: they may make records available to this fetch. They
	// are answered once durable; their write starts after the first acquisition,
	// so that one write carries both.
	acked := make(map[*sharePartition]uint64)
	var ackedParts []*kmsg.ShareFetchResponseTopicPartition
	var ackedSPs []*sharePartition
	var handed []handing // what this request acquired, handed over as it answers
	defer func() {
		for i, sp := range ackedSPs {
			sp.saveSoon()
			if c := sp.waitSaved(ctx, acked[sp]); c != 0 && ackedParts[i].AcknowledgeErrorCode == 0 {
				ackedParts[i].AcknowledgeErrorCode = c
			}
		}
		for _, h := range handed {
			h.handOver(member)
		}
	}()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := tidp{t.TopicID, p.Partition}
			if req.ShareSessionEpoch != -1 {
				s.parts[tp] = struct{}{}
			}
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			acks := make([]AckBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				acks[i] = AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes}
			}
			rp := out.partition(tp)
			r := resolve(tp.id, tp.p)
			if r.Code != 0 {
				rp.AcknowledgeErrorCode = r.Code
				continue
			}
			sp := m.partition(Key{group, tp.id, tp.p}, r.Topic, r.Log)
			v, code := sp.applyAcks(ctx, member, acks)
			rp.AcknowledgeErrorCode = code
			if v != 0 {
				acked[sp] = v
				ackedParts, ackedSPs = append(ackedParts, rp), append(ackedSPs, sp)
			}
		}
	}
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			delete(s.parts, tidp{f.TopicID, p})
		}
	}
	if req.ShareSessionEpoch == -1 {
		return resp
	}
	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = 500
	}
	wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	deadline := m.now().Add(wait)
	for pass := 0; ; pass++ {
		budget := fetchBudget{records: maxRecords, bytes: int64(req.MaxBytes)}
		if budget.bytes <= 0 {
			budget.bytes = 1 << 30
		}
		var wake []<-chan struct{}
		var sps []*sharePartition
		got := false
		for tp := range s.parts {
			if budget.records <= 0 {
				break
			}
			r := resolve(tp.id, tp.p)
			if r.Code != 0 {
				out.partition(tp).ErrorCode = r.Code
				got = true // an error answers at once
				continue
			}
			sp := m.partition(Key{group, tp.id, tp.p}, r.Topic, r.Log)
			a, code := sp.acquire(member, budget.records, budget.bytes)
			if code != 0 {
				out.partition(tp).ErrorCode = code
				got = true
				continue
			}
			if len(a.Ranges) > 0 {
				if _, ok := acked[sp]; !ok || pass > 0 {
					sp.saveLater()
				}
				got = true
				rp := out.partition(tp)
				handed = append(handed, handing{sp, rp})
				rp.Records = append(rp.Records, a.Records...)
				for _, ar := range a.Ranges {
					rp.AcquiredRecords = append(rp.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
						FirstOffset: ar.First, LastOffset: ar.Last, DeliveryCount: ar.Count,
					})
					budget.records -= int(ar.Last - ar.First + 1)
				}
				budget.bytes -= int64(len(a.Records))
				continue
			}
			sps = append(sps, sp)
			wake = append(wake, sp.wakeup())
			if sp.blockedBy(member) {
				// The member's own unacknowledged records fill the window, and its
				// acknowledgements can only come with its next request.
				deadline = minTime(deadline, m.now().Add(selfBlockedWait))
			}
		}
		if pass == 0 {
			for _, sp := range ackedSPs {
				sp.saveSoon() // the acknowledgements with this pass's acquisitions
			}
		}
		left := deadline.Sub(m.now())
		if got || left <= 0 || len(s.parts) == 0 {
			return resp
		}
		if !m.waitAny(ctx, sps, wake, left) {
			return resp
		}
	}
}

// handing is a partition of a ShareFetch answer with records acquired for it.
type handing struct {
	sp *sharePartition
	rp *kmsg.ShareFetchResponseTopicPartition
}

// handOver keeps in the answer only the acquired records member still holds
// (sharePartition.handOver), and none of the partition's records when it holds
// none of them.
func (h handing) handOver(member string) {
	rs := make([]AcquiredRange, len(h.rp.AcquiredRecords))
	for i, ar := range h.rp.AcquiredRecords {
		rs[i] = AcquiredRange{First: ar.FirstOffset, Last: ar.LastOffset, Count: ar.DeliveryCount}
	}
	held := h.sp.handOver(member, rs)
	h.rp.AcquiredRecords = h.rp.AcquiredRecords[:0]
	for _, ar := range held {
		h.rp.AcquiredRecords = append(h.rp.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
			FirstOffset: ar.First, LastOffset: ar.Last, DeliveryCount: ar.Count,
		})
	}
	if len(held) == 0 {
		h.rp.Records = nil
	}
}

func hasFetch(req *kmsg.ShareFetchRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if p.PartitionMaxBytes > 0 {
				return true
			}
		}
	}
	return false
}

// wakeup returns a channel closed when records of sp may have become available:
// released, or their lock ended.
func (sp *sharePartition) wakeup() <-chan struct{} {
	select {
	case <-sp.loaded:
	default:
		return sp.loaded
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.mu.w == nil {
		return sp.mu.changedC
	}
	c := sp.mu.changedC
	if d := sp.mu.w.earliestDeadline(); !d.IsZero() {
		ch := make(chan struct{})
		t := time.AfterFunc(time.Until(d), func() { close(ch) })
		go func() {
			select {
			case <-c:
			case <-ch:
				return
			}
			t.Stop()
		}()
		return mergeClosed(c, ch)
	}
	return c
}

// mergeClosed returns a channel closed when either a or b is.
func mergeClosed(a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		select {
		case <-a:
		case <-b:
		}
		close(out)
	}()
	return out
}

// waitAny waits until a partition gets new records, a share-partition's records
// may be available again, ctx ends or d passes. It reports whether to look again.
func (m *Manager) waitAny(ctx context.Context, sps []*sharePartition, wake []<-chan struct{}, d time.Duration) bool {
	newData := make(chan struct{}, 1)
	for _, sp := range sps {
		sp.log.AddWaiter(newData)
		defer sp.log.RemoveWaiter(newData)
	}
	anyWake := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	for _, c := range wake {
		go func() {
			select {
			case <-c:
				select {
				case anyWake <- struct{}{}:
				case <-stop:
				}
			case <-stop:
			}
		}()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-newData:
	case <-anyWake:
	case <-t.C:
		return true // one last look at the deadline
	case <-ctx.Done():
		return false
	}
	return true
}

// ShareAcknowledge serves a ShareAcknowledge request whose group and topics the
// front end authorized.
// conn is the connection the request came on.
func (m *Manager) ShareAcknowledge(ctx context.Context, conn ConnID, req *kmsg.ShareAcknowledgeRequest, resolve Resolver) *kmsg.ShareAcknowledgeResponse {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member := deref(req.GroupID), deref(req.MemberID)
	resp.AcquisitionLockTimeoutMillis = int32(m.groupSettings(group).RecordLockDuration / time.Millisecond)
	if group == "" || member == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	s, code := m.beginSession(conn, group, member, req.ShareSessionEpoch, false)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	defer m.endSession(group, member, s, req.ShareSessionEpoch, resolve)
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			r := resolve(t.TopicID, p.Partition)
			if r.Code != 0 {
				rp.ErrorCode = r.Code
			} else {
				acks := make([]AckBatch, len(p.AcknowledgementBatches))
				for i, b := range p.AcknowledgementBatches {
					acks[i] = AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes}
				}
				sp := m.partition(Key{group, t.TopicID, p.Partition}, r.Topic, r.Log)
				rp.ErrorCode = sp.acknowledge(ctx, member, acks)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchAnswer builds a ShareFetch response one partition at a time.
type fetchAnswer struct {
	order []tidp
	parts map[tidp]*kmsg.ShareFetchResponseTopicPartition
}

func newFetchAnswer() *fetchAnswer {
	return &fetchAnswer{parts: make(map[tidp]*kmsg.ShareFetchResponseTopicPartition)}
}

// partition returns the answer's entry for tp, adding it.
func (a *fetchAnswer) partition(tp tidp) *kmsg.ShareFetchResponseTopicPartition {
	if rp := a.parts[tp]; rp != nil {
		return rp
	}
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.Partition = tp.p
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
	a.parts[tp] = &rp
	a.order = append(a.order, tp)
	return &rp
}

// fill puts the entries into resp, grouped by topic.
func (a *fetchAnswer) fill(resp *kmsg.ShareFetchResponse) {
	idx := make(map[[16]byte]int)
	for _, tp := range a.order {
		i, ok := idx[tp.id]
		if !ok {
			i = len(resp.Topics)
			idx[tp.id] = i
			resp.Topics = append(resp.Topics, kmsg.ShareFetchResponseTopic{TopicID: tp.id})
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, *a.parts[tp])
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// PartitionStats is one share-partition led here, as the console shows it.
type PartitionStats struct {
	Group     string
	Topic     string
	Partition int32
	// Start and End are the SPSO and SPEO.
	Start, End int64
	// InFlight counts the records between them not done yet (available again or
	// acquired); Acquired those a member holds now.
	InFlight, Acquired int
}

// Stats describes the loaded share-partitions this node still leads, by group,
// topic and partition.
func (m *Manager) Stats() []PartitionStats {
	m.mu.Lock()
	sps := make([]*sharePartition, 0, len(m.mu.parts))
	for _, sp := range m.mu.parts {
		sps = append(sps, sp)
	}
	m.mu.Unlock()
	out := make([]PartitionStats, 0, len(sps))
	for _, sp := range sps {
		if !sp.isLoaded() {
			continue
		}
		sp.mu.Lock()
		if sp.mu.dead || sp.mu.w == nil || !sp.log.IsLeader() || sp.log.LeaderEpoch() != sp.epoch {
			sp.mu.Unlock()
			continue
		}
		w := sp.mu.w
		_, acquired, acked, archived := w.counts()
		st := PartitionStats{Group: sp.key.Group, Topic: sp.topic, Partition: sp.key.Partition, Start: w.start, End: w.end,
			InFlight: int(w.end-w.start) - acked - archived, Acquired: acquired}
		sp.mu.Unlock()
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out
}
