package kafkaapi

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"skiff/quota"
)

// Metrics are the server's Prometheus series.
type Metrics struct {
	connections prometheus.Gauge
	// connectionsRefused counts connections closed at accept, by limit.
	connectionsRefused *prometheus.CounterVec
	// requestBytes is the memory taken from queued.max.request.bytes.
	requestBytes  prometheus.Gauge
	requests      *prometheus.CounterVec
	requestErrors *prometheus.CounterVec
	// sendfileBytes counts record bytes sent from segment files with sendfile (zero copy).
	sendfileBytes prometheus.Counter
	// copiedBytes counts record bytes copied through user space instead (connections or
	// files without a file descriptor, and small frames: FrameWriter).
	copiedBytes prometheus.Counter
	// produceBytes counts record batch bytes appended by Produce.
	produceBytes prometheus.Counter
	// ackWait is how long Produce requests waited after their appends for
	// their acknowledgement (acks=all: the followers; flush.policy=always: fsync).
	ackWait prometheus.Histogram
	// authentications counts SASL authentications, by mechanism and result
	// (success, failure).
	authentications *prometheus.CounterVec
	// authorizationFailures counts refusals by the authorizer, by API, resource
	// type and operation.
	authorizationFailures *prometheus.CounterVec
	// quotaThrottle and quotaRate are per quota entity (the user and client id
	// a rate counts, empty for a part it does not distinguish) and quota key:
	// the throttle time given, and the last measured rate.
	quotaThrottle *prometheus.CounterVec
	quotaRate     *prometheus.GaugeVec
	// txnFirstWrites counts first writes of a producer's transaction to a
	// partition led here (KIP-890 part 1), by how their place in the
	// transaction was known: asked (the coordinator verified it), noticed
	// (its notice came first, no question asked) or added (Produce v12's
	// implicit add).
	txnFirstWrites *prometheus.CounterVec
}

// NewMetrics creates the series and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_connections", Help: "Open Kafka client connections.",
		}),
		connectionsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_connections_refused_total", Help: "Kafka connections closed at accept, by limit (max_connections, max_connections_per_ip, connection_creation_rate).",
		}, []string{"reason"}),
		requestBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_request_memory_bytes", Help: "Memory taken by requests being read, decoded and handled (bounded by queued-max-request-bytes).",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_requests_total", Help: "Kafka requests handled, by API.",
		}, []string{"api"}),
		requestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_request_errors_total", Help: "Kafka requests and connections refused before handling, by reason (request_size, request_memory, read_timeout, malformed_request, too_many_partitions, unsupported; plaintext_on_tls, tls_on_plaintext, tls_handshake, tls_principal, sasl_unauthenticated, sasl_authentication).",
		}, []string{"reason"}),
		sendfileBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skiff_fetch_bytes_sendfile_total", Help: "Record bytes sent to fetchers with sendfile (zero copy).",
		}),
		copiedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skiff_fetch_bytes_copied_total", Help: "Record bytes sent to fetchers by copying through user space.",
		}),
		produceBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skiff_produce_bytes_total", Help: "Record batch bytes appended by Produce requests (as sent, compressed batches at their compressed size).",
		}),
		authentications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_sasl_authentications_total", Help: "SASL authentications (and re-authentications) on Kafka connections, by mechanism and result (success, failure).",
		}, []string{"mechanism", "result"}),
		authorizationFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_authorization_failures_total", Help: "Operations the authorizer refused a Kafka client (each answered with an AUTHORIZATION_FAILED error), by API, resource type and operation.",
		}, []string{"api", "resource_type", "operation"}),
		quotaThrottle: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_quota_throttle_seconds_total", Help: "Throttle time given to clients over a quota, by quota (producer_byte_rate, consumer_byte_rate, request_percentage) and the user and client id the quota's rate counts.",
		}, []string{"quota", "user", "client_id"}),
		quotaRate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skiff_quota_rate", Help: "Last measured rate of clients with a quota (bytes/s, or percent of one thread for request_percentage), by quota and the user and client id the rate counts.",
		}, []string{"quota", "user", "client_id"}),
		txnFirstWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_txn_first_writes_total", Help: "A producer's first writes of a transaction to a partition led here (Produce batches and TxnOffsetCommit offsets), by how the partition was known to be in the transaction: asked (verified with the transaction coordinator), noticed (the coordinator's notice came first) or added (transaction version 2: the leader added it, an implicit add).",
		}, []string{"how"}),
		ackWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "skiff_produce_ack_wait_seconds", Help: "Time Produce requests waited after their appends for their acknowledgement (acks=all: the in-sync followers' fetches; flush.policy=always: fdatasync).",
			Buckets: prometheus.ExponentialBuckets(0.00025, 2, 14), // 0.25 ms to 2 s
		}),
	}
	if reg != nil {
		reg.MustRegister(m.connections, m.connectionsRefused, m.requestBytes, m.requests, m.requestErrors, m.sendfileBytes, m.copiedBytes, m.produceBytes, m.ackWait, m.authentications, m.authorizationFailures,
			m.quotaThrottle, m.quotaRate, m.txnFirstWrites)
	}
	return m
}

// Bytes returns the record bytes produced to this node and sent to fetchers
// (followers included) since it started: the console's throughput.
func (m *Metrics) Bytes() (in, out int64) {
	return counterValue(m.produceBytes), counterValue(m.sendfileBytes) + counterValue(m.copiedBytes)
}

func counterValue(c prometheus.Counter) int64 {
	var d dto.Metric
	if c.Write(&d) != nil || d.Counter == nil {
		return 0
	}
	return int64(d.Counter.GetValue())
}

// quotaRecorded updates the series of the quota entity a rate was measured for.
func (m *Metrics) quotaRecorded(key string, u quota.Usage) {
	m.quotaRate.WithLabelValues(key, u.Tags.User, u.Tags.ClientID).Set(u.Rate)
	if u.Throttle > 0 {
		m.quotaThrottle.WithLabelValues(key, u.Tags.User, u.Tags.ClientID).Add(u.Throttle.Seconds())
	}
}
