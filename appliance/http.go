package appliance

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// newRegistry is the node's own Prometheus registry, so /metrics holds Skiff's series
// and the Go runtime's, not whatever other libraries put in the default registry.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// httpHandler serves /metrics, /healthz (the process answers) and /readyz (200 only
// while the node serves: listener bound, etcd member healthy, storage open).
func (n *Node) httpHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := n.CheckReady(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// CheckReady is the /readyz check: nil only while the node serves (started, not
// stopping, its etcd member answering a linearizable read). ctx bounds the etcd read
// (at most embedetcd.HealthTimeout). skiff serve feeds the systemd watchdog with it.
func (n *Node) CheckReady(ctx context.Context) error { return n.checkReady(ctx) }
