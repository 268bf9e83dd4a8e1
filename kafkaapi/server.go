// Package kafkaapi serves the Kafka wire protocol: the listener, one loop per
// connection (framing, headers, in-order responses), one file per API key named after
// it (00_produce.go, 01_fetch.go, ...), each registering its key in the table of
// apis.go, and the zero-copy Fetch response writer.
//
// Requests on one connection are handled one at a time, in order, as Kafka brokers do;
// concurrency comes from connections. kmsg (franz-go) decodes requests and encodes
// responses; only headers and the Fetch response are written by hand.
//
// Lock order: Server.mu, then refusalLog.mu or budget.mu (never both); no lock is held
// while a request is handled. Limits against hostile clients: limits.go and
// docs/limits.md.
package kafkaapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"skiff/acl"
	"skiff/auth"
	"skiff/cluster"
	"skiff/groups"
	"skiff/quota"
	"skiff/replication"
	"skiff/sharegroup"
	"skiff/txn"
)

// Defaults of Config, shared with the broker's settings table (appliance).
const (
	DefaultMaxRequestBytes               = 100 << 20        // socket.request.max.bytes
	DefaultIdleTimeout                   = 10 * time.Minute // connections.max.idle.ms
	DefaultReadTimeout                   = 30 * time.Second
	DefaultMaxConnections                = 10000     // max.connections
	DefaultQueuedMaxRequestBytes         = 256 << 20 // queued.max.request.bytes
	DefaultMaxPartitionsPerRequest       = 100000
	DefaultPartitions                    = 1  // num.partitions
	DefaultReplicationFactor             = 1  // default.replication.factor
	DefaultOffsetsTopicPartitions        = 16 // offsets.topic.num.partitions
	DefaultOffsetsTopicReplicationFactor = 3  // offsets.topic.replication.factor
)

// DefaultSASLMechanisms are what SASL listeners offer by default: the SCRAM
// mechanisms. PLAIN, which sends the password itself, is offered only when
// asked for.
var DefaultSASLMechanisms = []string{auth.ScramSHA512, auth.ScramSHA256}

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// NodeID is this broker's id, as listed in Metadata.
	NodeID int32
	// MaxRequestBytes is socket.request.max.bytes: a larger frame closes the
	// connection (default DefaultMaxRequestBytes).
	MaxRequestBytes int32
	// IdleTimeout is connections.max.idle.ms: a connection silent this long between
	// requests is closed (default DefaultIdleTimeout).
	IdleTimeout time.Duration
	// ReadTimeout bounds the time to receive one request frame from its first byte
	// (IdleTimeout if shorter); a client still sending it then is closed (slowloris).
	// Default DefaultReadTimeout.
	ReadTimeout time.Duration
	// MaxConnections is max.connections: a connection accepted while this many are
	// open is closed at once (default DefaultMaxConnections).
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip: a connection accepted while
	// this many from the same address are open is closed at once (default 0:
	// unlimited, as in Kafka).
	MaxConnectionsPerIP int
	// QueuedMaxRequestBytes is queued.max.request.bytes: the memory all requests
	// being read, decoded and handled may take together. A request takes its frame
	// size (Produce) or decodeFactor times it (other APIs, for the decoded structs)
	// before its frame is read, and waits until that much is free; once decoded it
	// keeps its frame and entryBytes per entry. A request that could need more than
	// all of it closes the connection. Default DefaultQueuedMaxRequestBytes, at
	// least MaxRequestBytes.
	QueuedMaxRequestBytes int64
	// MaxPartitionsPerRequest bounds the partitions (topics, groups... for requests
	// without partitions; see topicEntries) of one request; a request naming more
	// closes the connection (default DefaultMaxPartitionsPerRequest).
	MaxPartitionsPerRequest int
	// DisableAutoCreateTopics turns auto.create.topics.enable off: Metadata then never
	// creates unknown topics (default: it does, when the request allows it).
	DisableAutoCreateTopics bool
	// DefaultPartitions is num.partitions for topics created without a count
	// (default DefaultPartitions).
	DefaultPartitions int32
	// DefaultReplicationFactor is default.replication.factor (default
	// DefaultReplicationFactor).
	DefaultReplicationFactor int16
	// TopicDefaults are the broker's static defaults of topic configs (its
	// settings), keyed by broker config name (log.flush.interval.ms for flush.ms).
	TopicDefaults map[string]string
	// BrokerConfigs are reported by DescribeConfigs for this broker.
	BrokerConfigs []BrokerConfig
	// Groups is the group coordinator serving the group APIs (keys 8..16, 42, 47);
	// required.
	Groups *groups.Coordinator
	// ShareGroups is the membership side of share groups (keys 76, 77) and Shares
	// the share-partitions led here (keys 78, 79); nil: share groups are not
	// served (those keys answer COORDINATOR_NOT_AVAILABLE).
	ShareGroups *sharegroup.Coordinator
	Shares      *sharegroup.Manager
	// ShareConfigs keeps the share groups' configs (the GROUP config resource).
	ShareConfigs *sharegroup.TopicStore
	// MoreGroups are the other coordinators whose groups ListGroups lists (each
	// reports its own group type, "share" for share groups); optional.
	MoreGroups []GroupLister
	// OffsetsTopicPartitions and OffsetsTopicReplicationFactor are
	// offsets.topic.num.partitions and offsets.topic.replication.factor, used when the
	// first FindCoordinator creates __consumer_offsets (defaults
	// DefaultOffsetsTopicPartitions and DefaultOffsetsTopicReplicationFactor; the
	// replication factor is capped at the live brokers).
	OffsetsTopicPartitions        int32
	OffsetsTopicReplicationFactor int16
	// Txn is the transaction coordinator serving keys 22 (with a transactional id),
	// 24, 25 and 26; nil: transactions are refused.
	Txn *txn.Coordinator
	// TxnTopicPartitions and TxnTopicReplicationFactor are
	// transaction.state.log.num.partitions and
	// transaction.state.log.replication.factor, used when the first FindCoordinator
	// for a transactional id creates __transaction_state (defaults
	// txn.DefaultTopicPartitions and txn.DefaultTopicReplication, the replication
	// factor capped at the live brokers).
	TxnTopicPartitions        int32
	TxnTopicReplicationFactor int16
	// TxnV2 serves the versions of transaction version 2 (KIP-890 part 2,
	// docs/design/txn-v2.md) above the advertised ones (api.txnV2Max): never
	// advertised, so only a client that knows of it (another Skiff broker, a
	// test) sends them. False by default until the feature is finalized (WP4).
	// WriteTxnMarkers v2 is served without it too (api.brokerMax).
	TxnV2 bool
	// ViewCurrent waits while this node is recovering from a pause of its process or a
	// loss of its session, until ctx ends, and reports whether its view of the cluster
	// (the metadata cache) is current: not possibly stale. Requests that name leaders
	// (Metadata, FindCoordinator) wait up to staleViewWait in it. Nil: always current.
	ViewCurrent func(ctx context.Context) bool
	// ViewFresh reports, without waiting, whether this node's view of the cluster is
	// current again after a pause or a loss of its session, though its partitions
	// may still be fenced while it confirms its session. A Produce or Fetch stops
	// waiting for the fence once the view is fresh and names other leaders for all
	// its partitions (waitUnfenced). Nil: never stop early.
	ViewFresh func() bool
	// SASLMechanisms are the mechanisms SASL listeners offer
	// (sasl.enabled.mechanisms), of auth.Mechanisms; default
	// DefaultSASLMechanisms.
	SASLMechanisms []string
	// ReauthMax is connections.max.reauth.ms: an authenticated SASL session
	// lasts this long, then the client must re-authenticate on the connection
	// (KIP-368) or have it closed at its next request. 0: sessions do not end.
	ReauthMax time.Duration
	// AuthFailureDelay is the delay of a first failed authentication from an
	// address (connection.failed.authentication.delay.ms), doubling with each
	// further one up to auth.MaxFailureDelay; default auth.DefaultFailureDelay.
	AuthFailureDelay time.Duration
	// Authorizer decides what each principal may do (--authorizer acl), against
	// the ACLs of the metadata cache; nil (--authorizer none): everything, and
	// the ACL keys answer SECURITY_DISABLED.
	Authorizer *acl.Authorizer
	// SSLPrincipal maps the subject of a verified client certificate to the
	// principal of an SSL connection (ssl.principal.mapping.rules); nil: the
	// whole DN, as Kafka's DEFAULT rule.
	SSLPrincipal *auth.SSLPrincipalMapper
	// Logger receives connection-level log lines.
	Logger *slog.Logger
	// Metrics, when set, counts requests and fetched bytes.
	Metrics *Metrics
	// QuotaWindow is how client rates are measured against their quotas
	// (quota.window.num, quota.window.size.seconds); zero fields: Kafka's
	// defaults, quota.DefaultSamples samples of quota.DefaultSize.
	QuotaWindow quota.Window
}

func (c *Config) setDefaults() {
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.QueuedMaxRequestBytes <= 0 {
		c.QueuedMaxRequestBytes = DefaultQueuedMaxRequestBytes
	}
	c.QueuedMaxRequestBytes = max(c.QueuedMaxRequestBytes, int64(c.MaxRequestBytes))
	if c.MaxPartitionsPerRequest <= 0 {
		c.MaxPartitionsPerRequest = DefaultMaxPartitionsPerRequest
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = DefaultPartitions
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = DefaultReplicationFactor
	}
	if c.OffsetsTopicPartitions <= 0 {
		c.OffsetsTopicPartitions = DefaultOffsetsTopicPartitions
	}
	if c.OffsetsTopicReplicationFactor <= 0 {
		c.OffsetsTopicReplicationFactor = DefaultOffsetsTopicReplicationFactor
	}
	if c.TxnTopicPartitions <= 0 {
		c.TxnTopicPartitions = txn.DefaultTopicPartitions
	}
	if c.TxnTopicReplicationFactor <= 0 {
		c.TxnTopicReplicationFactor = txn.DefaultTopicReplication
	}
	if len(c.SASLMechanisms) == 0 {
		c.SASLMechanisms = DefaultSASLMechanisms
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
}

// Server is a Kafka protocol server for one broker.
type Server struct {
	cfg     Config
	logger  *slog.Logger
	meta    *cluster.Store
	cache   *cluster.Cache
	parts   *replication.Manager
	metrics *Metrics

	budget   *budget     // QueuedMaxRequestBytes
	refusals *refusalLog // refusals logged once per client address and reason
	dyn      atomic.Pointer[Dynamic]
	connIDs  atomic.Uint64 // numbers the connections, for share sessions
	sasl     *auth.SASLServer
	delays   *auth.FailureDelays // of failed authentications, per client address
	quotas   *quota.Manager      // client quotas enforced on this node (throttle.go)
	// fetchFiles counts the sealed segment files held by Fetch answers being
	// built or written, all connections together (01_fetch.go).
	fetchFiles atomic.Int64

	ctx    context.Context // canceled by Shutdown: parked requests answer at once
	cancel context.CancelFunc

	mu struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		perHost   map[string]int // open connections by remote address
		closing   bool
	}
	wg sync.WaitGroup // connection loops
}

// New returns a server answering from the cluster metadata and the local partitions.
func New(cfg Config, meta *cluster.Store, cache *cluster.Cache, parts *replication.Manager) *Server {
	cfg.setDefaults()
	s := &Server{cfg: cfg, logger: cfg.Logger, meta: meta, cache: cache, parts: parts, metrics: cfg.Metrics}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.listeners = make(map[net.Listener]struct{})
	s.mu.conns = make(map[*conn]struct{})
	s.mu.perHost = make(map[string]int)
	s.SetDynamic(Dynamic{
		DisableAutoCreateTopics: cfg.DisableAutoCreateTopics, DefaultPartitions: cfg.DefaultPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		MaxConnections:           cfg.MaxConnections, MaxConnectionsPerIP: cfg.MaxConnectionsPerIP,
	})
	s.budget = newBudget(cfg.QueuedMaxRequestBytes, func(used int64) { s.metrics.requestBytes.Set(float64(used)) })
	s.refusals = newRefusalLog(cfg.Logger)
	s.sasl = auth.NewSASLServer(meta.ScramCredential)
	s.delays = auth.NewFailureDelays(cfg.AuthFailureDelay)
	s.quotas = quota.NewManager(cfg.QuotaWindow, func() quota.Set { return cache.Snapshot().Quotas() })
	return s
}

// Dynamic are the settings of a Server that may change while it serves (dynamic
// broker configs); each is the Config field of the same name.
type Dynamic struct {
	DisableAutoCreateTopics  bool
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	MaxConnections           int
	MaxConnectionsPerIP      int
}

// SetDynamic changes the dynamic settings; requests and connections from then on
// follow them (open connections beyond a lowered limit stay open). Zero fields are
// taken as they are: give every one (New starts with Config's, defaults applied).
func (s *Server) SetDynamic(d Dynamic) { s.dyn.Store(&d) }

func (s *Server) dynamic() *Dynamic { return s.dyn.Load() }

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("kafkaapi: server closed")

// Serve accepts connections on ln as a PLAINTEXT listener named PLAINTEXT until
// Shutdown; it always returns a non-nil error.
func (s *Server) Serve(ln net.Listener) error { return s.ServeListener(ln, plaintextListener) }

// ServeListener accepts connections on ln as listener l until Shutdown; it always
// returns a non-nil error.
func (s *Server) ServeListener(ln net.Listener, l Listener) error {
	if err := l.check(); err != nil {
		ln.Close()
		return err
	}
	s.mu.Lock()
	if s.mu.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.mu.listeners[ln] = struct{}{}
	s.mu.Unlock()
	var tempDelay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.mu.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				tempDelay = min(max(2*tempDelay, 5*time.Millisecond), time.Second)
				time.Sleep(tempDelay) // back off accept errors (EMFILE), as net/http does
				continue
			}
			return fmt.Errorf("kafkaapi: accept: %w", err)
		}
		tempDelay = 0
		c := newConn(s, nc, &l)
		s.mu.Lock()
		if s.mu.closing {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		if reason, msg, args := s.admitLocked(c.host); reason != "" {
			s.mu.Unlock()
			nc.Close()
			s.metrics.connectionsRefused.WithLabelValues(reason).Inc()
			s.refusals.refuse(reason, c.host, msg, args...)
			continue
		}
		if th := s.quotas.AdmitConnection(c.host, time.Now()); th > 0 {
			// connection_creation_rate (KIP-612): as Kafka, close the connection
			// after the throttle (here at most one quota window, so that a flood
			// holds few sockets), which slows a client that reconnects at once.
			s.mu.Unlock()
			time.AfterFunc(min(th, s.quotas.Window().Size), func() { nc.Close() })
			s.metrics.connectionsRefused.WithLabelValues(quota.ConnectionCreationRate).Inc()
			s.refusals.refuse(quota.ConnectionCreationRate, c.host, "closing new connection: this address is over its connection_creation_rate", "throttle", th)
			continue
		}
		s.mu.conns[c] = struct{}{}
		s.mu.perHost[c.host]++
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.mu.conns, c)
			if s.mu.perHost[c.host]--; s.mu.perHost[c.host] <= 0 {
				delete(s.mu.perHost, c.host)
			}
			s.mu.Unlock()
		}()
	}
}

// admitLocked checks a new connection from host against max.connections and
// max.connections.per.ip; it returns the reason and log line of a refusal, or "".
// Connections beyond a limit are closed at once, as Kafka does.
func (s *Server) admitLocked(host string) (reason, msg string, args []any) {
	d := s.dynamic()
	if n := len(s.mu.conns); n >= d.MaxConnections {
		return "max_connections", "closing new connection: the node has max-connections open",
			[]any{"max_connections", d.MaxConnections}
	}
	if limit := d.MaxConnectionsPerIP; limit > 0 && s.mu.perHost[host] >= limit {
		return "max_connections_per_ip", "closing new connection: this address has max-connections-per-ip open",
			[]any{"max_connections_per_ip", limit}
	}
	return "", "", nil
}

// Shutdown stops accepting, lets every request being handled finish and answer
// (parked fetches answer at once with what they have), then closes the connections.
// When ctx ends first, the remaining connections are closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.mu.closing = true
	var errs []error
	for ln := range s.mu.listeners {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	s.mu.listeners = nil
	for c := range s.mu.conns {
		c.stopReading()
	}
	s.mu.Unlock()
	s.cancel()

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.mu.conns {
			c.netConn().Close()
		}
		s.mu.Unlock()
		<-done
	}
	return errors.Join(errs...)
}

func (s *Server) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closing
}
