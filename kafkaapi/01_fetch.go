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
// this broker confirms its session a fetch first waits for it, up to fencedWait.
// Record bytes go from segment files to the socket with sendfile (an answer of at
// most 32 KiB in one write: FrameWriter).
// The answer holds each partition's segment files open until it is written, so
// a fetch stops adding partitions' data once it holds a quarter of the segment
// file cache's capacity in sealed segment files, or once the answers of all
// connections together hold half of it (fetchFileShares; the active segments are
// open anyway): the partitions after it answer no records and come in the next
// fetch, as when max_bytes is reached. The first partition with data is
// answered whatever it holds.
// current_leader_epoch (v9+) is checked: older is FENCED_LEADER_EPOCH, newer
// UNKNOWN_LEADER_EPOCH.
//
// Followers fetch with their broker id as replica_id: they get records up to the
// leader's log end (not the high watermark), and their fetch offset is their log end,
// which moves the high watermark and their ISR standing (replication.ReadReplica).
// A follower outside the ISR gets no data for a partition under the leader's
// replication throttle while that is spent, and parks until it frees (or
// max_wait_ms); an answer carries at most a tenth of a second of that rate for
// all such partitions together (the first batch whole), and its bytes count
// when the answer is written.
//
// Authorization, as in Kafka: a follower's fetch needs CLUSTER_ACTION on the cluster, a
// consumer's READ on each topic; a refused partition answers TOPIC_AUTHORIZATION_FAILED
// at once, and nothing of it is read (nor does a follower's fetch move the ISR).
//
// Quotas (docs/quotas.md): a consumer's max_bytes is capped at what its
// consumer_byte_rate allows in a quota window, and the record bytes answered
// count against it. A fetch that takes the consumer over its quota is
// answered with its data, throttle_time_ms and the connection muted for that
// long (the fetch size cap bounds the debt); one that finds the consumer
// still throttled (from another connection) gets no data and the time left.
// Kafka instead drops the data of the fetch that goes over: with the token
// bucket that wastes a round trip per fetch (docs/quotas.md). Followers are
// not measured. throttle_time_ms is the larger of that throttle and the
// request_percentage one (the fetch's handling time so far, long poll aside).
//
// Not implemented: fetch sessions (KIP-227: session_id is always 0, so every fetch is
// a full fetch and forgotten_topics is ignored), follower fetching from the closest
// replica (preferred_read_replica is always -1).
//
// Transactions: every partition answers its last stable offset (LSO). A consumer at
// isolation_level read_committed (1) gets no record at or above the LSO, and the
// aborted transactions (producer id, first offset) whose records the answer may
// hold, so that it drops them; read_uncommitted (0) reads up to the high watermark
// and gets aborted_transactions null. Both are sent with sendfile.

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/logstore"
	"skiff/quota"
	"skiff/replication"
)

func init() {
	register(api[*kmsg.FetchRequest]{
		min: 4, max: 11,
		write:   (*Server).handleFetch,
		entries: fetchEntries,
	})
}

// fetchEntries counts the partitions of each topic, read and forgotten.
func fetchEntries(r *kmsg.FetchRequest) (n int) {
	for _, t := range r.Topics {
		n += topicEntries(len(t.Partitions))
	}
	for _, t := range r.ForgottenTopics {
		n += topicEntries(len(t.Partitions))
	}
	return n
}

type fetchPartition struct {
	id       int32
	errCode  int16
	hw       int64
	lso      int64
	logStart int64
	slice    *logstore.Slice
	files    int                      // sealed segment files slice holds, counted in Server.fetchFiles
	aborted  []replication.AbortedTxn // read_committed only; nil: null
	// replica is the partition a follower's fetch read (nil for consumers):
	// its bytes count against the leader's replication throttle once sent.
	replica *replication.Partition
}

type fetchTopic struct {
	name  string
	parts []fetchPartition
}

func (s *Server) handleFetch(c *conn, hdr *RequestHeader, req *kmsg.FetchRequest) error {
	s.waitUnfenced(c, func(yield func(string, int32) bool) {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if !yield(t.Topic, p.Partition) {
					return
				}
			}
		}
	})
	mayRead := c.allowedTopics(acl.OpRead)
	if req.ReplicaID >= 0 {
		follower := c.allowedCluster(acl.OpClusterAction)
		mayRead = func(string) bool { return follower }
	}
	var denied map[string]bool
	for _, t := range req.Topics {
		if !mayRead(t.Topic) {
			if denied == nil {
				denied = map[string]bool{}
			}
			denied[t.Topic] = true
		}
	}
	consumer := req.ReplicaID < 0
	if most, ok := s.quotas.MaxInWindow(quota.ConsumerByteRate, c.principal.Name, hdr.ClientID); ok && consumer {
		// As Kafka: a fetch takes at most what the quota allows in a window,
		// so that one response cannot throttle its consumer for long.
		if req.MaxBytes <= 0 || float64(req.MaxBytes) > most {
			req.MaxBytes = int32(min(max(most, 1), 1<<31-1))
		}
	}
	var wake chan struct{}
	var watched []*replication.Partition
	if req.MaxWaitMillis > 0 && req.MinBytes > 0 {
		// Register before reading, so data that lands between the read and the wait
		// still wakes this request. A follower's fetch waits for records, not for
		// high watermark moves.
		wake = make(chan struct{}, 1)
		add, remove := (*replication.Partition).AddWaiter, (*replication.Partition).RemoveWaiter
		if req.ReplicaID >= 0 {
			add, remove = (*replication.Partition).AddReplicaWaiter, (*replication.Partition).RemoveReplicaWaiter
		}
		for _, t := range req.Topics {
			for _, rp := range t.Partitions {
				if p := s.parts.Partition(t.Topic, rp.Partition); p != nil {
					add(p, wake)
					watched = append(watched, p)
				}
			}
		}
		defer func() {
			for _, p := range watched {
				remove(p, wake)
			}
		}()
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	var timer *time.Timer
	for {
		topics, total, anyErr := s.readFetch(req, denied)
		if anyErr || total >= int64(req.MinBytes) || wake == nil || c.ctx.Err() != nil || !time.Now().Before(deadline) {
			if consumer && total > 0 {
				if th := s.quotas.Owed(quota.ConsumerByteRate, c.principal.Name, hdr.ClientID, time.Now()); th > 0 {
					// Still throttled (it fetched on another connection): no
					// data, as Kafka answers a throttled fetch.
					s.releaseFetch(topics)
					topics = nil
					c.throttle = th
				} else {
					c.throttle = c.recordQuota(hdr, quota.ConsumerByteRate, float64(total))
				}
			}
			// The answer carries the larger of the byte and the request
			// throttle, as Kafka's does.
			th := c.requestThrottle(hdr)
			c.muted = th
			recordReplicaSent(req.ReplicaID, topics)
			err := s.writeFetch(c, hdr, req, topics, th)
			s.releaseFetch(topics)
			return err
		}
		wait := time.Until(deadline)
		if th := leaderThrottleWait(req.ReplicaID, topics); th > 0 && th < wait {
			// A follower held back by the leader's replication throttle
			// gets its data once the throttle frees, not at max_wait_ms.
			wait = th
		}
		s.releaseFetch(topics)
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		waitStart := time.Now()
		select {
		case <-wake:
		case <-timer.C:
		case <-c.ctx.Done():
		}
		c.waitedSince(waitStart)
	}
}

// readFetch picks every partition's file ranges, except those of denied topics. It
// reports the record bytes found and whether any partition has an error.
func (s *Server) readFetch(req *kmsg.FetchRequest, denied map[string]bool) (topics []fetchTopic, total int64, anyErr bool) {
	budget := int64(req.MaxBytes)
	if budget <= 0 {
		budget = 1<<31 - 1
	}
	var throttled int64 // a follower's bytes under the leader's replication throttle
	fileShare, nodeShare := s.fetchFileShares()
	files := 0 // sealed segment files held by the slices taken
	topics = make([]fetchTopic, len(req.Topics))
	for i, t := range req.Topics {
		topics[i] = fetchTopic{name: t.Topic, parts: make([]fetchPartition, len(t.Partitions))}
		for j, rp := range t.Partitions {
			fp := &topics[i].parts[j]
			fp.id, fp.hw, fp.lso, fp.logStart = rp.Partition, -1, -1, -1
			if denied[t.Topic] {
				fp.errCode, anyErr = kerr.TopicAuthorizationFailed.Code, true
				continue
			}
			p, code := s.localPartition(t.Topic, rp.Partition)
			if code == 0 {
				code = checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch())
			}
			if code != 0 {
				fp.errCode, anyErr = code, true
				continue
			}
			fp.hw, fp.lso, fp.logStart = p.HighWatermark(), p.LastStableOffset(), p.LogStartOffset()
			limit := min(int64(rp.PartitionMaxBytes), budget)
			if (limit <= 0 || files >= fileShare || s.fetchFiles.Load() >= nodeShare) && total > 0 {
				continue
			}
			var sl *logstore.Slice
			var err error
			if req.ReplicaID >= 0 {
				sl, err = p.ReadReplica(req.ReplicaID, rp.CurrentLeaderEpoch, rp.FetchOffset, rp.LogStartOffset, max(limit, 1))
				fp.replica = p
				fp.hw = p.HighWatermark() // the follower's fetch may have moved it
				fp.lso = p.LastStableOffset()
			} else if req.IsolationLevel == 1 {
				sl, err = p.ReadStable(rp.FetchOffset, max(limit, 1))
				if err == nil && sl.NextOffset > rp.FetchOffset {
					fp.aborted = p.AbortedTxns(rp.FetchOffset, sl.NextOffset)
				}
			} else {
				sl, err = p.Read(rp.FetchOffset, max(limit, 1))
			}
			if err != nil {
				fp.errCode, anyErr = errorCode(err), true
				continue
			}
			// Only the first partition with data may exceed the limits (KIP-74).
			n := sl.SealedFiles()
			if total > 0 && (sl.Bytes > limit || files+n > fileShare || s.fetchFiles.Load()+int64(n) > nodeShare) {
				sl.Release()
				continue
			}
			if fp.replica != nil && sl.Bytes > 0 {
				if share := p.LeaderThrottleShare(req.ReplicaID); share > 0 {
					if throttled > 0 && throttled+sl.Bytes > share {
						sl.Release()
						continue
					}
					throttled += sl.Bytes
				}
			}
			fp.slice, fp.files = sl, n
			total += sl.Bytes
			budget -= sl.Bytes
			files += n
			s.fetchFiles.Add(int64(n))
		}
	}
	return topics, total, anyErr
}

// fetchFileShares returns how many sealed segment files one fetch's answer may
// hold open, a quarter of the segment file cache's capacity, and how many the
// answers of all connections may hold together, half of it (each at least 1;
// the first partition with data of each answer may go over both). The
// descriptors held by answers then stay within a bound like the cache's
// rather than one per partition read.
func (s *Server) fetchFileShares() (one int, all int64) {
	if s.parts == nil {
		return math.MaxInt, math.MaxInt64
	}
	c := s.parts.SegmentFiles().Capacity()
	return max(c/4, 1), int64(max(c/2, 1))
}

// recordReplicaSent counts the record bytes answered to a follower against
// the leader's replication throttle (replication.ReplicaSent).
func recordReplicaSent(follower int32, topics []fetchTopic) {
	for _, t := range topics {
		for _, p := range t.parts {
			if p.replica != nil && p.slice != nil && p.slice.Bytes > 0 {
				p.replica.ReplicaSent(follower, p.slice.Bytes)
			}
		}
	}
}

// leaderThrottleWait is how long until the leader's replication throttle lets
// a follower's fetch have data for one of its partitions that had none (0: none
// is held back).
func leaderThrottleWait(follower int32, topics []fetchTopic) (wait time.Duration) {
	for _, t := range topics {
		for _, p := range t.parts {
			if p.replica == nil || (p.slice != nil && p.slice.Bytes > 0) {
				continue
			}
			if w := p.replica.LeaderThrottleWait(follower); w > 0 && (wait == 0 || w < wait) {
				wait = w
			}
		}
	}
	return wait
}

func (s *Server) releaseFetch(topics []fetchTopic) {
	var files int
	for _, t := range topics {
		for i := range t.parts {
			p := &t.parts[i]
			if p.slice != nil {
				p.slice.Release()
				files += p.files
				p.files = 0
			}
		}
	}
	s.fetchFiles.Add(-int64(files))
}

func (s *Server) writeFetch(c *conn, hdr *RequestHeader, req *kmsg.FetchRequest, topics []fetchTopic, throttle time.Duration) error {
	v := req.Version
	w := c.fetchWriter()
	w.Reset()
	w.Int32(hdr.CorrelationID)
	w.Int32(int32(min(throttle.Milliseconds(), 1<<31-1))) // throttle_time_ms
	if v >= 7 {
		w.Int16(0) // error_code
		w.Int32(0) // session_id: no fetch sessions
	}
	w.Int32(int32(len(topics)))
	for _, t := range topics {
		w.Str(t.name)
		w.Int32(int32(len(t.parts)))
		for _, p := range t.parts {
			w.Int32(p.id)
			w.Int16(p.errCode)
			w.Int64(p.hw)
			w.Int64(p.lso)
			if v >= 5 {
				w.Int64(p.logStart)
			}
			if p.aborted == nil {
				w.Int32(-1) // aborted_transactions: null
			} else {
				w.Int32(int32(len(p.aborted)))
				for _, a := range p.aborted {
					w.Int64(a.ProducerID)
					w.Int64(a.FirstOffset)
				}
			}
			if v >= 11 {
				w.Int32(-1) // preferred_read_replica
			}
			if p.slice == nil {
				w.Int32(0)
				continue
			}
			w.Int32(int32(p.slice.Bytes))
			w.Ranges(p.slice.Ranges)
		}
	}
	err := w.Send(c.nc, s.metrics, s.cfg.IdleTimeout)
	w.Release()
	return err
}
