package replication

// DeleteRecords, Kafka's way: the leader moves its log start offset (durably, in
// the log's index) and followers learn the new start from the log_start_offset of
// their fetch responses and move theirs, which their next fetches report back.
// The leader's low watermark is the lowest log start of itself and its in-sync
// followers; a DeleteRecords request is done when the low watermark reaches the
// offset it asked for.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/logstore"
)

// DeleteRecords moves the log start offset of this partition, which this replica
// leads, up to offset (-1: the high watermark), as Kafka's DeleteRecords does: the
// records below it can no longer be read and retention deletes the segments
// wholly below it. It returns the offset asked for. An offset past the high
// watermark is OFFSET_OUT_OF_RANGE; one at or below the log start changes
// nothing. Errors wrap a *kerr.Error.
func (p *Partition) DeleteRecords(offset int64) (int64, error) {
	if !p.IsLeader() {
		return -1, fmt.Errorf("%s-%d is not led by this broker: %w", p.Topic, p.ID, kerr.NotLeaderForPartition)
	}
	hw := p.hw.Load()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, fmt.Errorf("offset %d is outside [0, high watermark %d]: %w", offset, hw, kerr.OffsetOutOfRange)
	}
	p.appendMu.Lock()
	moved, err := p.log.AdvanceLogStart(offset)
	p.appendMu.Unlock()
	switch {
	case errors.Is(err, logstore.ErrOffsetOutOfRange):
		return -1, fmt.Errorf("%v: %w", err, kerr.OffsetOutOfRange)
	case err != nil:
		return -1, fmt.Errorf("delete records of %s-%d: %v: %w", p.Topic, p.ID, err, kerr.KafkaStorageError)
	}
	if moved {
		p.forgetAbortedBefore(offset)
		p.logger.Info("records deleted", "log_start_offset", offset)
		p.notify()
	}
	return offset, nil
}

// LowWatermark is the lowest log start offset of this leader and its in-sync
// followers (-1 while a follower's is not known yet): every replica that may lead
// next has deleted the records below it.
func (p *Partition) LowWatermark() int64 {
	low := p.log.LogStartOffset()
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	for _, r := range p.st.isr {
		if f := p.st.followers[r]; r != p.self && f != nil {
			low = min(low, f.logStart)
		}
	}
	return low
}

// WaitLowWatermark blocks until LowWatermark reaches offset, this replica stops
// leading (NOT_LEADER_OR_FOLLOWER), or ctx ends (its error). It returns the low
// watermark last seen.
func (p *Partition) WaitLowWatermark(ctx context.Context, offset int64) (int64, error) {
	ch := make(chan struct{}, 1)
	p.AddWaiter(ch)
	defer p.RemoveWaiter(ch)
	for {
		low := p.LowWatermark()
		if low >= offset {
			return low, nil
		}
		if !p.IsLeader() {
			return low, fmt.Errorf("%s-%d stopped leading: %w", p.Topic, p.ID, kerr.NotLeaderForPartition)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return low, ctx.Err()
		}
	}
}

// followLogStart moves a follower's log start up to its leader's (which
// DeleteRecords or retention moved), no further than this replica's high
// watermark: it never starts past what it knows to be committed.
func (p *Partition) followLogStart(leaderStart int64) error {
	to := min(leaderStart, p.hw.Load())
	if to <= p.log.LogStartOffset() {
		return nil
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	_, err := p.log.AdvanceLogStart(to)
	return err
}
