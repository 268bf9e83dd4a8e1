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
// error and the producer's marker stamp after it (notice.go), in order.
// Errors carry Kafka codes (kerr).
//
// Every marker is appended before the first wait: a follower's fetch parked at
// this leader wakes on the first append and, by the time it reads, usually
// finds the others too, so one fetch round commits them all (appended one by
// one as each waited, a transaction's two partitions on one leader often took
// two rounds).
func WriteLocalMarkers(ctx context.Context, ms []LocalMarker, applied OffsetsApplied) ([]error, []Stamp) {
	errs := make([]error, len(ms))
	stamps := make([]Stamp, len(ms))
	res := make([]replication.AppendResult, len(ms))
	for i, m := range ms {
		res[i], errs[i] = m.To.WriteMarker(m.Marker.ProducerID, m.Marker.Epoch, m.Marker.Commit, m.Marker.CoordinatorEpoch, m.Marker.TV2)
		if errs[i] == nil {
			// Read after the marker: a later marker's stamp would do as
			// well (notices bound to it end with that marker), an earlier
			// one's never.
			stamps[i].Stamp, stamps[i].LeaderEpoch = m.To.MarkerStamp(m.Marker.ProducerID)
			if stamps[i].LeaderEpoch != res[i].LeaderEpoch {
				stamps[i] = Stamp{} // leadership moved meanwhile
			}
		}
	}
	for i, m := range ms {
		if errs[i] != nil {
			continue
		}
		errs[i] = m.To.WaitHighWatermark(ctx, res[i].LeaderEpoch, res[i].LastOffset)
		if errs[i] == nil && m.Marker.Topic == OffsetsTopic && applied != nil {
			errs[i] = applied(ctx, m.Marker.Partition, res[i].LastOffset)
		}
		if errs[i] != nil {
			stamps[i] = Stamp{}
		}
	}
	return errs, stamps
}
