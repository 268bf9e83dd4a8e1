package bench

import (
	"net"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/kafkaapi"
	"skiff/logstore"
)

// The NullServer's read side: ListOffsets and Fetch from its partition files,
// with the broker's response writer (whole batches, sendfile), and nothing a
// broker adds: no high watermark but the end of the file, no leader epochs, no
// fetch sessions, no waiting for min_bytes (a fetch at the end is answered
// empty at once).

// listOffsets answers -1 (latest) with the next offset and every other
// timestamp with 0, the start of every partition.
func (s *NullServer) listOffsets(req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, rp := range t.Partitions {
			pr := kmsg.NewListOffsetsResponseTopicPartition()
			pr.Partition, pr.Timestamp, pr.LeaderEpoch = rp.Partition, -1, -1
			if p := s.partition(t.Topic, rp.Partition); p == nil {
				pr.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if rp.Timestamp == -1 {
				p.mu.Lock()
				pr.Offset = p.next
				p.mu.Unlock()
			} else {
				pr.Offset = 0
			}
			if req.Version == 0 && pr.ErrorCode == 0 {
				pr.OldStyleOffsets = []int64{pr.Offset}
			}
			rt.Partitions = append(rt.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// nullFetchPartition is one partition of a fetch answer.
type nullFetchPartition struct {
	id      int32
	errCode int16
	hw      int64
	rng     logstore.Range // Len 0: no records
}

// fetch answers req on c: whole batches from each partition's fetch offset, at
// most partition_max_bytes each and max_bytes in all, but at least the first
// batch found (KIP-74).
func (s *NullServer) fetch(c net.Conn, w *kafkaapi.FrameWriter, hdr *kafkaapi.RequestHeader, req *kmsg.FetchRequest) error {
	budget := int64(req.MaxBytes)
	if budget <= 0 {
		budget = 1<<31 - 1
	}
	var total int64
	topics := make([][]nullFetchPartition, len(req.Topics))
	for i, t := range req.Topics {
		topics[i] = make([]nullFetchPartition, len(t.Partitions))
		for j, rp := range t.Partitions {
			fp := &topics[i][j]
			fp.id, fp.hw = rp.Partition, -1
			p := s.partition(t.Topic, rp.Partition)
			if p == nil {
				fp.errCode = kerr.UnknownTopicOrPartition.Code
				continue
			}
			limit := min(int64(rp.PartitionMaxBytes), budget)
			if total > 0 {
				limit = max(limit, 0)
			} else {
				limit = max(limit, 1) // the first batch found goes whole
			}
			fp.hw, fp.rng, fp.errCode = p.read(rp.FetchOffset, limit)
			if total > 0 && fp.rng.Len > limit {
				fp.rng = logstore.Range{} // only the first partition with data may exceed the limits
			}
			total += fp.rng.Len
			budget -= fp.rng.Len
		}
	}
	w.Reset()
	w.Int32(hdr.CorrelationID)
	w.Int32(0) // throttle_time_ms
	if req.Version >= 7 {
		w.Int16(0) // error_code
		w.Int32(0) // session_id: no fetch sessions
	}
	w.Int32(int32(len(topics)))
	for i, parts := range topics {
		w.Str(req.Topics[i].Topic)
		w.Int32(int32(len(parts)))
		for _, p := range parts {
			w.Int32(p.id)
			w.Int16(p.errCode)
			w.Int64(p.hw)
			w.Int64(p.hw) // last_stable_offset
			if req.Version >= 5 {
				w.Int64(0) // log_start_offset
			}
			w.Int32(-1) // aborted_transactions: null
			if req.Version >= 11 {
				w.Int32(-1) // preferred_read_replica
			}
			w.Int32(int32(p.rng.Len))
			if p.rng.Len > 0 {
				w.Ranges([]logstore.Range{p.rng})
			}
		}
	}
	err := w.Send(c, s.metrics, nullServerWriteTimeout)
	w.Release()
	return err
}

// read picks the whole batches from offset on that fit in limit bytes (the
// first one whatever its size when limit is positive) and returns them with
// the partition's end offset as its high watermark.
func (p *nullPartition) read(offset, limit int64) (hw int64, rng logstore.Range, errCode int16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset < 0 || offset > p.next {
		return p.next, rng, kerr.OffsetOutOfRange.Code
	}
	if offset == p.next || limit <= 0 {
		return p.next, rng, 0
	}
	// The batch holding offset: the last one starting at or before it.
	i := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].base > offset }) - 1
	first := p.batches[i].pos
	endOf := func(k int) int64 { // where batch k ends
		if k+1 < len(p.batches) {
			return p.batches[k+1].pos
		}
		return p.end
	}
	end := endOf(i)
	for k := i + 1; k < len(p.batches) && endOf(k)-first <= limit; k++ {
		end = endOf(k)
	}
	return p.next, logstore.Range{File: p.file, Pos: first, Len: end - first, BaseOffset: p.batches[i].base}, 0
}
