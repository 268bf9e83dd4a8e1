package appliance

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"skiff/compaction"
	"skiff/groups"
	"skiff/kafkaapi"
	"skiff/replication"
)

// Config is everything a node needs; cmd/skiff builds it from flags, the YAML file
// and SKIFF_* variables. Zero values take the defaults of the settings table
// (Settings, settings.go), where each field's setting is declared.
type Config struct {
	// DataDir holds the node's data: etcd/, meta/ (Pebble), topics/, node.json.
	DataDir string
	// Listen is the Kafka API listen address.
	Listen string
	// Advertise is the Kafka address clients are told to dial. Empty: Listen, with a
	// wildcard host replaced by this machine's host name.
	Advertise string
	// Listeners are the Kafka listeners, NAME://HOST:PORT (Kafka's listeners);
	// empty: one PLAINTEXT listener on Listen, advertised as Advertise.
	Listeners []string
	// AdvertisedListeners are the addresses clients are told to dial, by listener
	// name (Kafka's advertised.listeners); a listener without one advertises its
	// bound address, a wildcard host replaced by this machine's host name.
	AdvertisedListeners []string
	// ListenerProtocolMap maps listener names to security protocols, NAME:PROTOCOL
	// (Kafka's listener.security.protocol.map); the four protocol names map to
	// themselves.
	ListenerProtocolMap []string
	// InterBrokerListener names the listener followers fetch from their leaders
	// on (Kafka's inter.broker.listener.name); empty: the first listener.
	InterBrokerListener string
	// TLSCert and TLSKey are the PEM files of the node's certificate chain and
	// key, for TLS listeners and for followers dialling TLS leaders; read again
	// when they change (internal/tlsconf).
	TLSCert, TLSKey string
	// TLSClientCA is the PEM file of the CAs that sign client certificates: SSL
	// listeners require one, SASL_SSL listeners verify one if given. Followers
	// verify their leaders' certificates with it (empty: the system's roots).
	TLSClientCA string
	// TLSPrincipalMappingRules is ssl.principal.mapping.rules: how a client
	// certificate's subject becomes the principal on SSL listeners.
	TLSPrincipalMappingRules string
	// SASLMechanisms are what SASL listeners offer (sasl.enabled.mechanisms).
	SASLMechanisms []string
	// ReauthMax is connections.max.reauth.ms (see kafkaapi.Config.ReauthMax);
	// negative: sessions do not end (the setting's 0).
	ReauthMax time.Duration
	// AuthFailureDelay is connection.failed.authentication.delay.ms, the delay of
	// a first failed authentication from an address.
	AuthFailureDelay time.Duration
	// InterBrokerSASLMechanism, InterBrokerUser and InterBrokerPasswordFile are
	// how followers authenticate to their leaders when the inter-broker listener
	// uses SASL (docs/security.md); the mechanism defaults to the first of
	// SASLMechanisms.
	InterBrokerSASLMechanism, InterBrokerUser, InterBrokerPasswordFile string
	// Authorizer is AuthorizerACL to check every request against the cluster's
	// ACLs, as Kafka's authorizer does, or AuthorizerNone (the default): every
	// client may do everything.
	Authorizer string
	// SuperUsers is super.users: principals that may do everything whatever the
	// ACLs say, TYPE:NAME separated by semicolons (User:admin;User:ANONYMOUS).
	SuperUsers string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found: with the ACL
	// authorizer, an operation on a resource that no ACL names is allowed.
	AllowEveryoneIfNoACL bool
	// EtcdClient and EtcdPeer are the embedded etcd member's listen addresses.
	EtcdClient, EtcdPeer string
	// EtcdTLS serves both etcd ports with TLS (TLSCert, TLSKey) and requires
	// certificates signed by TLSClientCA from peers and clients.
	EtcdTLS bool
	// HTTP is the listen address of /metrics, /healthz, /readyz and the admin API.
	HTTP string
	// HTTPTLS serves the HTTP port with TLS (TLSCert, TLSKey); a client
	// certificate signed by TLSClientCA then authenticates admin requests.
	HTTPTLS bool
	// HTTPTokenFile holds (first line) the bearer token that authenticates
	// admin requests; read at each request.
	HTTPTokenFile string
	// HTTPAuth is which HTTP paths need credentials once the node has any
	// (httpauth.go): HTTPAuthAdmin or HTTPAuthAll.
	HTTPAuth string
	// Pprof adds Go's profiler (net/http/pprof) under /debug/pprof/ to the HTTP
	// address. Off by default: a profile costs the node CPU while it runs and shows
	// its internals to whoever reaches the port.
	Pprof bool
	// DisableConsole turns off the web console served at / on the HTTP address
	// (package console; --console=false).
	DisableConsole bool
	// ConsoleAdmins are the SCRAM users who may use the console's write actions
	// once logged in (default: none; the console is read-only).
	ConsoleAdmins []string
	// NodeName names the etcd member (empty: skiff-<node id>).
	NodeName string
	// EtcdAdvertiseClient and EtcdAdvertisePeer are the etcd addresses other nodes
	// dial (empty: the listen addresses, a wildcard host replaced by the host name).
	EtcdAdvertiseClient, EtcdAdvertisePeer string
	// Rack is the broker's rack (broker.rack), used to spread replicas.
	Rack string

	// Bootstrap starts a new cluster (also the default with an empty data directory
	// and no Join). Ignored when the data directory already belongs to a cluster.
	Bootstrap bool
	// Join lists etcd client addresses (HOST:PORT) of running nodes; an empty data
	// directory then joins their cluster. Ignored on restart, except that a data
	// directory of another cluster is refused.
	Join []string
	// JoinTimeout bounds reaching the join target and being added.
	JoinTimeout time.Duration
	// Secure forms the cluster securely (secure.go, docs/security.md): a cluster
	// CA under <data>/secure, TLS on every port, SASL_SSL with SCRAM, a first
	// admin user. A node whose data directory holds <data>/secure is secure
	// whatever this says.
	Secure bool
	// JoinToken admits this node to a cluster formed with Secure (join.go); Join
	// then lists HTTP addresses of running nodes.
	JoinToken string
	// JoinTokenTTL is how long the join token the first node of a secure cluster
	// makes lasts.
	JoinTokenTTL time.Duration
	// OnSecureFormed, when set, receives what the first node of a cluster formed
	// with Secure tells its operator: where the admin password is, a join token.
	// Called once, when the cluster is formed.
	OnSecureFormed func(SecureFormed)
	// ForceNewCluster restarts this node on its data directory as the only member of
	// its cluster, keeping its data: the way back after a quorum of the nodes is lost
	// for good (docs/operations.md). Set it for one restart only. Refused with an empty
	// data directory, --bootstrap or --join.
	ForceNewCluster bool

	// DisableAutoCreateTopics turns auto.create.topics.enable off.
	DisableAutoCreateTopics bool
	// DefaultPartitions is num.partitions.
	DefaultPartitions int32
	// DefaultReplicationFactor is default.replication.factor.
	DefaultReplicationFactor int16
	// MaxRequestBytes is socket.request.max.bytes.
	MaxRequestBytes int32
	// IdleTimeout is connections.max.idle.ms.
	IdleTimeout time.Duration
	// ReadTimeout bounds receiving one Kafka request frame from its first byte
	// (see kafkaapi.Config.ReadTimeout).
	ReadTimeout time.Duration
	// MaxConnections is max.connections.
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip (0: unlimited).
	MaxConnectionsPerIP int
	// QueuedMaxRequestBytes is queued.max.request.bytes, the memory all Kafka
	// requests in progress may take (see kafkaapi.Config).
	QueuedMaxRequestBytes int64
	// MaxPartitionsPerRequest bounds the partitions one Kafka request may name.
	MaxPartitionsPerRequest int
	// QuotaWindowNum and QuotaWindowSizeSeconds are quota.window.num and
	// quota.window.size.seconds: client rates are measured over that many
	// samples of that many seconds (docs/quotas.md).
	QuotaWindowNum         int
	QuotaWindowSizeSeconds int
	// RetentionCheckInterval is log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// DisableAutoLeaderRebalance turns auto.leader.rebalance.enable off (by default
	// leadership moves back to preferred replicas every LeaderImbalanceCheckInterval).
	DisableAutoLeaderRebalance bool
	// LeaderImbalanceCheckInterval is leader.imbalance.check.interval.
	LeaderImbalanceCheckInterval time.Duration
	// ReplicaLagMax is replica.lag.time.max.ms: followers behind this long leave the
	// ISR.
	ReplicaLagMax time.Duration
	// ReplicaFetchMinBytes and ReplicaFetchWaitMax are replica.fetch.min.bytes and
	// replica.fetch.wait.max.ms: how long a follower's fetch waits at the leader
	// for how many bytes.
	ReplicaFetchMinBytes int32
	ReplicaFetchWaitMax  time.Duration
	// SessionTimeout is broker.session.timeout.ms: the TTL of the broker's etcd
	// lease.
	SessionTimeout time.Duration
	// ShutdownTimeout bounds how long Close waits for in-flight requests.
	ShutdownTimeout time.Duration
	// MetaCacheBytes is Pebble's block cache (default: the offsets package's).
	MetaCacheBytes int64
	// SegmentFileCache is how many idle sealed segment files the node keeps open,
	// all partitions together (logstore.FileCache); 0: logstore's default, from
	// the open-file limit.
	SegmentFileCache int
	// FlushPolicy is the broker default of the topic config flush.policy:
	// replicated, always or interval (docs/durability.md). Empty (the default): by
	// replication factor, always for topics with one replica, replicated for more.
	FlushPolicy string
	// FlushInterval is the broker default of flush.ms, the fdatasync interval of
	// flush.policy=interval.
	FlushInterval time.Duration
	// CleanerThreads is log.cleaner.threads.
	CleanerThreads int
	// CleanerDedupeBufferSize is log.cleaner.dedupe.buffer.size: the memory of
	// the log cleaner's key maps.
	CleanerDedupeBufferSize int64
	// CleanerIOBytesPerSecond is log.cleaner.io.max.bytes.per.second (0: no limit).
	CleanerIOBytesPerSecond int64
	// CleanerBackoff is log.cleaner.backoff.ms.
	CleanerBackoff time.Duration
	// FollowerThrottledRate is follower.replication.throttled.rate: bytes per
	// second the out-of-sync replicas a topic lists in
	// follower.replication.throttled.replicas fetch together (0: no limit).
	FollowerThrottledRate int64
	// LeaderThrottledRate is leader.replication.throttled.rate: bytes per
	// second this node's replicas listed in leader.replication.throttled.replicas
	// answer out-of-sync followers together (0: no limit).
	LeaderThrottledRate int64
	// Groups holds the group coordinator's settings (see GroupConfig).
	Groups GroupConfig
	// Txn holds the transaction coordinator's settings (see TxnConfig).
	Txn TxnConfig

	// LogLevel and LogFormat are the settings skiff serve builds Logger from; the
	// node itself only logs to Logger.
	LogLevel, LogFormat string

	// OnStatus, when set, receives a one-line description of what the node is doing
	// (for systemd's STATUS=); every status is also logged.
	OnStatus func(string)

	// Version is reported in logs and metrics.
	Version string
	// Logger receives the node's logs. Default: slog.Default().
	Logger *slog.Logger
}

// setDefaults fills the settings c leaves unset with their defaults.
func (c *Config) setDefaults() {
	for _, s := range c.Settings() {
		s.v.fill()
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports settings that cannot work, naming the setting.
func (c Config) Validate() error {
	var errs []error
	if c.FlushPolicy != "" {
		if _, err := replication.ParseFlushPolicy(c.FlushPolicy); err != nil {
			errs = append(errs, fmt.Errorf("flush-policy %q: must be replicated, always or interval (or empty: by replication factor)", c.FlushPolicy))
		}
	}
	if c.CleanerThreads < 0 {
		errs = append(errs, fmt.Errorf("log-cleaner-threads %d: must be at least 1", c.CleanerThreads))
	}
	if c.CleanerDedupeBufferSize < 0 {
		errs = append(errs, fmt.Errorf("log-cleaner-dedupe-buffer-size %d: must be positive", c.CleanerDedupeBufferSize))
	}
	if c.FollowerThrottledRate < 0 || c.LeaderThrottledRate < 0 {
		errs = append(errs, fmt.Errorf("replication throttled rates %d, %d: must be positive, or 0 for no limit", c.FollowerThrottledRate, c.LeaderThrottledRate))
	}
	if c.CleanerIOBytesPerSecond < 0 {
		errs = append(errs, fmt.Errorf("log-cleaner-io-max-bytes-per-second %d: must be positive, or 0 for no limit", c.CleanerIOBytesPerSecond))
	}
	if c.FlushInterval < 0 {
		errs = append(errs, fmt.Errorf("flush-interval %v: must not be negative", c.FlushInterval))
	}
	for _, a := range []struct{ name, addr string }{
		{"listen", c.Listen}, {"advertise", c.Advertise}, {"etcd-client", c.EtcdClient},
		{"etcd-peer", c.EtcdPeer}, {"http", c.HTTP},
		{"etcd-advertise-client", c.EtcdAdvertiseClient}, {"etcd-advertise-peer", c.EtcdAdvertisePeer},
	} {
		if a.addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want HOST:PORT (%v)", a.name, a.addr, err))
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("%s %q: port must be a number from 0 to 65535", a.name, a.addr))
		}
	}
	if c.Advertise != "" {
		host, port, _ := net.SplitHostPort(c.Advertise)
		if host == "" || port == "0" {
			errs = append(errs, fmt.Errorf("advertise %q: needs a host and a port clients can dial", c.Advertise))
		}
	}
	errs = append(errs, c.validateSecurity()...)
	errs = append(errs, c.validateHTTPAuth()...)
	errs = append(errs, c.validateSecure()...)
	if c.Bootstrap && len(c.Join) > 0 {
		errs = append(errs, errors.New("bootstrap and join exclude each other: --bootstrap starts a new cluster, --join adds this node to a running one"))
	}
	if c.ForceNewCluster && (c.Bootstrap || len(c.Join) > 0) {
		errs = append(errs, errors.New("force-new-cluster excludes bootstrap and join: it restarts this node's own data as a one-member cluster"))
	}
	for _, j := range c.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			what := "the etcd client address of a running node"
			if c.JoinToken != "" {
				what = "the HTTP address of a running node (with join-token)"
			}
			errs = append(errs, fmt.Errorf("join %q: want HOST:PORT, %s (%v)", j, what, err))
		}
	}
	for _, a := range c.Groups.ConsumerAssignors {
		if a != "uniform" && a != "range" {
			errs = append(errs, fmt.Errorf("group-consumer-assignors %q: the assignors are uniform and range", a))
		}
	}
	if p := strings.ToLower(c.Groups.ConsumerMigrationPolicy); p != "" && !slices.Contains(groups.MigrationPolicies, p) {
		errs = append(errs, fmt.Errorf("group-consumer-migration-policy %q: one of %s", p, strings.Join(groups.MigrationPolicies, ", ")))
	}
	if c.DefaultPartitions < 0 {
		errs = append(errs, fmt.Errorf("num-partitions %d: must be at least 1", c.DefaultPartitions))
	}
	if c.DefaultReplicationFactor < 0 {
		errs = append(errs, fmt.Errorf("default-replication-factor %d: must be at least 1", c.DefaultReplicationFactor))
	}
	if c.MaxRequestBytes < 0 {
		errs = append(errs, fmt.Errorf("socket-request-max-bytes %d: must be positive", c.MaxRequestBytes))
	}
	if c.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("max-connections %d: must be positive", c.MaxConnections))
	}
	if c.MaxConnectionsPerIP < 0 {
		errs = append(errs, fmt.Errorf("max-connections-per-ip %d: must be positive, or 0 for no limit", c.MaxConnectionsPerIP))
	}
	if c.QuotaWindowNum < 0 {
		errs = append(errs, fmt.Errorf("quota-window-num %d: must be at least 1", c.QuotaWindowNum))
	}
	if c.QuotaWindowSizeSeconds < 0 {
		errs = append(errs, fmt.Errorf("quota-window-size-seconds %d: must be at least 1", c.QuotaWindowSizeSeconds))
	}
	if c.MaxPartitionsPerRequest < 0 {
		errs = append(errs, fmt.Errorf("max-partitions-per-request %d: must be positive", c.MaxPartitionsPerRequest))
	}
	if c.QueuedMaxRequestBytes < 0 {
		errs = append(errs, fmt.Errorf("queued-max-request-bytes %d: must be positive", c.QueuedMaxRequestBytes))
	} else if c.QueuedMaxRequestBytes > 0 {
		maxReq := int64(c.MaxRequestBytes)
		if maxReq <= 0 {
			maxReq = kafkaapi.DefaultMaxRequestBytes
		}
		if c.QueuedMaxRequestBytes < maxReq {
			errs = append(errs, fmt.Errorf("queued-max-request-bytes %d: must be at least socket-request-max-bytes (%d), or no request of that size could be read", c.QueuedMaxRequestBytes, maxReq))
		}
	}
	return errors.Join(errs...)
}

// advertisedAddr is the Kafka address to register: Advertise, or the bound listener
// address with a wildcard host replaced by the host name.
func advertisedAddr(advertise string, bound net.Addr) (host string, port int32, err error) {
	if advertise != "" {
		h, p, err := net.SplitHostPort(advertise)
		if err != nil {
			return "", 0, err
		}
		n, err := strconv.Atoi(p)
		return h, int32(n), err
	}
	ta := bound.(*net.TCPAddr)
	host = ta.IP.String()
	if ta.IP.IsUnspecified() {
		if host, err = os.Hostname(); err != nil || host == "" {
			host = "localhost"
		}
	}
	return host, int32(ta.Port), nil
}

// cleanerConfig is the log cleaner's part of c.
func (c Config) cleanerConfig() compaction.CleanerConfig {
	return compaction.CleanerConfig{Threads: c.CleanerThreads, DedupeBufferSize: c.CleanerDedupeBufferSize,
		IOBytesPerSecond: c.CleanerIOBytesPerSecond, Backoff: c.CleanerBackoff}
}
