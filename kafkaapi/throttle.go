package kafkaapi

// Client quotas enforced on this node (docs/quotas.md): the bytes a client
// produces and fetches and the time its requests take are measured against
// the quotas of the metadata cache (quota.Manager, Kafka's resolution and
// rates). A client over a quota gets throttle_time_ms in its response, and
// its connection is muted for that long: the next request is not read until
// the throttle ends (KIP-219; newer clients also wait on their own).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/quota"
)

// recordQuota adds v to the client's rate of key and returns the client's
// throttle (0 within its quota, or when no quota of key applies to it).
func (c *conn) recordQuota(hdr *RequestHeader, key string, v float64) time.Duration {
	u, ok := c.srv.quotas.Record(key, c.principal.Name, hdr.ClientID, v, time.Now())
	if !ok {
		return 0
	}
	c.srv.metrics.quotaRecorded(key, u)
	return u.Throttle
}

// requestThrottle records the time the request in hand has taken so far, less
// what its handler waited on others (replicas, a long poll), against
// request_percentage (as Kafka counts a request's thread time: 100 per
// second), and returns the largest throttle of the request's quotas. It is
// called once per request, just before its answer is written.
func (c *conn) requestThrottle(hdr *RequestHeader) time.Duration {
	busy := max(time.Since(c.started)-c.waited, 0)
	th := max(c.throttle, c.recordQuota(hdr, quota.RequestPercentage, busy.Seconds()*100))
	c.waited, c.throttle = 0, 0
	return th
}

// setThrottle writes th into resp's throttle_time_ms, when it has one.
func setThrottle(resp kmsg.Response, th time.Duration) {
	if r, ok := resp.(kmsg.SetThrottleResponse); ok && th > 0 {
		r.SetThrottle(int32(min(th.Milliseconds(), 1<<31-1)))
	}
}

// mute holds the connection for the throttle of the request just answered
// before its next request is read; a shutdown ends it early.
func (c *conn) mute() {
	th := c.muted
	c.muted = 0
	if th <= 0 {
		return
	}
	t := time.NewTimer(th)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.ctx.Done():
	}
}

// waitedSince adds the time since start to what the request's handler waited
// on others.
func (c *conn) waitedSince(start time.Time) { c.waited += time.Since(start) }

// mutationQuota is controller_mutation_rate (KIP-599) for one request: the
// partitions it creates or deletes count against the client's quota, on this
// node (Kafka counts them on its controller). Strict requests (CreateTopics
// v6+, CreatePartitions v3+, DeleteTopics v5+) have a topic refused with
// THROTTLING_QUOTA_EXCEEDED while the client is in debt; a topic asked for
// while it is not is accepted even if it takes the client into debt, as in
// Kafka. Older versions are accepted and only throttled.
type mutationQuota struct {
	c      *conn
	hdr    *RequestHeader
	strict bool
}

// admit returns THROTTLING_QUOTA_EXCEEDED (and throttles the answer) when a
// strict request's client is in debt, else nil.
func (q mutationQuota) admit() error {
	if !q.strict {
		return nil
	}
	th := q.c.srv.quotas.Owed(quota.ControllerMutationRate, q.c.principal.Name, q.hdr.ClientID, time.Now())
	if th <= 0 {
		return nil
	}
	q.c.throttle = max(q.c.throttle, th)
	return newKafkaError(kerr.ThrottlingQuotaExceeded, "The throttling quota has been exceeded.")
}

// record counts n partitions created or deleted.
func (q mutationQuota) record(n int32) {
	if n > 0 {
		q.c.throttle = max(q.c.throttle, q.c.recordQuota(q.hdr, quota.ControllerMutationRate, float64(n)))
	}
}
