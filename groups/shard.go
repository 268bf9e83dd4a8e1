package groups

// A shard is one led partition of __consumer_offsets: it appends the coordinator's
// records to the partition's log and applies the committed log, in order, to Pebble.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/logstore"
	"skiff/offsets"
)

// Limits of the shard's log traffic.
const (
	// maxBatchBytes bounds one appended batch; a larger set of records (a commit of
	// many partitions, the tombstones of a large group) is split into several.
	maxBatchBytes = 256 << 10
	// readChunk is how much log is read and applied at a time.
	readChunk = 1 << 20
	// retryApply is the pause after a failed apply before trying again.
	retryApply = time.Second
	// retryFenced is the pause while the partition's leadership is fenced.
	retryFenced = 50 * time.Millisecond
)

type shard struct {
	c     *Coordinator
	id    int32
	epoch int32 // leader epoch of the log's leadership
	log   Log
	store *offsets.GroupShard

	ctx    context.Context // canceled by stop
	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned
	ready  atomic.Bool   // caught up and loaded: requests are served
	// deposed is closed once the log is seen in another leader epoch than the
	// shard's: its appends may have been truncated, and what the log commits
	// from then on is another leadership's. Waiters answer NOT_COORDINATOR.
	deposed     chan struct{}
	deposedOnce sync.Once

	appendMu sync.Mutex // keeps the batches of one append together

	mu struct {
		sync.Mutex
		applied int64         // records below it are in Pebble
		changed chan struct{} // closed and replaced when applied moves
	}
}

func newShard(c *Coordinator, id int32, log Log) *shard {
	sh := &shard{c: c, id: id, log: log, store: c.cfg.DB.GroupShard(id), done: make(chan struct{}), deposed: make(chan struct{})}
	sh.ctx, sh.cancel = context.WithCancel(context.Background())
	sh.mu.changed = make(chan struct{})
	return sh
}

func (sh *shard) stop() {
	sh.cancel()
	<-sh.done
}

// append appends records as one or more batches stamped now and returns the offset
// of the last record. The caller holds the lock of the group the records belong to,
// so a group's records are in the log in the order of its state changes. A batch
// the log appended in another leader epoch than the shard's fails the append with
// errNotCoordinator (see checkEpoch).
func (sh *shard) append(now time.Time, recs []batch.Record) (last int64, err error) {
	if sh.ctx.Err() != nil || sh.isDeposed() {
		return 0, errNotCoordinator
	}
	sh.appendMu.Lock()
	defer sh.appendMu.Unlock()
	ts := now.UnixMilli()
	for len(recs) > 0 {
		n, size := 0, batch.HeaderSize
		for n < len(recs) && (n == 0 || size+len(recs[n].Key)+len(recs[n].Value)+16 <= maxBatchBytes) {
			size += len(recs[n].Key) + len(recs[n].Value) + 16
			n++
		}
		res, err := sh.log.Append(batch.Build(ts, recs[:n]), -1)
		if err != nil {
			return 0, fmt.Errorf("append to __consumer_offsets-%d: %w", sh.id, err)
		}
		if err := sh.checkEpoch(res.LeaderEpoch); err != nil {
			return 0, err
		}
		last = res.BaseOffset + int64(n) - 1
		recs = recs[n:]
	}
	return last, nil
}

// checkEpoch fails with errNotCoordinator when epoch, the leader epoch the log
// appended a batch in, is not the shard's: the shard's in-memory groups are not
// that leadership's, and the shard does not apply that leadership's log (run), so
// the batch's wait could never end well. A later epoch deposes the shard.
func (sh *shard) checkEpoch(epoch int32) error {
	if epoch == sh.epoch {
		return nil
	}
	if epoch > sh.epoch {
		sh.depose()
	}
	return fmt.Errorf("__consumer_offsets-%d appended in leader epoch %d, the shard leads in %d: %w", sh.id, epoch, sh.epoch, errNotCoordinator)
}

func (sh *shard) depose() {
	sh.deposedOnce.Do(func() {
		sh.c.logger.Info("group coordinator: offsets partition moved to another leader epoch", "partition", sh.id, "leader_epoch", sh.epoch, "log_leader_epoch", sh.log.LeaderEpoch())
		close(sh.deposed)
	})
}

func (sh *shard) isDeposed() bool {
	select {
	case <-sh.deposed:
		return true
	default:
		return false
	}
}

// highWatermark returns the log's high watermark if it is the shard's
// leadership's: read first, then the replica must still lead in the shard's epoch
// (as replication's WaitAcked does). A replica that lost the leadership may have
// had the shard's appends truncated and refilled from the new leader, whose high
// watermark passes their offsets with other records: applying up to it would
// answer those appends success. ok is false, and the shard deposed, when the log
// is in a later leader epoch (epochs only grow: the shard's leadership is over);
// ok is false alone while the leadership is fenced or the log has not reached the
// shard's epoch yet.
func (sh *shard) highWatermark() (hw int64, ok bool) {
	hw = sh.log.HighWatermark()
	switch e := sh.log.LeaderEpoch(); {
	case e > sh.epoch:
		sh.depose()
		return hw, false
	case e < sh.epoch:
		return hw, false
	}
	return hw, sh.log.IsLeader()
}

// waitApplied blocks until the record at offset is applied to Pebble (it is then
// committed: on every in-sync replica), ctx ends, or the shard stops or is deposed.
// offset must have been appended in the shard's leader epoch (append checks it):
// the shard applies only up to high watermarks of that leadership, so applied
// passing offset means this record, not another leadership's, is committed.
func (sh *shard) waitApplied(ctx context.Context, offset int64) error {
	ctx, cancel := context.WithTimeout(ctx, sh.c.cfg.CommitTimeout)
	defer cancel()
	for {
		sh.mu.Lock()
		applied, ch := sh.mu.applied, sh.mu.changed
		sh.mu.Unlock()
		if applied > offset {
			return nil
		}
		select {
		case <-ch:
		case <-sh.ctx.Done():
			return errNotCoordinator
		case <-sh.deposed:
			return errNotCoordinator
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// run catches Pebble up with the log, loads the groups, then applies every record
// committed from then on until stop.
func (sh *shard) run() {
	defer close(sh.done)
	wake := make(chan struct{}, 1)
	sh.log.AddWaiter(wake)
	defer sh.log.RemoveWaiter(wake)
	logger := sh.c.logger.With("partition", sh.id)

	var applied int64
	var err error
	if !sh.ready.Load() { // else empty at election: nothing to load (Elect)
		if applied, err = sh.store.Applied(); err == nil {
			applied, err = sh.start(applied, wake)
		}
	}
	for err != nil {
		if sh.ctx.Err() != nil {
			return
		}
		if sh.isDeposed() {
			logger.Debug("group coordinator: offsets partition left its leader epoch while loading", "err", err)
			<-sh.ctx.Done()
			return
		}
		pause := retryApply
		if errors.Is(err, kerr.NotLeaderForPartition) {
			// The broker has no session yet (or lost it): leadership is fenced for
			// a moment. Wait for it quietly.
			logger.Debug("group coordinator: waiting for the partition to lead", "err", err)
			pause = retryFenced
		} else {
			logger.Error("group coordinator: loading offsets partition failed; retrying", "err", err)
		}
		select {
		case <-sh.ctx.Done():
			return
		case <-time.After(pause):
		}
		if applied, err = sh.store.Applied(); err == nil {
			applied, err = sh.start(applied, wake)
		}
	}
	logger.Debug("group coordinator: offsets partition loaded", "applied", applied)

	for {
		if hw, ok := sh.highWatermark(); !ok {
			if sh.isDeposed() {
				// Nothing more to apply as this leadership's: the next Elect (or
				// the follower applier after Resign) carries on.
				<-sh.ctx.Done()
				return
			}
			// Fenced for a moment, or not in the shard's epoch yet: the log wakes
			// the shard when that changes; the pause bounds a missed wake-up, short
			// while records wait to be applied.
			pause := retryApply
			if applied < hw {
				pause = retryFenced
			}
			select {
			case <-sh.ctx.Done():
				return
			case <-wake:
			case <-time.After(pause):
			}
			continue
		} else if applied < hw {
			next, err := sh.apply(applied, hw)
			if next > applied {
				applied = next
				sh.publish(applied)
			}
			if err != nil {
				pause := retryApply
				if errors.Is(err, kerr.NotLeaderForPartition) {
					pause = retryFenced
				} else {
					logger.Error("group coordinator: applying __consumer_offsets to Pebble failed; retrying", "offset", applied, "err", err)
				}
				select {
				case <-sh.ctx.Done():
					return
				case <-time.After(pause):
				}
				continue
			}
		}
		select {
		case <-wake:
		case <-sh.ctx.Done():
			return
		}
	}
}

// empty reports whether the partition has nothing to load: its log never had a
// record and Pebble applied none of it (it applies and records its offset in one
// batch, so nothing of the partition is there either). A leader's log holds
// every committed record, so nothing committed is missed (start's target is
// this same log end offset).
func (sh *shard) empty() bool {
	if sh.log.LogEndOffset() != 0 {
		return false
	}
	applied, err := sh.store.Applied()
	return err == nil && applied == 0
}

// start applies the log up to the log end offset at election (once it is committed)
// and loads the groups.
func (sh *shard) start(applied int64, wake <-chan struct{}) (int64, error) {
	if end := sh.log.LogEndOffset(); applied > end {
		// The log lost records Pebble has applied (an unclean shutdown lost the
		// tail of the log): keep what Pebble has, and apply what comes next.
		sh.c.logger.Warn("group coordinator: Pebble applied past the log end", "partition", sh.id, "applied", applied, "log_end_offset", end)
		if err := sh.store.NewBatch().Commit(end); err != nil {
			return applied, err
		}
		applied = end
	}
	// Everything in the leader's log at its election is committed once the followers
	// have it: wait for that, so that no commit acknowledged by the previous leader is
	// missing from the groups loaded (on one node the high watermark is the log end).
	target := sh.log.LogEndOffset()
	for applied < target {
		progressed := false
		hw, ok := sh.highWatermark()
		if !ok {
			if sh.isDeposed() {
				return applied, fmt.Errorf("__consumer_offsets-%d left leader epoch %d while loading: %w", sh.id, sh.epoch, errNotCoordinator)
			}
			return applied, fmt.Errorf("__consumer_offsets-%d does not lead in epoch %d (yet, or fenced): %w", sh.id, sh.epoch, kerr.NotLeaderForPartition)
		}
		if applied < hw {
			next, err := sh.apply(applied, hw)
			if err != nil {
				return applied, err
			}
			progressed, applied = next > applied, next
		}
		if applied >= target {
			break
		}
		if !progressed {
			select {
			case <-wake:
			case <-time.After(retryFenced): // bounds a missed wake-up
			case <-sh.ctx.Done():
				return applied, sh.ctx.Err()
			}
		}
	}
	sh.publish(applied)
	if err := sh.load(); err != nil {
		return applied, err
	}
	sh.ready.Store(true)
	return applied, nil
}

func (sh *shard) publish(applied int64) {
	sh.mu.Lock()
	if applied > sh.mu.applied {
		sh.mu.applied = applied
		close(sh.mu.changed)
		sh.mu.changed = make(chan struct{})
	}
	sh.mu.Unlock()
}

// apply applies the log from offset from up to (at most) hw to Pebble and returns
// the offset it got to.
func (sh *shard) apply(from, hw int64) (int64, error) {
	return applyLog(sh.log.Read, sh.store, sh.id, sh.log.LogStartOffset(), from, hw, sh.c.logger)
}

// applyLog applies the records of __consumer_offsets partition id from offset from
// up to (at most) hw to store, reading them with read, and returns the offset it got
// to. Records below the log start are skipped; records that do not parse are logged
// and skipped. The log is compacted (offsets gap where the cleaner removed records
// that later ones replace). Leaders and followers apply the same way.
func applyLog(read func(offset, maxBytes int64) (*logstore.Slice, error), store *offsets.GroupShard,
	id int32, logStart, from, hw int64, logger *slog.Logger) (int64, error) {
	if from < logStart {
		from = logStart
	}
	for from < hw {
		s, err := read(from, readChunk)
		if err != nil {
			return from, fmt.Errorf("read __consumer_offsets-%d at %d: %w", id, from, err)
		}
		var buf bytes.Buffer
		_, err = s.WriteTo(&buf)
		s.Release()
		if err != nil {
			return from, fmt.Errorf("read __consumer_offsets-%d at %d: %w", id, from, err)
		}
		if buf.Len() == 0 {
			return from, nil // nothing below the high watermark yet
		}
		b := store.NewBatch()
		next := from
		err = batch.Split(buf.Bytes(), func(h batch.Header, raw []byte) error {
			if h.NextOffset() <= next || h.BaseOffset >= hw {
				return nil
			}
			if h.Control() {
				// A transaction's marker commits or drops its pending offsets. One
				// the compaction cleaner emptied has no records and ended its
				// transaction long ago: nothing to read, nothing to say.
				if h.RecordCount == 0 {
					next = h.NextOffset()
					return nil
				}
				if typ, err := batch.ControlType(raw); err != nil {
					logger.Warn("group coordinator: skipping a control batch it cannot read", "partition", id, "offset", h.BaseOffset, "err", err)
				} else if h.Transactional() && (typ == batch.ControlCommit || typ == batch.ControlAbort) {
					b.EndTxn(h.ProducerID, typ == batch.ControlCommit)
				}
				next = h.NextOffset()
				return nil
			}
			rerr := batch.Records(raw, func(r batch.Record) error {
				if r.Offset < next {
					return nil
				}
				var err error
				if h.Transactional() {
					err = applyTxnRecord(b, h.ProducerID, r, h.MaxTimestamp)
				} else {
					err = applyRecord(b, r, h.MaxTimestamp)
				}
				if err != nil {
					logger.Warn("group coordinator: skipping a record it cannot read", "partition", id, "offset", r.Offset, "err", err)
				}
				return nil
			})
			if rerr != nil {
				logger.Warn("group coordinator: skipping a batch it cannot read", "partition", id, "offset", h.BaseOffset, "err", rerr)
			}
			next = h.NextOffset()
			return nil
		})
		if err != nil {
			return from, fmt.Errorf("__consumer_offsets-%d at %d: %w", id, from, err)
		}
		if next == from {
			return from, nil
		}
		if err := b.Commit(next); err != nil {
			return from, fmt.Errorf("apply __consumer_offsets-%d up to %d: %w", id, next, err)
		}
		from = next
	}
	return from, nil
}

// load creates the shard's groups in memory from Pebble: groups with stored
// metadata get their generation and members back (members must heartbeat within
// their session timeout from now); groups with only offsets are Empty.
func (sh *shard) load() error {
	c := sh.c
	now := c.clock.Now()
	loaded := make(map[string]*group)
	err := sh.store.Groups(func(name string, value []byte, _ int64) error {
		var v kmsg.GroupMetadataValue
		// The decoded bytes fields alias their input, which Pebble reuses.
		if err := v.ReadFrom(append([]byte(nil), value...)); err != nil {
			c.logger.Warn("group coordinator: skipping unreadable group metadata", "group", name, "err", err)
			return nil
		}
		g := newGroup(c, sh, name)
		g.restore(&v, now)
		loaded[name] = g
		return nil
	})
	if err != nil {
		return fmt.Errorf("load group metadata of partition %d: %w", sh.id, err)
	}
	err = sh.store.Offsets(func(o offsets.GroupOffset) error {
		g := loaded[o.Group]
		if g == nil {
			g = newGroup(c, sh, o.Group)
			loaded[o.Group] = g
		}
		g.hasOffsets = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("load offsets of partition %d: %w", sh.id, err)
	}
	cl := consumerLoader{groups: make(map[string]*consumerGroup)}
	var shares shareRecordCollector
	err = sh.store.GroupRecords(func(key, value []byte) error {
		if isShareRecord(key) {
			shares.add(key, value)
			return nil
		}
		if err := cl.add(key, value); err != nil {
			c.logger.Warn("group coordinator: skipping unreadable consumer group record", "partition", sh.id, "err", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load consumer groups of partition %d: %w", sh.id, err)
	}
	for name, cg := range cl.finish() {
		g := loaded[name]
		if g == nil {
			g = newGroup(c, sh, name)
			loaded[name] = g
		}
		g.restoreConsumer(cg)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.shards[sh.id] != sh {
		return errors.New("resigned while loading")
	}
	if c.mu.shareGroups != nil {
		// Under c.mu: a Resign (which drops them) cannot come between.
		c.mu.shareGroups.LoadShareGroups(sh.id, shares)
	}
	for name, g := range loaded {
		if old := c.mu.groups[name]; old != nil && old.sh == sh {
			continue // created by a request meanwhile (cannot happen before ready)
		}
		c.mu.groups[name] = g
		g.mu.Lock()
		for _, m := range g.members {
			g.heartbeatLocked(m)
		}
		if g.cg != nil {
			for _, m := range g.cg.members {
				g.touchConsumerLocked(m)
			}
		}
		g.mu.Unlock()
	}
	return nil
}
