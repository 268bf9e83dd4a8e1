package txn

import (
	"context"
	"sync"

	"skiff/replication"
)

// OffsetsApplied waits until the record at offset of a __consumer_offsets partition
// is applied by the group coordinator (groups.Coordinator.WaitApplied).
type OffsetsApplied func(ctx context.Context, partition int32, offset int64) error

// WriteMarkerTo appends marker m to p, which leads here, and returns once it is
// committed; on __consumer_offsets also once applied, so that the offsets it
// commits are visible. Errors carry Kafka codes (kerr).
func WriteMarkerTo(ctx context.Context, p *replication.Partition, m Marker, applied OffsetsApplied) error {
	res, err := p.WriteMarker(m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch)
	if err == nil {
		err = p.WaitHighWatermark(ctx, res.LeaderEpoch, res.LastOffset)
	}
	if err == nil && m.Topic == OffsetsTopic && applied != nil {
		err = applied(ctx, m.Partition, res.LastOffset)
	}
	return err
}

// LocalMarker is a marker and the partition, led here, it goes to.
type LocalMarker struct {
	To     *replication.Partition
	Marker Marker
}

// WriteLocalMarkers writes markers to their partitions all at once (each waits
// for its own commit, and sync under flush.policy=always) and returns each one's
// error, in order.
func WriteLocalMarkers(ctx context.Context, ms []LocalMarker, applied OffsetsApplied) []error {
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = WriteMarkerTo(ctx, m.To, m.Marker, applied)
		}()
	}
	wg.Wait()
	return errs
}
