package embedetcd

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"skiff/internal/freeport"
	"skiff/internal/tlsconf"
)

// Defaults of Config. A zero field in Config means "use the default below".
const (
	// DefaultClientAddr is the etcd client listen address (cluster-internal).
	DefaultClientAddr = ":9093"
	// DefaultPeerAddr is the etcd peer (raft) listen address.
	DefaultPeerAddr = ":9094"

	// DefaultHeartbeatInterval is the raft heartbeat (etcd TickMs). 50 ms is
	// well above a LAN round trip and cheap (a few small messages per second
	// per follower), so it also suits the small multi-node clusters of later
	// releases; a lone member becomes ready in about three ticks.
	DefaultHeartbeatInterval = 50 * time.Millisecond
	// DefaultElectionTimeout is the raft election timeout (etcd ElectionMs):
	// 10 heartbeats, etcd's recommended ratio. It bounds how quickly a dead
	// leader is replaced, and leaves room for GC pauses and slow fsyncs on a
	// busy 2-core machine without spurious elections. It also sets etcd's
	// minimum lease TTL: ceil(1.5 * election timeout) = 1 s.
	DefaultElectionTimeout = 500 * time.Millisecond

	// DefaultQuotaBackendBytes caps etcd's bbolt file. Skiff metadata is
	// small (creating a topic of 10,000 partitions with replication factor 3
	// grows the database by about 1.7 MB, measured) and history is compacted
	// every few minutes, so 512 MiB leaves two orders of magnitude of
	// headroom while failing long before a disk fills.
	// Exceeding it raises etcd's NOSPACE alarm: writes fail, Healthy reports
	// the alarm.
	DefaultQuotaBackendBytes = 512 << 20
	// DefaultCompactionRetention is the periodic auto-compaction retention:
	// etcd keeps at least this much history. Watchers that fall further
	// behind get ErrCompacted and re-list (cluster.Cache does).
	DefaultCompactionRetention = 10 * time.Minute
	// DefaultMaxRequestBytes is the largest client request etcd accepts.
	// CreateTopic writes a topic and all of its partition keys in one
	// transaction: 10,000 partitions with replication factor 3 are about
	// 1.3 MB of keys and values.
	DefaultMaxRequestBytes = 8 << 20
	// DefaultMaxTxnOps is the most operations in one transaction (etcd's
	// default is 128). One CreateTopic needs partitions+1 operations, so this
	// bounds partitions per topic (see cluster.MaxPartitions).
	DefaultMaxTxnOps = 16384

	// DefaultInitialClusterToken distinguishes Skiff clusters from each other
	// during bootstrap: etcd derives member and cluster ids from it.
	DefaultInitialClusterToken = "skiff"
)

// Cluster states for Config.ClusterState.
const (
	// ClusterStateNew bootstraps a new cluster from InitialCluster.
	ClusterStateNew = "new"
	// ClusterStateExisting joins a running cluster that already lists this
	// member (added with MemberAdd).
	ClusterStateExisting = "existing"
)

// Config configures one etcd member. Only Dir is required.
type Config struct {
	// Name is the member name, unique in the cluster. Default: the host
	// name, or "skiff" if it cannot be read.
	Name string
	// Dir is the member's data directory (<data>/etcd). Required.
	Dir string

	// ClientAddr is the host:port the client (gRPC) listener binds. The host
	// must be an IP address, "localhost" or empty (all interfaces). Port 0
	// picks a free port when Start runs (internal/freeport, below the kernel's
	// ephemeral range) and releases it, because etcd must know the advertised
	// URLs before it binds its own listeners (they are written into the raft
	// membership and feed the member id). Another process could take the port
	// in that window; use port 0 for tests only. Default DefaultClientAddr.
	ClientAddr string
	// PeerAddr is the host:port the peer (raft) listener binds; same rules as
	// ClientAddr. Default DefaultPeerAddr.
	PeerAddr string
	// AdvertiseClientAddr is the host:port other nodes and tools use to reach
	// this member's client listener. Default: ClientAddr, with a wildcard
	// host ("", 0.0.0.0, ::) replaced by this machine's host name (as Kafka
	// derives advertised.listeners), or 127.0.0.1 when the host name cannot
	// be read. Set it explicitly on machines whose host name other nodes
	// cannot resolve.
	AdvertiseClientAddr string
	// AdvertisePeerAddr is the host:port other members use for raft traffic;
	// derived from PeerAddr like AdvertiseClientAddr.
	AdvertisePeerAddr string

	// InitialCluster is etcd's initial cluster, "name=http://host:port,..."
	// (https:// with TLS).
	// Used only when Dir holds no member yet. Default: this member alone,
	// Name=PeerURL() (a new single-member cluster).
	InitialCluster string
	// ClusterState is ClusterStateNew (default) or ClusterStateExisting.
	// Used only when Dir holds no member yet.
	ClusterState string
	// InitialClusterToken: default DefaultInitialClusterToken.
	InitialClusterToken string
	// ForceNewCluster restarts a member on its existing data as the only member of
	// its cluster (etcd --force-new-cluster): every other member is removed from the
	// membership, and the member has quorum on its own, keeping its data. It is the
	// way out when a quorum of the members is lost for good; see docs/operations.md.
	// Set it for one start only: on every start it drops the members added since.
	// Default false.
	ForceNewCluster bool

	// HeartbeatInterval: default DefaultHeartbeatInterval. Must be a whole
	// number of milliseconds.
	HeartbeatInterval time.Duration
	// ElectionTimeout: default DefaultElectionTimeout; at least 5 heartbeats.
	ElectionTimeout time.Duration
	// QuotaBackendBytes: default DefaultQuotaBackendBytes.
	QuotaBackendBytes int64
	// CompactionRetention: default DefaultCompactionRetention (periodic
	// auto-compaction; etcd itself leaves compaction off by default).
	CompactionRetention time.Duration
	// MaxRequestBytes: default DefaultMaxRequestBytes.
	MaxRequestBytes uint
	// MaxTxnOps: default DefaultMaxTxnOps.
	MaxTxnOps uint

	// TLS, when set, serves the client and peer ports with TLS (https:// URLs)
	// and requires from every peer and client a certificate signed by one of its
	// CAs (mutual TLS). etcd reads the certificate and key files of TLS.Files()
	// again at each handshake, so they are rotated by replacing them; the
	// member's own client, the peers and Dial's clients present the same
	// certificate. It must allow server and client use and name the hosts that
	// others dial (the advertised addresses, and the listen host for the
	// member's own client: loopback for a wildcard one). The peer port does not check that a peer's
	// certificate names the address it connects from (etcd's
	// SkipClientSANVerify): the CA is the proof. Nil: plaintext (http://). The
	// members of a cluster all use TLS or none.
	TLS *tlsconf.Loader

	// Logger receives etcd's logs (with component=etcd). Default:
	// slog.Default().
	Logger *slog.Logger
}

// scheme is the scheme of the member's URLs.
func (cfg Config) scheme() string { return schemeOf(cfg.TLS) }

func schemeOf(l *tlsconf.Loader) string {
	if l != nil {
		return "https"
	}
	return "http"
}

// PeerURL is the advertised peer URL, as the member's cluster lists it:
// http://AdvertisePeerAddr, or https:// with TLS.
func (cfg Config) PeerURL() string { return cfg.scheme() + "://" + cfg.AdvertisePeerAddr }

// MemberName is the etcd member name of node id when the node configures none:
// "skiff-<id>". A node that started before node records existed is found by it.
func MemberName(id int32) string { return fmt.Sprintf("skiff-%d", id) }

// ErrNoDir is returned by Start when Config.Dir is empty.
var ErrNoDir = errors.New("embedetcd: no data directory")

// withDefaults returns cfg with every zero field set to its default and with
// addresses resolved (port 0 replaced by a free port).
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Dir == "" {
		return cfg, ErrNoDir
	}
	if cfg.Name == "" {
		cfg.Name = "skiff"
		if h, err := os.Hostname(); err == nil && h != "" {
			cfg.Name = h
		}
	}
	if cfg.ClientAddr == "" {
		cfg.ClientAddr = DefaultClientAddr
	}
	if cfg.PeerAddr == "" {
		cfg.PeerAddr = DefaultPeerAddr
	}
	if cfg.ClusterState == "" {
		cfg.ClusterState = ClusterStateNew
	}
	if cfg.InitialClusterToken == "" {
		cfg.InitialClusterToken = DefaultInitialClusterToken
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.ElectionTimeout == 0 {
		cfg.ElectionTimeout = DefaultElectionTimeout
	}
	if cfg.QuotaBackendBytes == 0 {
		cfg.QuotaBackendBytes = DefaultQuotaBackendBytes
	}
	if cfg.CompactionRetention == 0 {
		cfg.CompactionRetention = DefaultCompactionRetention
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxTxnOps == 0 {
		cfg.MaxTxnOps = DefaultMaxTxnOps
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HeartbeatInterval%time.Millisecond != 0 || cfg.ElectionTimeout%time.Millisecond != 0 {
		return cfg, fmt.Errorf("embedetcd: heartbeat %v and election timeout %v must be whole milliseconds",
			cfg.HeartbeatInterval, cfg.ElectionTimeout)
	}

	var err error
	if cfg.ClientAddr, err = bindAddr(cfg.ClientAddr); err != nil {
		return cfg, fmt.Errorf("embedetcd: client address: %w", err)
	}
	if cfg.PeerAddr, err = bindAddr(cfg.PeerAddr); err != nil {
		return cfg, fmt.Errorf("embedetcd: peer address: %w", err)
	}
	if cfg.AdvertiseClientAddr == "" {
		cfg.AdvertiseClientAddr = advertiseAddr(cfg.ClientAddr)
	}
	if cfg.AdvertisePeerAddr == "" {
		cfg.AdvertisePeerAddr = advertiseAddr(cfg.PeerAddr)
	}
	return cfg, nil
}

// bindAddr normalises a listen address for etcd, which wants an IP host:
// an empty host becomes 0.0.0.0, and port 0 becomes a free port (freeport: below
// the ephemeral range, which outgoing connections, etcd's own among them, take
// from while the member starts).
func bindAddr(hostport string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", err
	}
	if host == "" {
		host = "0.0.0.0"
	}
	if port != "0" {
		return net.JoinHostPort(host, port), nil
	}
	p, err := freeport.Pick(host)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

func isWildcard(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// advertiseAddr derives an advertised address from a resolved listen address.
func advertiseAddr(listen string) string {
	host, port, _ := net.SplitHostPort(listen)
	if !isWildcard(host) {
		return listen
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return net.JoinHostPort(h, port)
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// dialAddr is the address the member's own client dials: the listen address,
// with a wildcard host replaced by loopback.
func dialAddr(listen string) string {
	host, port, _ := net.SplitHostPort(listen)
	if !isWildcard(host) {
		return listen
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return net.JoinHostPort("::1", port)
	}
	return net.JoinHostPort("127.0.0.1", port)
}

func (cfg Config) url(hostport string) url.URL {
	return url.URL{Scheme: cfg.scheme(), Host: hostport}
}
