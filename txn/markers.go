package txn

import (
	"context"

	"skiff/replication"
)

// OffsetsApplied waits until the record at offset of a __consumer_offsets partition
// is applied by the group coordinator (groups.Coordinator.WaitApplied).
type OffsetsApplied func(ctx context.Context, partition int32, offset int64) error

// LocalMarker is a marker and the partition, led here, it goes to.
type LocalMarker struct {
	To     *replication.Partition
	Marker Marker
}

// WriteLocalMarkers appends markers to their partitions, then waits until each
// is committed (and synced under flush.policy=always; on __consumer_offsets also
// applied, so that the offsets it commits are visible), and returns each one's
// error, in order. Errors carry Kafka codes (kerr).
//
// Every marker is appended before the first wait: a follower's fetch parked at
// this leader wakes on the first append and, by the time it reads, usually
// finds the others too, so one fetch round commits them all (appended one by
// one as each waited, a transaction's two partitions on one leader often took
// two rounds).
func WriteLocalMarkers(ctx context.Context, ms []LocalMarker, applied OffsetsApplied) []error {
	errs := make([]error, len(ms))
	res := make([]replication.AppendResult, len(ms))
	for i, m := range ms {
		res[i], errs[i] = m.To.WriteMarker(m.Marker.ProducerID, m.Marker.Epoch, m.Marker.Commit, m.Marker.CoordinatorEpoch)
	}
	for i, m := range ms {
		if errs[i] != nil {
			continue
		}
		errs[i] = m.To.WaitHighWatermark(ctx, res[i].LeaderEpoch, res[i].LastOffset)
		if errs[i] == nil && m.Marker.Topic == OffsetsTopic && applied != nil {
			errs[i] = applied(ctx, m.Marker.Partition, res[i].LastOffset)
		}
	}
	return errs
}
