// Package embedetcd runs the etcd member embedded in every Skiff node and the
// client the node uses to talk to it.
//
// Start brings a member up and returns once it is ready to serve (it has a
// leader and has published itself); Member.Close takes it down. etcd's zap
// logs are forwarded to the node's slog logger, with the few error lines a
// clean shutdown produces demoted to debug (see benign in zapslog.go).
//
// Membership: AddMember and Promote admit a joining member (join.go); RemoveMember
// removes one (remove.go) once CheckRemove, etcd's quorum rule, allows it; Statuses
// asks every member how it is (quorum.go).
//
// Metrics: etcd's packages register about 80 metric families in Prometheus'
// default registerer from their init functions, whether or not a member is
// started, and embed.Config has no option to prevent it (its Metrics field
// only selects "basic" or "extensive" gRPC histograms; Skiff uses "basic").
// A /metrics handler that should not show them must serve its own
// prometheus.Registry rather than the default one.
//
// Lifecycle of a Member: Start -> ready -> (Err reports a failure) -> Close.
// Close order: 1. stop the failure watcher; 2. close the client (its watches
// and lease keep-alives end); 3. close etcd (client listeners, raft, peer
// listeners); 4. wait for the failure watcher to exit.
package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"skiff/internal/tlsconf"
)

// Sentinel errors.
var (
	// ErrStopped is sent on Err when the member stops without Close.
	ErrStopped = errors.New("embedetcd: member stopped")
	// ErrNotReady is returned by Start when the member failed to become ready.
	ErrNotReady = errors.New("embedetcd: member not ready")
	// ErrClosed is returned by Healthy after Close.
	ErrClosed = errors.New("embedetcd: member closed")
	// ErrRemoved is sent on Err (together with ErrStopped) when the member stopped
	// because it was removed from its cluster (etcd MemberRemove), and returned by
	// Start for a member removed while it was down. Its data directory cannot serve
	// again.
	ErrRemoved = errors.New("embedetcd: member removed from the cluster")
)

// HealthTimeout bounds a Healthy call when its context has no earlier deadline.
const HealthTimeout = 2 * time.Second

// RemovedCheckTimeout bounds how long a stopped member asks the other members
// whether it was removed from the cluster.
const RemovedCheckTimeout = 3 * time.Second

// Member is a running etcd member with a client connected to it.
type Member struct {
	etcd      *embed.Etcd
	client    *clientv3.Client
	clientURL string
	peerURL   string
	tls       *tlsconf.Loader // nil without TLS
	logger    *slog.Logger
	closing   *atomic.Bool // set by Close; read by the log filter

	errc     chan error    // one failure, buffered
	stopping chan struct{} // closed by Close before etcd stops
	watchEnd chan struct{} // closed when the failure watcher returns

	closeOnce sync.Once
	closeErr  error
}

// Start starts an etcd member as configured and waits until it is ready to
// serve, ctx is done, or the member fails to start. On any failure nothing is
// left running and the error says why; a member that cannot reach quorum (for
// example, one whose InitialCluster names members that never start) returns
// only when ctx is done.
//
// A port 0 in ClientAddr or PeerAddr is picked before etcd binds it, so another
// process may take it in between; Start then picks again, a few times.
func Start(ctx context.Context, cfg Config) (*Member, error) {
	for attempt := 1; ; attempt++ {
		m, err := start(ctx, cfg)
		if err == nil || attempt == 3 || !cfg.picksPorts() || !isAddrInUse(err) {
			return m, err
		}
		if cfg.Logger != nil {
			cfg.Logger.Debug("etcd port taken before etcd bound it; picking again", "err", err)
		}
	}
}

// picksPorts reports whether Start chooses a port for the member itself.
func (c Config) picksPorts() bool {
	return strings.HasSuffix(c.ClientAddr, ":0") || strings.HasSuffix(c.PeerAddr, ":0")
}

// isAddrInUse reports whether err is a bind that found its port taken (etcd
// does not always wrap the syscall error).
func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

func start(ctx context.Context, cfg Config) (*Member, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger.With("component", "etcd")

	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.Dir
	ec.ListenClientUrls = []url.URL{cfg.url(cfg.ClientAddr)}
	ec.AdvertiseClientUrls = []url.URL{cfg.url(cfg.AdvertiseClientAddr)}
	ec.ListenPeerUrls = []url.URL{cfg.url(cfg.PeerAddr)}
	ec.AdvertisePeerUrls = []url.URL{cfg.url(cfg.AdvertisePeerAddr)}
	if cfg.TLS != nil {
		f := cfg.TLS.Files()
		ec.ClientTLSInfo = transport.TLSInfo{CertFile: f.Cert, KeyFile: f.Key, TrustedCAFile: f.CA, ClientCertAuth: true}
		ec.PeerTLSInfo = transport.TLSInfo{CertFile: f.Cert, KeyFile: f.Key, TrustedCAFile: f.CA, ClientCertAuth: true,
			SkipClientSANVerify: true}
	}
	ec.InitialCluster = cfg.InitialCluster
	if ec.InitialCluster == "" {
		ec.InitialCluster = ec.InitialClusterFromName(cfg.Name)
	}
	ec.ClusterState = cfg.ClusterState
	ec.InitialClusterToken = cfg.InitialClusterToken
	ec.ForceNewCluster = cfg.ForceNewCluster
	ec.TickMs = uint(cfg.HeartbeatInterval / time.Millisecond)
	ec.ElectionMs = uint(cfg.ElectionTimeout / time.Millisecond)
	ec.QuotaBackendBytes = cfg.QuotaBackendBytes
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = cfg.CompactionRetention.String()
	ec.MaxRequestBytes = cfg.MaxRequestBytes
	ec.MaxTxnOps = cfg.MaxTxnOps
	ec.EnableGRPCGateway = false
	ec.Metrics = "basic"
	closing := new(atomic.Bool)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapLogger(logger.Handler(), closing))

	// etcd wants its directory private; create it so. An existing directory
	// keeps its mode (etcd warns if it is wider).
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedetcd: create %s: %w", cfg.Dir, err)
	}

	started := time.Now()
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: start member %s in %s: %w", cfg.Name, cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err = <-e.Err():
		if err == nil {
			err = ErrStopped
		}
	case <-e.Server.StopNotify():
		err = ErrStopped
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if err != nil {
		// A member removed while it was down learns it from its peers, which
		// refuse it, as soon as it starts.
		if ctx.Err() == nil && wasRemoved(e, cfg.TLS, cfg.Logger, closing) {
			err = fmt.Errorf("%w: %w", ErrRemoved, err)
		}
		// Close alone hangs on a member that never became ready: stop the
		// raft server first.
		closing.Store(true)
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("%w: %s in %s: %w", ErrNotReady, cfg.Name, cfg.Dir, err)
	}

	client, err := newClient([]string{cfg.scheme() + "://" + dialAddr(e.Clients[0].Addr().String())}, cfg.TLS, 5*time.Second,
		newZapLogger(cfg.Logger.With("component", "etcd-client").Handler(), closing))
	if err != nil {
		closing.Store(true)
		e.Close()
		return nil, fmt.Errorf("embedetcd: client for %s: %w", cfg.Name, err)
	}
	m := &Member{
		etcd:      e,
		client:    client,
		clientURL: cfg.scheme() + "://" + cfg.AdvertiseClientAddr,
		peerURL:   cfg.PeerURL(),
		tls:       cfg.TLS,
		logger:    cfg.Logger,
		closing:   closing,
		errc:      make(chan error, 1),
		stopping:  make(chan struct{}),
		watchEnd:  make(chan struct{}),
	}
	go m.watch()
	cfg.Logger.Info("etcd member ready", "name", cfg.Name, "data_dir", cfg.Dir,
		"client_url", m.clientURL, "peer_url", m.peerURL,
		"member_id", e.Server.MemberID().String(), "took", time.Since(started))
	return m, nil
}

// watch reports the first failure of the running member on errc.
func (m *Member) watch() {
	defer close(m.watchEnd)
	var err error
	select {
	case <-m.stopping:
		return
	case e, ok := <-m.etcd.Err():
		err = e
		if !ok || err == nil {
			err = ErrStopped
		}
	case <-m.etcd.Server.StopNotify():
		err = ErrStopped
	}
	select {
	case <-m.stopping:
		return
	default:
	}
	if wasRemoved(m.etcd, m.tls, m.logger, m.closing) {
		m.errc <- fmt.Errorf("%w: %w", ErrRemoved, err)
		return
	}
	m.errc <- fmt.Errorf("embedetcd: member failed: %w", err)
}

// wasRemoved reports whether the stopped member e was removed from its cluster. A
// member that applied its own removal knows; one that was cut off or down before
// (its peers then refuse its messages, which stops it) does not, so the other
// members are asked, for at most RemovedCheckTimeout.
func wasRemoved(e *embed.Etcd, tls *tlsconf.Loader, logger *slog.Logger, closing *atomic.Bool) bool {
	self := e.Server.MemberID()
	if e.Server.IsIDRemoved(uint64(self)) {
		return true
	}
	var endpoints []string
	for _, mem := range e.Server.Cluster().Members() {
		if mem.ID != self {
			endpoints = append(endpoints, mem.ClientURLs...)
		}
	}
	if len(endpoints) == 0 {
		return false
	}
	cli, err := newClient(endpoints, tls, RemovedCheckTimeout, newZapLogger(logger.With("component", "etcd-client").Handler(), closing))
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), RemovedCheckTimeout)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil || len(resp.Members) == 0 {
		return false
	}
	for _, mem := range resp.Members {
		if mem.ID == uint64(self) {
			return false
		}
	}
	return true
}

// newClient is a client of endpoints (URLs), with the TLS of l when it is set.
func newClient(endpoints []string, l *tlsconf.Loader, dialTimeout time.Duration, logger *zap.Logger) (*clientv3.Client, error) {
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: dialTimeout, Logger: logger}
	if l != nil {
		cfg.TLS = l.ClientConfig("") // gRPC names each endpoint's host
	}
	return clientv3.New(cfg)
}

// Client returns the client connected to this member. It stays valid until
// Close and must not be closed by callers.
func (m *Member) Client() *clientv3.Client { return m.client }

// ClientURL returns the advertised client URL, http://host:port (https:// with
// TLS).
func (m *Member) ClientURL() string { return m.clientURL }

// PeerURL returns the advertised peer URL, http://host:port (https:// with
// TLS).
func (m *Member) PeerURL() string { return m.peerURL }

// ID returns the etcd member id.
func (m *Member) ID() uint64 { return uint64(m.etcd.Server.MemberID()) }

// Name returns the etcd member name.
func (m *Member) Name() string { return m.etcd.Config().Name }

// Err receives at most one error when the member fails while running: it
// stopped serving, or ErrRemoved when it was removed from the cluster. Nothing
// is sent after Close.
func (m *Member) Err() <-chan error { return m.errc }

// Healthy reports whether the member can serve linearizable requests: it has
// no raised alarm (such as NOSPACE) and a linearizable read through its
// client succeeds, which needs a leader and a quorum. It waits at most
// HealthTimeout, or less if ctx ends sooner. Safe for a /readyz handler.
func (m *Member) Healthy(ctx context.Context) error {
	if m.closing.Load() {
		return ErrClosed
	}
	if alarms := m.etcd.Server.Alarms(); len(alarms) > 0 {
		names := make([]string, 0, len(alarms))
		for _, a := range alarms {
			names = append(names, a.Alarm.String())
		}
		return fmt.Errorf("embedetcd: alarm raised: %s", strings.Join(names, ","))
	}
	ctx, cancel := context.WithTimeout(ctx, HealthTimeout)
	defer cancel()
	if _, err := m.client.Get(clientv3.WithRequireLeader(ctx), "health"); err != nil {
		return fmt.Errorf("embedetcd: linearizable read: %w", err)
	}
	return nil
}

// Close closes the client and stops the member. It is idempotent; later
// calls return the first call's result.
func (m *Member) Close() error {
	m.closeOnce.Do(func() {
		close(m.stopping)
		m.closing.Store(true)
		var errs []error
		if err := m.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("embedetcd: close client: %w", err))
		}
		m.etcd.Close()
		<-m.watchEnd
		m.closeErr = errors.Join(errs...)
		m.logger.Info("etcd member closed", "name", m.etcd.Config().Name)
	})
	return m.closeErr
}
