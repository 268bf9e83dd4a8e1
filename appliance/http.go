package appliance

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
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

// serveHTTP serves the HTTP port (with TLS under http-tls) until Close.
func (n *Node) serveHTTP(reg *prometheus.Registry) {
	n.httpSrv = &http.Server{Handler: n.httpHandler(reg), ReadHeaderTimeout: 10 * time.Second}
	serve := func() error { return n.httpSrv.Serve(n.httpLn) }
	if n.cfg.HTTPTLS {
		// A client certificate is checked when one is given; whether a path needs
		// one (or a bearer token) is httpauth.go's business.
		n.httpSrv.TLSConfig = n.tls.ServerConfig(tls.VerifyClientCertIfGiven)
		// Failed handshakes (scanners, health checks that only connect) at debug.
		n.httpSrv.ErrorLog = slog.NewLogLogger(n.logger.Handler(), slog.LevelDebug)
		serve = func() error { return n.httpSrv.ServeTLS(n.httpLn, "", "") }
	}
	go func() {
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.fail(fmt.Errorf("HTTP server: %w", err))
		}
	}()
}

// httpHandler serves /metrics, /healthz (the process answers) and /readyz (200 only
// while the node serves: listener bound, etcd member healthy, storage open), the
// admin API, the profiler and the web console, with the authentication of
// httpauth.go (the console's pages under http-auth all; its internal API checks
// the cluster's console key itself).
func (n *Node) httpHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	open := func(h http.Handler) http.Handler { return h }
	if n.cfg.HTTPAuth == HTTPAuthAll {
		open = n.requireAuth
	}
	mux.Handle("/metrics", open(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	mux.Handle("/healthz", open(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})))
	mux.Handle("/readyz", open(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := n.CheckReady(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})))
	admin := http.NewServeMux()
	n.adminRoutes(admin)     // GET /v1/cluster, POST /v1/cluster/remove-node (admin.go)
	n.shareRoutes(admin)     // GET /v1/share-partitions (admin_shares.go)
	n.joinRoutes(mux, admin) // POST /v1/join (open), POST /v1/cluster/join-token (join.go)
	mux.Handle("/v1/", n.requireAuth(admin))
	n.consoleRoutes(mux, open) // the web console at / and its internal API under /v1/console/ (console.go)
	if n.cfg.Pprof {
		profiler := http.NewServeMux()
		profilerRoutes(profiler)
		mux.Handle("/debug/pprof/", n.requireAuth(profiler))
	}
	return mux
}

// profilerRoutes serves net/http/pprof on mux (not on http.DefaultServeMux, which
// importing the package fills for whoever serves that).
func profilerRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also the named profiles: heap, goroutine, allocs...
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// CheckReady is the /readyz check: nil only while the node serves (started, not
// stopping, its etcd member answering a linearizable read). ctx bounds the etcd read
// (at most embedetcd.HealthTimeout). skiff serve feeds the systemd watchdog with it.
func (n *Node) CheckReady(ctx context.Context) error { return n.checkReady(ctx) }

// CheckAlive is the systemd watchdog's check: the node's own machinery answers (the
// partition manager's lock can be taken, the metadata cache read, the Kafka listener
// accepts a connection), without asking etcd for quorum. A node whose cluster lost
// quorum is not hung, and restarting it would not bring quorum back; /readyz
// (CheckReady) reports that state instead.
func (n *Node) CheckAlive(ctx context.Context) error {
	select {
	case <-n.ready:
	default:
		return errors.New("starting")
	}
	select {
	case <-n.stop:
		return errors.New("stopping")
	default:
	}
	n.parts.Partitions()
	n.cache.Snapshot()
	addr := n.kafkaLns[0].Addr().(*net.TCPAddr)
	target := addr.String()
	if addr.IP.IsUnspecified() {
		target = net.JoinHostPort("127.0.0.1", strconv.Itoa(addr.Port))
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return fmt.Errorf("Kafka listener: %w", err)
	}
	return c.Close()
}
