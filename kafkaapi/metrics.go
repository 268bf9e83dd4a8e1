package kafkaapi

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the server's Prometheus series.
type Metrics struct {
	connections   prometheus.Gauge
	requests      *prometheus.CounterVec
	requestErrors *prometheus.CounterVec
	// sendfileBytes counts record bytes sent from segment files with sendfile (zero copy).
	sendfileBytes prometheus.Counter
	// copiedBytes counts record bytes copied through user space instead (connections or
	// files without a file descriptor).
	copiedBytes prometheus.Counter
}

// NewMetrics creates the series and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_connections", Help: "Open Kafka client connections.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_requests_total", Help: "Kafka requests handled, by API.",
		}, []string{"api"}),
		requestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_request_errors_total", Help: "Kafka requests refused before handling, by reason.",
		}, []string{"reason"}),
		sendfileBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skiff_fetch_bytes_sendfile_total", Help: "Record bytes sent to fetchers with sendfile (zero copy).",
		}),
		copiedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skiff_fetch_bytes_copied_total", Help: "Record bytes sent to fetchers by copying through user space.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.connections, m.requests, m.requestErrors, m.sendfileBytes, m.copiedBytes)
	}
	return m
}
