// Package appliance assembles one Skiff node from its parts and owns its lifecycle:
// data-directory layout, start order, readiness, failure reporting and the shutdown
// order. It knows flags and files only through Config.
//
// Start order:
//  1. lock <data> (one process per data directory) and read node.json;
//  2. decide whether the node is secure (secure.go) and what that sets; bind the HTTP
//     listener and the Kafka listeners (so a taken port fails at once, before a join
//     token is spent); make, receive (join handshake) or load the secure material;
//     read the TLS files, and serve HTTP (so /healthz answers during the start);
//  3. start the embedded etcd member and wait until it is ready;
//  4. create or check the cluster identity; write node.json on first start; on the first
//     node of a secure cluster, mark it secure with its first users (formSecure);
//  5. open Pebble (<data>/meta), the partition manager (<data>/topics) and the group
//     coordinator;
//  6. start the metadata cache and apply its topics to the local partitions (and the
//     leaders of __consumer_offsets partitions to the group coordinator);
//  7. register the broker under its session lease, start the loops that fence the
//     node while its session is in doubt and re-register it after a loss
//     (session.go), start campaigning for controller once the metadata cache holds
//     the registration (the controller plans from the cache), and wait until the
//     cache lists it, names a controller and shows no partition led by its previous
//     registration (else Metadata would name no broker and CreateTopics would count
//     none);
//  8. serve Kafka; Ready is closed.
//
// Shutdown order (Close), each step after the previous one ends:
//  0. stop the console's sampler (its pages answer 503 from now on);
//  1. stop accepting Kafka connections, let in-flight requests answer (parked fetches
//     answer at once), close connections (bounded by ShutdownTimeout);
//     Then close the share-group state store (its franz-go clients: the tail of
//     __share_group_state and the writes of share-partitions and dead letters);
//  2. stop campaigning for controller (resigning if elected), stop the session and
//     clock loops, then end the broker session (marked leaving, the lease is revoked:
//     the cluster sees the broker go and moves its partitions at once; without etcd
//     quorum it is left to expire instead of waiting for a revoke that cannot
//     happen);
//  3. stop applying metadata and close the cache;
//  4. close the group coordinator (it stops appending to and applying its
//     __consumer_offsets partitions);
//  5. close the partitions (each log syncs and records its recovery point);
//  6. close Pebble;
//  7. stop the HTTP server;
//  8. close the etcd member;
//  9. release the data-directory lock.
package appliance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/acl"
	"skiff/auth"
	"skiff/cluster"
	"skiff/console"
	"skiff/embedetcd"
	"skiff/groups"
	"skiff/internal/pki"
	"skiff/internal/tlsconf"
	"skiff/kafkaapi"
	"skiff/logstore"
	"skiff/offsets"
	"skiff/quota"
	"skiff/replication"
	"skiff/sharegroup"
	"skiff/txn"
)

// Node is one running Skiff node.
type Node struct {
	cfg    Config
	logger *slog.Logger
	id     int32
	fs     vfs.FS // the data directory's files (Pebble, segments, node.json): vfs.Default

	lock       *os.File
	member     *embedetcd.Member
	store      *cluster.Store
	cache      *cluster.Cache
	controller *cluster.Controller
	session    atomic.Pointer[cluster.Session] // the current one; replaced after a loss
	sessionEnd chan struct{}                   // closed when sessionLoop returns
	// clockBase, lastBeat, paused and clockEnd belong to watchClock (session.go).
	clockBase time.Time
	lastBeat  atomic.Int64  // the last beat, as time since clockBase
	paused    chan struct{} // a pause was noticed: wakes sessionLoop
	clockEnd  chan struct{} // closed when watchClock returns
	view      *view         // whether the metadata cache is known to be current
	db        *offsets.DB
	parts     *replication.Manager
	groups    *groups.Coordinator
	txn       *txn.Coordinator
	kafka     *kafkaapi.Server
	dyn       dynamicState // the dynamic broker configs applied (dynamic.go)

	shareGroups *sharegroup.Coordinator
	shares      *sharegroup.Manager
	shareStore  *sharegroup.TopicStore
	// groupConfigsRead is set once the share store's tail, holding the GROUP
	// configs, is started for the consumer groups led here (watchGroupConfigs).
	groupConfigsRead atomic.Bool

	listeners   []listenerSpec  // the Kafka listeners, in the order of the settings
	kafkaLns    []net.Listener  // bound, one per listener
	interBroker int             // index of the inter-broker listener
	tls         *tlsconf.Loader // the TLS files; nil without
	// securePaths and secure are the files and material of a secure node (nil
	// otherwise); joinEndpoints the etcd client URLs a join handshake returned.
	securePaths   *pki.Paths
	secure        *pki.Material
	joinEndpoints []string
	httpLn        net.Listener
	httpSrv       *http.Server
	httpDelays    *auth.FailureDelays // of failed HTTP authentications, per client address
	console       *console.Console    // nil when turned off
	consoleKey    []byte              // /skiff/console-key, read before Ready
	peerHTTP      func() *http.Client // asks other nodes' HTTP ports, made once (admin_shares.go)
	kafkaMetrics  *kafkaapi.Metrics
	acl           *acl.Authorizer // nil without --authorizer acl
	applyEnd      chan struct{}   // closed when the metadata apply loop has ended
	applyStarted  bool
	applied       appliedSpecs // what applyMetadata last built; used by it alone
	// appliedTopics are the topics of the last snapshot applied, by name.
	appliedTopics map[string]cluster.UUID
	stop          chan struct{} // closed by Close

	ready     chan struct{}
	errc      chan error
	closeOnce sync.Once
	closeErr  error
}

// Start brings a node up in the start order of the package doc and returns once it
// serves (Ready is then closed). Cancelling ctx aborts a start in progress. On error
// everything already started is closed again.
func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:        cfg,
		logger:     cfg.Logger,
		fs:         vfs.Default,
		ready:      make(chan struct{}),
		errc:       make(chan error, 4),
		stop:       make(chan struct{}),
		applyEnd:   make(chan struct{}),
		clockBase:  time.Now(),
		paused:     make(chan struct{}, 1),
		view:       newView(),
		httpDelays: auth.NewFailureDelays(cfg.AuthFailureDelay),
	}
	n.peerHTTP = sync.OnceValue(n.consoleClient) // after n.tls is set: first used once serving
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	if n.lock, err = lockDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	nf, known, err := readNodeFile(n.fs, cfg.DataDir)
	if err != nil {
		return nil, err
	}

	if err := n.secureSettings(); err != nil {
		return nil, err
	}
	cfg = n.cfg
	if err := cfg.checkHTTPAuthAll(); err != nil {
		return nil, err
	}
	reg := newRegistry()
	if n.httpLn, err = net.Listen("tcp", cfg.HTTP); err != nil {
		return nil, fmt.Errorf("listen for HTTP on %s: %w", cfg.HTTP, err)
	}
	if n.listeners, n.interBroker, err = cfg.listeners(); err != nil {
		return nil, err
	}
	for _, l := range n.listeners {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return nil, fmt.Errorf("listen for Kafka clients on %s (listener %s): %w", l.addr, l.name, err)
		}
		n.kafkaLns = append(n.kafkaLns, ln)
	}
	if err := n.secureMaterial(ctx); err != nil {
		return nil, err
	}
	if err := n.loadTLS(); err != nil {
		return nil, err
	}
	n.serveHTTP(reg)

	if nf, err = n.form(ctx, nf, known); err != nil {
		return nil, err
	}
	n.id = nf.NodeID
	n.logger = n.logger.With("broker_id", n.id)
	if n.secure != nil {
		if err := n.formSecure(ctx, n.advertisedHTTP()); err != nil {
			return nil, err
		}
		go n.renewLoop()
	}

	if n.db, err = offsets.Open(filepath.Join(cfg.DataDir, "meta"), offsets.Options{Logger: slog.New(quietHandler{n.logger.Handler()}), CacheBytes: cfg.MetaCacheBytes, FS: n.fs}); err != nil {
		return nil, fmt.Errorf("open metadata store: %w", err)
	}
	followerSASL, err := n.followerSASL()
	if err != nil {
		return nil, err
	}
	n.parts, err = replication.NewManager(replication.Config{
		BrokerID:               n.id,
		SessionValid:           n.sessionValid,
		SelfEpoch:              n.selfEpoch,
		Dir:                    filepath.Join(cfg.DataDir, "topics"),
		Store:                  func(key string) replication.Store { return n.db.LogIndex(key) },
		BrokerAddr:             n.brokerAddr,
		TLS:                    n.followerTLS(),
		SASL:                   followerSASL,
		AlterISR:               n.alterISR,
		ReplicaLagMax:          cfg.ReplicaLagMax,
		ReplicaFetchMinBytes:   cfg.ReplicaFetchMinBytes,
		ReplicaFetchWaitMax:    cfg.ReplicaFetchWaitMax,
		Registerer:             reg,
		Logger:                 n.logger,
		RetentionCheckInterval: cfg.RetentionCheckInterval,
		ProducerIDExpiration:   cfg.Txn.ProducerIDExpiration,
		FS:                     n.fs,
		SegmentFiles:           logstore.NewFileCache(cfg.SegmentFileCache),
		Cleaner:                cfg.cleanerConfig(),
		// Other brokers close connections idle for connections.max.idle.ms
		// (theirs, normally the same setting as ours): stop reusing ours well before.
		PeerMaxIdle: cfg.IdleTimeout / 2,
	})
	if err != nil {
		return nil, err
	}
	n.startGroups()
	n.startShareGroups()
	n.startTxn()

	if n.cache, err = cluster.StartCache(ctx, n.member.Client(), n.logger); err != nil {
		return nil, fmt.Errorf("load cluster metadata: %w", err)
	}
	if !cfg.DisableConsole {
		if n.consoleKey, err = n.store.ConsoleKey(ctx); err != nil {
			return nil, fmt.Errorf("console key: %w", err)
		}
	}
	first := n.cache.Snapshot()
	if err := n.applyMetadata(first); err != nil {
		return nil, err
	}
	n.applyStarted = true
	go n.applyLoop(first)

	self := cluster.Broker{ID: n.id, Rack: cfg.Rack, DataDirID: nf.DataDirID}
	for i, l := range n.listeners {
		host, port, err := advertisedAddr(l.advertise, n.kafkaLns[i].Addr())
		if err != nil {
			return nil, fmt.Errorf("advertised address of listener %s: %w", l.name, err)
		}
		self.Listeners = append(self.Listeners, cluster.Endpoint{Listener: l.name, Host: host, Port: port})
	}
	host, port, _ := self.Address(n.listeners[n.interBroker].name)
	self.Host, self.Port = host, port
	self.HTTP = n.httpAdvertised(host)
	sess, err := n.store.RegisterBroker(ctx, self, cfg.SessionTimeout)
	if err != nil {
		return nil, fmt.Errorf("register broker %d: %w", n.id, err)
	}
	n.lastBeat.Store(int64(time.Since(n.clockBase)))
	n.session.Store(sess)
	n.sessionEnd, n.clockEnd = make(chan struct{}), make(chan struct{})
	go n.watchClock()
	go n.sessionLoop(self)
	// The controller plans from the cache: only once it holds this registration,
	// or its first plan takes this broker for gone after a clean stop and leaves
	// the partitions it led without a leader (a wave of writes, and /readyz
	// answering before they are led again).
	if err := n.cache.WaitRevision(ctx, sess.Epoch()); err != nil {
		return nil, fmt.Errorf("wait for broker %d's registration in the cluster metadata: %w", n.id, err)
	}
	n.controller = cluster.StartController(n.store, n.cache, cluster.ControllerConfig{
		BrokerID:          n.id,
		Session:           n.session.Load,
		AutoRebalance:     !cfg.DisableAutoLeaderRebalance,
		RebalanceInterval: cfg.LeaderImbalanceCheckInterval,
		// Long enough for a broker whose live lease was revoked to register again.
		DepartGrace: cfg.SessionTimeout / 6,
		Logger:      n.logger,
	})
	if err := n.waitListed(ctx, cluster.Broker{ID: n.id, Host: host, Port: port}); err != nil {
		return nil, fmt.Errorf("wait for broker %d in the cluster metadata: %w", n.id, err)
	}

	n.kafkaMetrics = kafkaapi.NewMetrics(reg)
	sslPrincipal, _ := auth.ParseSSLPrincipalMappingRules(cfg.TLSPrincipalMappingRules) // validated
	n.acl = n.authorizer(sslPrincipal)
	n.kafka = kafkaapi.New(n.shareKafkaConfig(n.txnKafkaConfig(n.groupKafkaConfig(kafkaapi.Config{
		NodeID:                   n.id,
		MaxRequestBytes:          cfg.MaxRequestBytes,
		IdleTimeout:              cfg.IdleTimeout,
		ReadTimeout:              cfg.ReadTimeout,
		MaxConnections:           cfg.MaxConnections,
		MaxConnectionsPerIP:      cfg.MaxConnectionsPerIP,
		QueuedMaxRequestBytes:    cfg.QueuedMaxRequestBytes,
		MaxPartitionsPerRequest:  cfg.MaxPartitionsPerRequest,
		DisableAutoCreateTopics:  cfg.DisableAutoCreateTopics,
		DefaultPartitions:        cfg.DefaultPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		BrokerConfigs:            n.brokerConfigs(),
		TopicDefaults:            n.topicDefaults(),
		ViewCurrent:              n.viewCurrent,
		ViewFresh:                n.viewFresh,
		Logger:                   n.logger,
		Metrics:                  n.kafkaMetrics,
		SSLPrincipal:             sslPrincipal,
		Authorizer:               n.acl,
		SASLMechanisms:           cfg.SASLMechanisms,
		ReauthMax:                max(cfg.ReauthMax, 0),
		AuthFailureDelay:         cfg.AuthFailureDelay,
		QuotaWindow:              quota.Window{Samples: cfg.QuotaWindowNum, Size: time.Duration(cfg.QuotaWindowSizeSeconds) * time.Second},
	}))), n.store, n.cache, n.parts)
	n.serveDynamic(n.kafka)
	for i, l := range n.listeners {
		kl := n.kafkaListener(l)
		ln := n.kafkaLns[i]
		go func() {
			if err := n.kafka.ServeListener(ln, kl); err != nil && !errors.Is(err, kafkaapi.ErrServerClosed) {
				n.fail(err)
			}
		}()
	}
	close(n.ready)
	return n, nil
}

// httpAdvertised is the address other nodes reach this node's HTTP port at: its
// bound address, a wildcard host replaced by the inter-broker listener's host.
func (n *Node) httpAdvertised(kafkaHost string) string {
	a := n.httpLn.Addr().(*net.TCPAddr)
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		host = kafkaHost
	}
	return net.JoinHostPort(host, strconv.Itoa(a.Port))
}

// waitListed waits until the metadata cache lists b at its address, a controller, and
// no partition led by this broker's previous registration, or ctx ends.
func (n *Node) waitListed(ctx context.Context, b cluster.Broker) error {
	for {
		snap := n.cache.Snapshot()
		got, ok := snap.Broker(b.ID)
		// Also wait for a controller, so that Metadata names one from the start, and
		// until the controller has dealt with this registration: partitions that named
		// this broker's previous registration as leader are led again (by it or by
		// another replica), so clients are not told to come here for nothing.
		if ok && got.Host == b.Host && got.Port == b.Port && snap.Controller() != cluster.NoLeader && !n.staleLeadership(snap) {
			return nil
		}
		select {
		case <-snap.Changed():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// staleLeadership reports whether snap names this broker leader of a partition under
// a previous registration (the controller has not re-elected it yet).
func (n *Node) staleLeadership(snap *cluster.Snapshot) bool {
	self := n.selfEpoch()
	for _, t := range snap.Topics() {
		for p := range t.Partitions {
			if st, ok := snap.Partition(t.Name, p); ok && st.Leader == n.id {
				if e := st.EpochOf(n.id); e != 0 && e != self {
					return true
				}
			}
		}
	}
	return false
}

// quorum reports whether the etcd member can serve linearizable requests now (asked
// with a one-second limit).
func (n *Node) quorum() bool {
	if n.member == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return n.member.Healthy(ctx) == nil
}

// status reports what the node is doing: logged, and handed to Config.OnStatus.
func (n *Node) status(s string) {
	n.logger.Info(s)
	if n.cfg.OnStatus != nil {
		n.cfg.OnStatus(s)
	}
}

// ID is this node's broker id.
func (n *Node) ID() int32 { return n.id }

// KafkaAddr is the bound address of the first Kafka listener.
func (n *Node) KafkaAddr() string { return n.kafkaLns[0].Addr().String() }

// ListenerAddrs are the bound addresses of the Kafka listeners, NAME://HOST:PORT,
// in the order of the settings.
func (n *Node) ListenerAddrs() []string {
	out := make([]string, len(n.listeners))
	for i, l := range n.listeners {
		out[i] = l.name + "://" + n.kafkaLns[i].Addr().String()
	}
	return out
}

// HTTPAddr is the bound HTTP listener address.
func (n *Node) HTTPAddr() string { return n.httpLn.Addr().String() }

// Ready is closed once the node serves.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Err delivers a failure that stops the node from serving (the etcd member died, the
// broker session was lost, a listener failed). The owner should then Close.
func (n *Node) Err() <-chan error { return n.errc }

func (n *Node) fail(err error) {
	select {
	case n.errc <- err:
	default:
	}
}

// checkReady is /readyz: the Kafka listener serves, etcd answers with quorum, and
// storage is open.
func (n *Node) checkReady(ctx context.Context) error {
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
	if err := n.member.Healthy(ctx); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	if !n.sessionValid() {
		return errors.New("broker session lost")
	}
	return nil
}

// Close stops the node in the shutdown order of the package doc. It is idempotent
// and returns every step's error joined.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		close(n.stop)
		var errs []error
		add := func(step string, err error) {
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", step, err))
			}
		}
		if n.console != nil {
			add("stop console", n.console.Close())
		}
		if n.kafka != nil {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
			add("stop Kafka server", n.kafka.Shutdown(ctx))
			cancel()
		} else {
			for _, ln := range n.kafkaLns {
				ln.Close()
			}
		}
		if n.shareStore != nil {
			add("close share state store", n.shareStore.Close())
		}
		if n.controller != nil {
			add("stop controller", n.controller.Close())
		}
		if n.sessionEnd != nil {
			<-n.sessionEnd
			<-n.clockEnd
		}
		if sess := n.session.Load(); sess != nil && !n.quorum() {
			// Without quorum the lease cannot be revoked (a revoke would wait out its
			// timeout); it expires on its own within the session timeout.
			n.logger.Warn("etcd has no quorum: the broker session is left to expire")
			sess.Abandon()
		} else if sess != nil {
			if err := sess.Close(); err != nil {
				n.logger.Warn("broker session not revoked; it expires within the session timeout", "err", err)
			}
		}
		if n.applyStarted {
			<-n.applyEnd
		}
		if n.cache != nil {
			add("close metadata cache", n.cache.Close())
		}
		if n.txn != nil {
			add("close transaction coordinator", n.txn.Close())
		}
		if n.groups != nil {
			add("close group coordinator", n.groups.Close())
		}
		if n.parts != nil {
			add("close partitions", n.parts.Close())
		}
		if n.db != nil {
			add("close metadata store", n.db.Close())
		}
		if n.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			add("stop HTTP server", n.httpSrv.Shutdown(ctx))
			cancel()
		}
		if n.member != nil {
			add("close etcd member", n.member.Close())
		}
		if n.lock != nil {
			add("unlock data directory", n.lock.Close())
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}
