package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
)

// Follower fetch settings (the wait and the least bytes are Config's).
const (
	fetchMaxBytes     = 16 << 20
	fetchPartMaxBytes = 4 << 20
	fetchTimeoutExtra = 10 * time.Second // beyond the fetch's wait
)

// errRefused: the leader's authorizer refused this broker's fetch; the fetcher
// backs off as after a failed connection, and logs why (at most once a minute).
var errRefused = errors.New("the leader refused the fetch: its authorizer does not allow this broker's principal CLUSTER_ACTION on the cluster (docs/security.md: between brokers)")

// fetcher copies the logs of every partition this broker follows from one leader:
// it truncates each new follower to the leader's log (OffsetForLeaderEpoch), then
// fetches all of them in one Fetch request after another, as Kafka's replica fetcher
// thread does.
type fetcher struct {
	m      *Manager
	leader int32
	logger *slog.Logger

	mu    sync.Mutex
	parts map[*Partition]struct{} // guarded by mu
	conn  *kconn                  // guarded by mu; closed by close to end a fetch in flight
	wake  chan struct{}           // a partition was added
	stop  chan struct{}
	done  chan struct{}

	refusedLogged time.Time // when errRefused was last logged; only run uses it
}

func newFetcher(m *Manager, leader int32) *fetcher {
	f := &fetcher{
		m: m, leader: leader, logger: m.logger.With("leader", leader),
		parts: make(map[*Partition]struct{}), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go f.run()
	return f
}

func (f *fetcher) add(p *Partition) {
	f.mu.Lock()
	f.parts[p] = struct{}{}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(p *Partition) {
	f.mu.Lock()
	delete(f.parts, p)
	f.mu.Unlock()
}

func (f *fetcher) empty() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.parts) == 0
}

func (f *fetcher) close() {
	close(f.stop)
	f.mu.Lock()
	if f.conn != nil {
		f.conn.close()
	}
	f.mu.Unlock()
	<-f.done
}

// setConn publishes the connection in use (nil: none), so close can end it.
func (f *fetcher) setConn(c *kconn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.stop:
		if c != nil {
			c.close()
		}
		return false
	default:
	}
	f.conn = c
	return true
}

// following returns the partitions that still follow this fetcher's leader.
func (f *fetcher) following() []*Partition {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*Partition, 0, len(f.parts))
	for p := range f.parts {
		p.stateMu.Lock()
		ok := p.st.role == roleFollower && p.st.leaderID == f.leader
		p.stateMu.Unlock()
		if ok {
			out = append(out, p)
		}
	}
	return out
}

func (f *fetcher) run() {
	defer close(f.done)
	var conn *kconn
	defer func() {
		if conn != nil {
			conn.close()
		}
		f.setConn(nil)
	}()
	backoff := time.Duration(0)
	for {
		if backoff > 0 {
			select {
			case <-time.After(backoff):
			case <-f.stop:
				return
			}
		}
		parts := f.following()
		if len(parts) == 0 {
			select {
			case <-f.wake:
				continue
			case <-f.stop:
				return
			}
		}
		if conn == nil {
			addr, ok := f.m.cfg.BrokerAddr(f.leader)
			if !ok {
				backoff = 200 * time.Millisecond
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c, err := dialLeader(ctx, addr, "skiff-replica-"+strconv.Itoa(int(f.m.cfg.BrokerID)), &f.m.cfg)
			cancel()
			if err != nil {
				f.logger.Debug("dial leader", "addr", addr, "err", err)
				backoff = min(max(2*backoff, 100*time.Millisecond), 2*time.Second)
				continue
			}
			if !f.setConn(c) {
				return
			}
			c.reuse = true // round is done with each answer before the next fetch
			conn = c
		}
		err := f.round(conn, parts)
		if err != nil {
			select {
			case <-f.stop:
				return
			default:
			}
			if errors.Is(err, errRefused) && time.Since(f.refusedLogged) > time.Minute {
				f.refusedLogged = time.Now()
				f.logger.Warn("replica fetch refused", "err", err)
			} else {
				f.logger.Debug("replica fetch failed", "err", err)
			}
			conn.close()
			conn = nil
			f.setConn(nil)
			backoff = min(max(2*backoff, 100*time.Millisecond), 2*time.Second)
			continue
		}
		backoff = 0
	}
}

// round truncates the partitions that need it, then fetches once for all of them.
func (f *fetcher) round(conn *kconn, parts []*Partition) error {
	var truncating []*Partition
	for _, p := range parts {
		p.stateMu.Lock()
		if p.st.needTruncate {
			truncating = append(truncating, p)
		}
		p.stateMu.Unlock()
	}
	if len(truncating) > 0 {
		return f.truncate(conn, truncating)
	}
	throttleWait := f.m.throttle.wait(time.Now())
	req, byKey, throttled := f.fetchRequest(parts, throttleWait)
	if len(req.Topics) == 0 && throttleWait > 0 {
		// Every replica is held back by the throttle: wait for the budget.
		select {
		case <-time.After(throttleWait):
		case <-f.stop:
		}
		return nil
	}
	if len(req.Topics) == 0 {
		return errNothingToFetch
	}
	resp, err := conn.request(req, f.m.cfg.ReplicaFetchWaitMax+fetchTimeoutExtra)
	if err != nil {
		return err
	}
	refused := false
	for _, t := range resp.(*kmsg.FetchResponse).Topics {
		for _, rp := range t.Partitions {
			p := byKey[topicPartition{t.Topic, rp.Partition}]
			if p == nil {
				continue
			}
			if isRefusal(rp.ErrorCode) {
				refused = true
				continue
			}
			if throttled[p] {
				f.m.throttle.charge(time.Now(), len(rp.RecordBatches))
			}
			if err := f.handle(p, &rp); err != nil {
				p.logger.Warn("replica fetch", "leader", f.leader, "err", err)
			}
		}
	}
	if refused {
		return errRefused
	}
	return nil
}

// fetchRequest is one Fetch for every partition in parts that can report its log
// end, waiting at the leader for replica.fetch.min.bytes or
// replica.fetch.wait.max.ms; byKey finds each partition of the response.
// Throttled replicas (throttle.go) are left out while throttleWait is not 0, and
// fetch at most a tenth of a second of the rate; throttled lists those asked.
func (f *fetcher) fetchRequest(parts []*Partition, throttleWait time.Duration) (req *kmsg.FetchRequest, byKey map[topicPartition]*Partition, throttled map[*Partition]bool) {
	req = kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID = f.m.cfg.BrokerID
	req.MaxWaitMillis = int32(max(f.m.cfg.ReplicaFetchWaitMax/time.Millisecond, 1))
	req.MinBytes, req.MaxBytes = f.m.cfg.ReplicaFetchMinBytes, fetchMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	byKey = make(map[topicPartition]*Partition, len(parts))
	throttled = make(map[*Partition]bool)
	topics := make(map[string]int)
	for _, p := range parts {
		if !p.syncedForFetch() {
			continue // it cannot report its log end as on disk; it falls out of the ISR
		}
		maxBytes := int32(fetchPartMaxBytes)
		if p.followerThrottled(f.m.cfg.BrokerID) {
			if throttleWait > 0 {
				continue // over the throttle: it fetches once the budget allows
			}
			throttled[p], maxBytes = true, f.m.throttle.partMaxBytes()
		}
		byKey[topicPartition{p.Topic, p.ID}] = p
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = p.ID, p.LeaderEpoch()
		rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = p.LogEndOffset(), p.LogStartOffset(), maxBytes
		i, ok := topics[p.Topic]
		if !ok {
			i = len(req.Topics)
			topics[p.Topic] = i
			req.Topics = append(req.Topics, kmsg.FetchRequestTopic{Topic: p.Topic})
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	return req, byKey, throttled
}

// isRefusal reports whether a partition's error code is an authorization refusal.
func isRefusal(code int16) bool {
	return code == kerr.TopicAuthorizationFailed.Code || code == kerr.ClusterAuthorizationFailed.Code
}

// handle applies one partition of a fetch response.
func (f *fetcher) handle(p *Partition, rp *kmsg.FetchResponseTopicPartition) error {
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		if leo := p.LogEndOffset(); leo < rp.LogStartOffset {
			// The leader no longer has what follows our log: start over at its start.
			return p.resetTo(rp.LogStartOffset)
		}
		p.stateMu.Lock()
		p.st.needTruncate = true // our log end is past the leader's: truncate first
		p.stateMu.Unlock()
		return nil
	case kerr.NotLeaderForPartition.Code, kerr.FencedLeaderEpoch.Code, kerr.UnknownLeaderEpoch.Code,
		kerr.UnknownTopicOrPartition.Code:
		return nil // the metadata will catch up; fetch again then
	default:
		return kerr.ErrorForCode(rp.ErrorCode)
	}
	if len(rp.RecordBatches) > 0 {
		if err := p.appendReplica(rp.RecordBatches); err != nil {
			return err
		}
	}
	p.followHW(rp.HighWatermark)
	if err := p.followLogStart(rp.LogStartOffset); err != nil {
		return fmt.Errorf("follow the leader's log start %d: %w", rp.LogStartOffset, err)
	}
	return nil
}

// truncate asks the leader where each partition's last epoch ends and cuts the local
// logs there (KIP-101 and KIP-279), so that a follower never keeps records the
// leader does not have.
func (f *fetcher) truncate(conn *kconn, parts []*Partition) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(3)
	req.ReplicaID = f.m.cfg.BrokerID
	byKey := make(map[topicPartition]*Partition, len(parts))
	topics := make(map[string]int)
	for _, p := range parts {
		byKey[topicPartition{p.Topic, p.ID}] = p
		latest, _ := p.epochStart()
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.ID, p.LeaderEpoch(), latest
		i, ok := topics[p.Topic]
		if !ok {
			i = len(req.Topics)
			topics[p.Topic] = i
			req.Topics = append(req.Topics, kmsg.OffsetForLeaderEpochRequestTopic{Topic: p.Topic})
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := conn.request(req, 10*time.Second)
	if err != nil {
		return err
	}
	for _, t := range resp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, rp := range t.Partitions {
			p := byKey[topicPartition{t.Topic, rp.Partition}]
			if isRefusal(rp.ErrorCode) {
				return errRefused
			}
			if p == nil || rp.ErrorCode != 0 {
				continue // retried in the next round
			}
			if err := p.truncateToLeader(rp.LeaderEpoch, rp.EndOffset); err != nil {
				p.logger.Error("truncating to the leader's log", "err", err)
			}
		}
	}
	return nil
}

// truncateToLeader cuts the log where the leader's answer says the replicas agree:
// at the leader's end offset of the largest common epoch, or this replica's own end
// of that epoch if it is earlier. An undefined answer (the leader knows none of our
// epochs) keeps only what is below the high watermark.
func (p *Partition) truncateToLeader(leaderEpoch int32, leaderEnd int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	leo := p.log.LogEndOffset()
	to := p.hw.Load()
	if leaderEpoch >= 0 && leaderEnd >= 0 {
		_, ours := p.epochs.endOffsetFor(leaderEpoch, leo)
		to = leaderEnd
		if ours >= 0 {
			to = min(to, ours)
		}
	}
	to = min(to, leo)
	if to < leo {
		p.logger.Info("truncating to the leader's log", "from", leo, "to", to, "leader_epoch", leaderEpoch)
		if err := p.dropProducerStoreFromLocked(to); err != nil {
			return err
		}
		if err := p.log.Truncate(to); err != nil {
			return err
		}
		if err := p.epochs.truncateFrom(to); err != nil {
			return err
		}
		if end := p.log.LogEndOffset(); p.hw.Load() > end { // below to if it fell in a gap
			p.hw.Store(end)
		}
		if err := p.restoreProducersLocked(false, nil); err != nil {
			return fmt.Errorf("rebuild producer state: %w", err)
		}
	}
	p.stateMu.Lock()
	p.st.needTruncate = false
	p.stateMu.Unlock()
	return nil
}

// resetTo empties the log and starts it at offset (the leader's log start).
func (p *Partition) resetTo(offset int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.logger.Info("log ends before the leader's log start: starting over there", "log_start_offset", offset)
	if err := p.dropProducerStoreFromLocked(0); err != nil {
		return err
	}
	if err := p.log.Reset(offset); err != nil {
		return err
	}
	p.producers = newProducerStates()
	p.txns.reset()
	// The snapshotter's mirror still holds the producers of the dropped log:
	// the next snapshot starts from the empty state instead.
	p.snap.storeMu.Lock()
	p.restartSnapshotsLocked(newSnapRows(0))
	p.snap.storeMu.Unlock()
	p.hw.Store(offset)
	return p.epochs.clear()
}

// appendReplica stores batches fetched from the leader as they are, and keeps the
// epoch cache and the producer state in step with them.
func (p *Partition) appendReplica(records []byte) error {
	var hs []batch.Header
	var raws [][]byte
	if err := batch.Split(records, func(h batch.Header, raw []byte) error {
		hs = append(hs, h)
		raws = append(raws, raw)
		return nil
	}); err != nil {
		return fmt.Errorf("records from the leader: %w", err)
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.log.AppendReplicaChecked(records, hs); err != nil {
		return err
	}
	if p.log.NeedsSync() && p.cfg.Load().Flush != FlushAlways {
		p.requestSync() // a rolled segment (under always the next fetch syncs it)
	}
	var errs []error
	for i := range hs {
		errs = append(errs, p.epochs.assign(hs[i].LeaderEpoch, hs[i].BaseOffset), p.observeLocked(&hs[i], raws[i]))
	}
	return errors.Join(errs...)
}

// errNothingToFetch: every partition of a fetcher failed to sync its log.
var errNothingToFetch = errors.New("replication: no partition can fetch: their logs cannot be synced")

// syncedForFetch makes sure, under flush.policy=always, that what this follower
// appended is on disk before its next fetch tells the leader its log end: one
// fdatasync covers everything the previous fetch brought. It reports false when
// the log cannot be synced (a latched fsync failure).
func (p *Partition) syncedForFetch() bool {
	if p.cfg.Load().Flush != FlushAlways || p.log.SyncedOffset() >= p.log.LogEndOffset() {
		return p.log.Failed() == nil
	}
	if err := p.log.Sync(); err != nil && p.log.Failed() == nil {
		p.logger.Warn("recording the recovery point", "err", err) // synced all the same
	}
	return p.log.Failed() == nil
}

// followHW moves a follower's high watermark to the leader's, capped at its own log end.
func (p *Partition) followHW(leaderHW int64) {
	hw := min(leaderHW, p.log.LogEndOffset())
	if hw > p.hw.Load() {
		p.hw.Store(hw)
		p.notify() // wakes readers of committed records (ReadCommitted)
	}
}
