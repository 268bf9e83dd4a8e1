package replication

// Flush policy (flush.policy; guarantees in docs/durability.md).
//
// Every partition has a syncer goroutine, the only caller of logstore.Log.Sync
// apart from rolls and Close. Under FlushAlways an append (leader) or a waiting
// producer wakes it; one fdatasync then covers every batch appended before it
// started (group commit: appends go on while it runs, and the batches appended
// meanwhile are covered by the next one). Producers wait for "synced up to offset
// X" (Log.SyncedOffset), never holding appendMu across an fsync. Under
// FlushInterval it syncs every flush.ms; under FlushReplicated only rolls and
// Close sync.
//
// Under FlushAlways the leader's high watermark is also capped at its own synced
// offset, and followers fdatasync what they fetched before their next fetch
// reports it (follower.go), so a record committed under acks=all is on the disk of
// every in-sync replica, and consumers never read a record a power failure of the
// whole ISR could take back.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// FlushPolicy is flush.policy: when appended batches are fdatasynced, and whether
// producers wait for it.
type FlushPolicy int8

const (
	// FlushReplicated acknowledges a batch once it is in the page cache of every
	// in-sync replica (acks=all), or of the leader (acks=1); segments are synced
	// when they roll and at close. Kafka's model; the zero value.
	FlushReplicated FlushPolicy = iota
	// FlushAlways fdatasyncs before acknowledging (acks=1 and acks=all), with group
	// commit; followers sync before reporting what they fetched.
	FlushAlways
	// FlushInterval fdatasyncs every PartitionConfig.FlushInterval (flush.ms) and
	// acknowledges as FlushReplicated does.
	FlushInterval
)

// ParseFlushPolicy parses a flush.policy value: replicated, always or interval.
func ParseFlushPolicy(s string) (FlushPolicy, error) {
	switch s {
	case "replicated":
		return FlushReplicated, nil
	case "always":
		return FlushAlways, nil
	case "interval":
		return FlushInterval, nil
	}
	return 0, fmt.Errorf("replication: unknown flush.policy %q (replicated, always or interval)", s)
}

func (f FlushPolicy) String() string {
	switch f {
	case FlushAlways:
		return "always"
	case FlushInterval:
		return "interval"
	}
	return "replicated"
}

// syncer is a partition's sync goroutine's handles.
type syncer struct {
	wake chan struct{} // buffered (1): a sync is wanted
	stop chan struct{}
	done chan struct{}
}

func (p *Partition) startSyncer() {
	p.syncer = syncer{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go p.syncLoop()
}

// stopSyncer ends the sync goroutine; it is idempotent.
func (p *Partition) stopSyncer() {
	p.stopOnce.Do(func() {
		close(p.syncer.stop)
		<-p.syncer.done
	})
}

// requestSync wakes the syncer; requests made while a sync runs are served by one
// more sync after it (group commit).
func (p *Partition) requestSync() {
	select {
	case p.syncer.wake <- struct{}{}:
	default:
	}
}

// wantsSyncOnAppend reports whether an append should wake the syncer at once.
func (cfg *PartitionConfig) wantsSyncOnAppend() bool {
	return cfg.Flush == FlushAlways || cfg.Flush == FlushInterval && cfg.FlushInterval <= 0
}

func (p *Partition) syncLoop() {
	defer close(p.syncer.done)
	var (
		ticker *time.Ticker
		tick   <-chan time.Time
		every  time.Duration
	)
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		cfg := p.cfg.Load()
		want := time.Duration(0)
		if cfg.Flush == FlushInterval && cfg.FlushInterval > 0 {
			want = cfg.FlushInterval
		}
		if want != every {
			if ticker != nil {
				ticker.Stop()
				ticker, tick = nil, nil
			}
			if want > 0 {
				ticker = time.NewTicker(want)
				tick = ticker.C
			}
			every = want
		}
		select {
		case <-p.syncer.stop:
			return
		case <-p.syncer.wake:
		case <-tick:
		}
		p.syncNow()
	}
}

// syncNow fdatasyncs what was appended so far, unless that is synced already, and
// tells the waiters. A failure is latched by the log (Log.Failed).
func (p *Partition) syncNow() {
	if p.log.SyncedOffset() >= p.log.LogEndOffset() || p.log.Failed() != nil {
		return
	}
	if err := p.log.Sync(); err != nil && p.log.Failed() == nil {
		// Not a failed fsync (that is latched and logged by the log): the index
		// could not record the recovery point. The data is synced; the next sync
		// records it.
		p.logger.Warn("recording the recovery point", "err", err)
	}
	p.maybeAdvanceHW()
	p.notify()
}

// ownEnd is how far this replica's own log counts towards the high watermark (as
// leader) or towards its fetch offset (as follower): its log end, or under
// FlushAlways its synced offset.
func (p *Partition) ownEnd() int64 {
	if p.cfg.Load().Flush == FlushAlways {
		return min(p.log.SyncedOffset(), p.log.LogEndOffset())
	}
	return p.log.LogEndOffset()
}

// UnsyncedBytes is what a power failure of this node could take from this
// replica's log: bytes appended but not yet fdatasynced. Under FlushAlways none of
// them was acknowledged; under the other policies they may have been.
func (p *Partition) UnsyncedBytes() int64 { return p.log.UnsyncedBytes() }

// SyncBeforeAck reports whether an acks=1 producer waits for an fdatasync too
// (flush.policy=always); acks=all always waits (WaitAcked).
func (p *Partition) SyncBeforeAck() bool { return p.cfg.Load().Flush == FlushAlways }

// WaitAcked blocks until the batch whose last record is at offset may be
// acknowledged to a producer that asked for acks (1 or -1): for acks=-1 once the
// high watermark passes it (every in-sync replica has it; under FlushAlways on
// disk), and under FlushAlways once the leader's fdatasync covers it. It fails
// with KAFKA_STORAGE_ERROR when the log cannot be synced any more (a latched fsync
// failure), NOT_LEADER_OR_FOLLOWER when this replica no longer leads in epoch (the
// AppendResult's LeaderEpoch), NOT_ENOUGH_REPLICAS_AFTER_APPEND for acks=-1 when
// the ISR is smaller than min.insync.replicas once the high watermark passed the
// batch, or ctx's error.
//
// The high watermark counts only while the leadership of the append lasts: a
// replica that stopped leading may have had the batch truncated, and its high
// watermark (a follower's, or a later leadership's) may pass offset with other
// records there. As in Kafka, losing the leadership answers NOT_LEADER_OR_FOLLOWER
// even when the batch may have been committed; the producer retries.
func (p *Partition) WaitAcked(ctx context.Context, epoch int32, offset int64, acks int16) error {
	ch := make(chan struct{}, 1)
	registered := false
	defer func() {
		if registered {
			p.RemoveWaiter(ch)
		}
	}()
	for {
		always := p.cfg.Load().Flush == FlushAlways
		synced := !always || p.log.SyncedOffset() > offset
		committed := acks != -1 || p.hw.Load() > offset
		// Read after the high watermark: a leadership that lasts from the
		// append to here is the one that high watermark belongs to.
		led := p.IsLeader() && p.leaderEpoch.Load() == epoch
		if synced && committed && led {
			if acks == -1 {
				// As Kafka: a high watermark that passed the batch because the
				// ISR shrank does not keep the min.insync.replicas promise.
				if isr, min := len(p.ISR()), p.cfg.Load().MinInsyncReplicas; isr < min {
					return fmt.Errorf("%s-%d has %d in-sync replicas after offset %d was appended, min.insync.replicas is %d: %w",
						p.Topic, p.ID, isr, offset, min, kerr.NotEnoughReplicasAfterAppend)
				}
			}
			return nil
		}
		if !synced {
			if err := p.log.Failed(); err != nil {
				return fmt.Errorf("%s-%d cannot sync offset %d: %v: %w", p.Topic, p.ID, offset, err, kerr.KafkaStorageError)
			}
			p.requestSync()
		}
		if !led {
			return fmt.Errorf("%s-%d stopped leading (epoch %d) before offset %d was acknowledged: %w", p.Topic, p.ID, epoch, offset, kerr.NotLeaderForPartition)
		}
		if !registered {
			p.AddWaiter(ch)
			registered = true
			continue // look again: the state may have moved before the waiter was added
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for offset %d of %s-%d to be acknowledged: %w", offset, p.Topic, p.ID, ctx.Err())
		}
	}
}
