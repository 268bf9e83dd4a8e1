package kafkaapi

// Fetch, key 1, versions 4..11 (the last non-flexible ones).
//
// Behaviour: whole batches from each requested partition below its high watermark,
// at most partition_max_bytes per partition and max_bytes in all, except that the
// first batch of the first partition with data is sent whole however large (KIP-74).
// A request whose data is below min_bytes parks until a partition it reads receives
// data, or max_wait_ms passes, or the server shuts down; an error in any partition
// answers at once, and a partition that stops being led here (this broker's session
// is in doubt, or leadership moved) is such an error: NOT_LEADER_OR_FOLLOWER. While
// this broker confirms its session a fetch first waits for it, up to fencedWait. Record bytes go from segment files to the socket with sendfile.
// current_leader_epoch (v9+) is checked: older is FENCED_LEADER_EPOCH, newer
// UNKNOWN_LEADER_EPOCH.
//
// Followers fetch with their broker id as replica_id: they get records up to the
// leader's log end (not the high watermark), and their fetch offset is their log end,
// which moves the high watermark and their ISR standing (replication.ReadReplica).
//
// Not implemented: fetch sessions (KIP-227: session_id is always 0, so every fetch is
// a full fetch and forgotten_topics is ignored), follower fetching from the closest
// replica (preferred_read_replica is always -1), aborted transactions (there are none:
// last_stable_offset = high watermark, aborted_transactions = null).

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/logstore"
	"skiff/replication"
)

type fetchPartition struct {
	id       int32
	errCode  int16
	hw       int64
	logStart int64
	slice    *logstore.Slice
}

type fetchTopic struct {
	name  string
	parts []fetchPartition
}

func (s *Server) handleFetch(c *conn, hdr *requestHeader, req *kmsg.FetchRequest) error {
	s.waitUnfenced(c)
	var wake chan struct{}
	var watched []*replication.Partition
	if req.MaxWaitMillis > 0 && req.MinBytes > 0 {
		// Register before reading, so data that lands between the read and the wait
		// still wakes this request.
		wake = make(chan struct{}, 1)
		for _, t := range req.Topics {
			for _, rp := range t.Partitions {
				if p := s.parts.Partition(t.Topic, rp.Partition); p != nil {
					p.AddWaiter(wake)
					watched = append(watched, p)
				}
			}
		}
		defer func() {
			for _, p := range watched {
				p.RemoveWaiter(wake)
			}
		}()
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	var timer *time.Timer
	for {
		topics, total, anyErr := s.readFetch(req)
		if anyErr || total >= int64(req.MinBytes) || wake == nil || c.ctx.Err() != nil || !time.Now().Before(deadline) {
			err := s.writeFetch(c, hdr, req, topics)
			releaseFetch(topics)
			return err
		}
		releaseFetch(topics)
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
			defer timer.Stop()
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-c.ctx.Done():
		}
	}
}

// readFetch picks every partition's file ranges. It reports the record bytes found and
// whether any partition has an error.
func (s *Server) readFetch(req *kmsg.FetchRequest) (topics []fetchTopic, total int64, anyErr bool) {
	budget := int64(req.MaxBytes)
	if budget <= 0 {
		budget = 1<<31 - 1
	}
	topics = make([]fetchTopic, len(req.Topics))
	for i, t := range req.Topics {
		topics[i] = fetchTopic{name: t.Topic, parts: make([]fetchPartition, len(t.Partitions))}
		for j, rp := range t.Partitions {
			fp := &topics[i].parts[j]
			fp.id, fp.hw, fp.logStart = rp.Partition, -1, -1
			p, code := s.localPartition(t.Topic, rp.Partition)
			if code == 0 {
				code = checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch())
			}
			if code != 0 {
				fp.errCode, anyErr = code, true
				continue
			}
			fp.hw, fp.logStart = p.HighWatermark(), p.LogStartOffset()
			limit := min(int64(rp.PartitionMaxBytes), budget)
			if limit <= 0 && total > 0 {
				continue
			}
			var sl *logstore.Slice
			var err error
			if req.ReplicaID >= 0 {
				sl, err = p.ReadReplica(req.ReplicaID, rp.CurrentLeaderEpoch, rp.FetchOffset, max(limit, 1))
				fp.hw = p.HighWatermark() // the follower's fetch may have moved it
			} else {
				sl, err = p.Read(rp.FetchOffset, max(limit, 1))
			}
			if err != nil {
				fp.errCode, anyErr = errorCode(err), true
				continue
			}
			// Only the first partition with data may exceed the limits (KIP-74).
			if total > 0 && sl.Bytes > limit {
				sl.Release()
				continue
			}
			fp.slice = sl
			total += sl.Bytes
			budget -= sl.Bytes
		}
	}
	return topics, total, anyErr
}

func releaseFetch(topics []fetchTopic) {
	for _, t := range topics {
		for _, p := range t.parts {
			if p.slice != nil {
				p.slice.Release()
			}
		}
	}
}

func (s *Server) writeFetch(c *conn, hdr *requestHeader, req *kmsg.FetchRequest, topics []fetchTopic) error {
	v := req.Version
	w := c.fetchWriter()
	w.reset()
	w.int32(hdr.correlationID)
	w.int32(0) // throttle_time_ms
	if v >= 7 {
		w.int16(0) // error_code
		w.int32(0) // session_id: no fetch sessions
	}
	w.int32(int32(len(topics)))
	for _, t := range topics {
		w.string(t.name)
		w.int32(int32(len(t.parts)))
		for _, p := range t.parts {
			w.int32(p.id)
			w.int16(p.errCode)
			w.int64(p.hw)
			w.int64(p.hw) // last_stable_offset: no transactions
			if v >= 5 {
				w.int64(p.logStart)
			}
			w.int32(-1) // aborted_transactions: null
			if v >= 11 {
				w.int32(-1) // preferred_read_replica
			}
			if p.slice == nil {
				w.int32(0)
				continue
			}
			w.int32(int32(p.slice.Bytes))
			w.ranges(p.slice.Ranges)
		}
	}
	err := w.writeTo(c.nc, s.metrics, s.cfg.IdleTimeout)
	w.release()
	return err
}

// checkLeaderEpoch compares a client's current_leader_epoch (-1: no check) with ours.
func checkLeaderEpoch(theirs, ours int32) int16 {
	switch {
	case theirs < 0 || theirs == ours:
		return 0
	case theirs < ours:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// fencedWait bounds how long a Produce or Fetch waits while this node's partitions
// are fenced: its broker session is in doubt, and it is confirming it or registering
// again (milliseconds when etcd has quorum; appliance/session.go). The leadership
// usually stays here, and answering NOT_LEADER_OR_FOLLOWER at once would send the
// client to refresh its metadata, which franz-go does at most every 5 s. Once the
// node knows, the request is served, or refused if a partition moved.
const fencedWait = 500 * time.Millisecond

// waitUnfenced waits up to fencedWait while this node's partitions are fenced.
func (s *Server) waitUnfenced(c *conn) {
	if !s.parts.Fenced() {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, fencedWait)
	defer cancel()
	s.parts.WaitUnfenced(ctx)
}

// localPartition finds the replica this broker leads, or the error code to answer:
// UNKNOWN_TOPIC_OR_PARTITION when the metadata has no such partition,
// NOT_LEADER_OR_FOLLOWER when it exists but is not served here.
func (s *Server) localPartition(topic string, id int32) (*replication.Partition, int16) {
	if p := s.parts.Partition(topic, id); p != nil && p.IsLeader() {
		return p, 0
	}
	if s.parts.Offline(topic, id) != nil {
		return nil, kerr.KafkaStorageError.Code // its log could not be opened
	}
	if t, ok := s.cache.Topic(topic); ok && id >= 0 && id < t.Partitions {
		return nil, kerr.NotLeaderForPartition.Code
	}
	return nil, kerr.UnknownTopicOrPartition.Code
}

// errorCode maps an error to the Kafka code it carries; errors without one are
// reported as KAFKA_STORAGE_ERROR by the partition layer, or UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
