package appliance

// The settings of `skiff serve`, each declared once in Config.Settings: its flag
// (also its YAML key and SKIFF_* variable), its Kafka name, its typed default and
// its doc line. The flags, --help, the man page, the packaged skiff.yaml
// (cmd/skiff), the defaults of a Config and the broker entries of DescribeConfigs
// all come from this table. A default that a lower package also needs for its own
// Config is that package's named constant (kafkaapi.DefaultMaxConnections, ...),
// which the table refers to. A new setting is one entry here, plus the Config
// field it is bound to and its use; `go generate ./cmd/skiff` then rewrites the
// packaged skiff.yaml.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"skiff/auth"
	"skiff/cluster"
	"skiff/compaction"
	"skiff/embedetcd"
	"skiff/groups"
	"skiff/kafkaapi"
	"skiff/quota"
	"skiff/replication"
	"skiff/sharegroup"
	"skiff/txn"
)

// The ports a node listens on by default, for Kafka and HTTP; the client
// commands dial them when an address names no port.
const (
	DefaultKafkaPort = "9092"
	DefaultHTTPPort  = "9644"
)

// Kind is how a setting's value is written in a flag, the YAML file or a SKIFF_*
// variable.
type Kind int

// Kinds of settings.
const (
	KindString   Kind = iota // any text
	KindBool                 // true or false
	KindInt                  // a whole number
	KindDuration             // a Go duration such as 30s or 10m
)

// Setting is one setting of `skiff serve`, bound to its field of a Config.
type Setting struct {
	// Name is the flag, the key of the YAML file and, as SKIFF_<NAME> with dashes
	// as underscores, the environment variable.
	Name string
	// Kafka is Kafka's name of the broker config, "" where Kafka has none, and
	// KafkaType its type. DescribeConfigs reports the setting under this name,
	// unless Unlisted: Kafka has the config, but Skiff does not report it yet, or
	// reports it as the broker default of a topic config (flush.policy, Skiff's,
	// and log.flush.interval.ms), checked and resolved as those are.
	Kafka     string
	KafkaType cluster.ConfigType
	Unlisted  bool
	// Doc is the one-line help; --help adds the Kafka name and the default.
	Doc string
	// Dynamic settings can be changed while the node runs, by AlterConfigs under
	// their Kafka name (DescribeConfigs' read_only is the opposite): the value
	// set for this broker, else the one set for every broker, else the static one
	// applies (dynamic.go). The broker defaults of topic configs
	// (log.retention.ms, flush.policy, log.flush.interval.ms, ...) are dynamic
	// too, without an entry here.
	Dynamic bool

	v value
}

// Kind is how the setting's value is written.
func (s Setting) Kind() Kind { return s.v.kind() }

// Default is the default value, written as in a flag ("" for none).
func (s Setting) Default() string { return s.v.defaultText() }

// Check reports whether text is a valid value, without setting it.
func (s Setting) Check(text string) error { return s.v.check(text) }

// Set parses text and stores it in the setting's field; on error the field is
// unchanged.
func (s Setting) Set(text string) error { return s.v.set(text) }

// CheckKafka reports whether text is a valid value in Kafka's form: what
// DescribeConfigs shows and AlterConfigs sets (a whole number of the Kafka name's
// unit for durations: milliseconds for .ms). Values that would mean "the
// default" in a flag (0, negative) are refused, except where 0 means none or no
// limit.
func (s Setting) CheckKafka(text string) error { return s.v.setKafka(text, kafkaUnit(s.Kafka), false) }

// SetKafka parses text in Kafka's form (CheckKafka) and stores it; on error the
// field is unchanged.
func (s Setting) SetKafka(text string) error { return s.v.setKafka(text, kafkaUnit(s.Kafka), true) }

// Settings returns every setting of `skiff serve` in the order --help lists them,
// bound to c's fields: Set writes them, and DescribeConfigs reports c's values.
func (c *Config) Settings() []Setting {
	g, tx := &c.Groups, &c.Txn
	return []Setting{
		{Name: "data-dir", Doc: "folder holding this node's data (etcd member, Pebble, topic segments)",
			v: text(&c.DataDir, "./skiff-data")},
		{Name: "listen", Doc: "Kafka API listen address HOST:PORT",
			v: text(&c.Listen, ":"+DefaultKafkaPort)},
		{Name: "advertise", Doc: "Kafka address clients are told to dial HOST:PORT (default: listen, with a wildcard host replaced by this machine's host name)",
			v: text(&c.Advertise, "")},
		{Name: "listeners", Kafka: "listeners", KafkaType: cluster.ConfigTypeList, Unlisted: true,
			Doc: "Kafka API addresses to listen on, NAME://HOST:PORT comma-separated; NAME is PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL or a name of listener-security-protocol-map (default: PLAINTEXT://<listen>)",
			v:   list(&c.Listeners)},
		{Name: "advertised-listeners", Kafka: "advertised.listeners", KafkaType: cluster.ConfigTypeList, Unlisted: true,
			Doc: "addresses clients are told to dial, NAME://HOST:PORT per listener, comma-separated (default: each listener's address, a wildcard host replaced by this machine's host name)",
			v:   list(&c.AdvertisedListeners)},
		{Name: "listener-security-protocol-map", Kafka: "listener.security.protocol.map", KafkaType: cluster.ConfigTypeList, Unlisted: true,
			Doc: "security protocols of named listeners, NAME:PROTOCOL comma-separated, such as INTERNAL:SSL,EXTERNAL:SASL_SSL",
			v:   list(&c.ListenerProtocolMap)},
		{Name: "inter-broker-listener", Kafka: "inter.broker.listener.name", KafkaType: cluster.ConfigTypeString, Unlisted: true,
			Doc: "the listener followers fetch from their leaders on (default: the first listener; docs/security.md)",
			v:   text(&c.InterBrokerListener, "")},
		{Name: "tls-cert", Doc: "PEM file of this node's certificate chain, for the listeners with TLS (SSL, SASL_SSL) and for followers dialling them; read again when it changes",
			v: text(&c.TLSCert, "")},
		{Name: "tls-key", Doc: "PEM file of the private key of tls-cert; read again when it changes",
			v: text(&c.TLSKey, "")},
		{Name: "tls-client-ca", Doc: "PEM file of the CA certificates that sign client certificates: SSL listeners then require one (mutual TLS), SASL_SSL listeners check one if given; followers verify leaders with it too (default: no client certificates; followers trust the system's CAs)",
			v: text(&c.TLSClientCA, "")},
		{Name: "tls-principal-mapping-rules", Kafka: "ssl.principal.mapping.rules", KafkaType: cluster.ConfigTypeString, Unlisted: true,
			Doc: "how a client certificate's subject becomes the principal on SSL listeners: DEFAULT (the whole DN) or RULE:pattern/replacement/[LU] rules, comma-separated",
			v:   text(&c.TLSPrincipalMappingRules, auth.DefaultMappingRules)},
		{Name: "sasl-mechanisms", Kafka: "sasl.enabled.mechanisms", KafkaType: cluster.ConfigTypeList,
			Doc: "SASL mechanisms the SASL listeners offer, comma-separated: SCRAM-SHA-512, SCRAM-SHA-256, PLAIN (PLAIN sends the password itself: offer it on SASL_SSL only)",
			v:   list(&c.SASLMechanisms, kafkaapi.DefaultSASLMechanisms...)},
		{Name: "connections-max-reauth", Kafka: "connections.max.reauth.ms", KafkaType: cluster.ConfigTypeLong,
			Doc: "a SASL session lasts this long; then the client re-authenticates on its connection (KIP-368) or the connection is closed at its next request; 0: sessions do not end",
			v:   zeroIsNone(duration(&c.ReauthMax, 0))},
		{Name: "connection-failed-authentication-delay", Kafka: "connection.failed.authentication.delay.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "delay before a failed SASL authentication is answered, doubling with each further failure from the same address within a minute, up to 1s (a good login is never delayed)",
			v:   duration(&c.AuthFailureDelay, auth.DefaultFailureDelay)},
		{Name: "inter-broker-sasl-mechanism", Kafka: "sasl.mechanism.inter.broker.protocol", KafkaType: cluster.ConfigTypeString, Unlisted: true,
			Doc: "SASL mechanism followers authenticate with when the inter-broker listener uses SASL (default: the first of sasl-mechanisms)",
			v:   text(&c.InterBrokerSASLMechanism, "")},
		{Name: "inter-broker-user", Doc: "SCRAM user followers authenticate as when the inter-broker listener uses SASL (docs/security.md)",
			v: text(&c.InterBrokerUser, "")},
		{Name: "inter-broker-password-file", Doc: "file holding the password of inter-broker-user (its first line)",
			v: text(&c.InterBrokerPasswordFile, "")},
		{Name: "authorizer", Doc: "acl: check every Kafka request against the cluster's ACLs, as Kafka's authorizer does (docs/security.md); none: every client may do everything",
			v: text(&c.Authorizer, AuthorizerNone)},
		{Name: "super-users", Kafka: "super.users", KafkaType: cluster.ConfigTypeString, Unlisted: true,
			Doc: "principals that may do everything whatever the ACLs say, separated by semicolons, such as User:admin;User:ANONYMOUS",
			v:   text(&c.SuperUsers, "")},
		{Name: "allow-everyone-if-no-acl-found", Kafka: "allow.everyone.if.no.acl.found", KafkaType: cluster.ConfigTypeBoolean, Unlisted: true,
			Doc: "with the ACL authorizer, allow every client an operation on a resource that no ACL names",
			v:   flag(&c.AllowEveryoneIfNoACL)},
		{Name: "etcd-client", Doc: "embedded etcd client listen address HOST:PORT (cluster-internal)",
			v: text(&c.EtcdClient, embedetcd.DefaultClientAddr)},
		{Name: "etcd-peer", Doc: "embedded etcd peer listen address HOST:PORT (cluster-internal)",
			v: text(&c.EtcdPeer, embedetcd.DefaultPeerAddr)},
		{Name: "etcd-tls", Doc: "serve the embedded etcd's client and peer ports with TLS (tls-cert, tls-key), requiring certificates signed by tls-client-ca from the other nodes; on every node, from the cluster's first start (docs/security.md)",
			v: flag(&c.EtcdTLS)},
		{Name: "http", Doc: "HTTP listen address for /metrics, /healthz, /readyz and the admin API (skiff cluster)",
			v: text(&c.HTTP, ":"+DefaultHTTPPort)},
		{Name: "http-tls", Doc: "serve the HTTP port with TLS (tls-cert, tls-key); a client certificate signed by tls-client-ca then authenticates admin requests",
			v: flag(&c.HTTPTLS)},
		{Name: "http-token-file", Doc: "file whose first line is the bearer token that admin requests (skiff cluster) must carry; read at each request",
			v: text(&c.HTTPTokenFile, "")},
		{Name: "http-auth", Doc: "which HTTP paths need a bearer token or a client certificate once the node has either (http-token-file, or http-tls with tls-client-ca): admin (the admin API and the profiler; /metrics, /healthz and /readyz stay open) or all",
			v: text(&c.HTTPAuth, HTTPAuthAdmin)},
		{Name: "pprof", Doc: "also serve Go's profiler under /debug/pprof/ on the HTTP address (CPU, heap and goroutine profiles; docs/performance.md)",
			v: flag(&c.Pprof)},
		{Name: "console", Doc: "serve the web console at / on the HTTP address: the cluster, its topics, groups and messages, read-only (docs/console.md)",
			v: onUnless(&c.DisableConsole)},
		{Name: "console-admins", Doc: "SCRAM users who may create topics, change configs, reset offsets, delete groups and remove nodes in the web console after logging in, comma-separated (default: none, the console is read-only)",
			v: list(&c.ConsoleAdmins)},
		{Name: "node-name", Doc: "name of this node's etcd member (default: skiff-<node id>)",
			v: text(&c.NodeName, "")},
		{Name: "bootstrap", Doc: "start a new cluster (also what an empty data directory without --join does)",
			v: flag(&c.Bootstrap)},
		{Name: "join", Doc: "join the cluster of running nodes at HOST:PORT[,HOST:PORT] (their etcd-client addresses; with join-token, their HTTP addresses) when the data directory is empty",
			v: list(&c.Join)},
		{Name: "join-timeout", Doc: "give up joining when no running node answers within this time",
			v: duration(&c.JoinTimeout, time.Minute)},
		{Name: "secure", Doc: "form a secure cluster (with bootstrap, or an empty data directory): a cluster CA in <data>/secure, TLS on the Kafka (SASL_SSL with SCRAM), etcd and HTTP ports, the ACL authorizer with a first super user admin whose password is written to <data>/initial-admin-password, and a join token printed for the next nodes (docs/security.md)",
			v: flag(&c.Secure)},
		{Name: "join-token", Doc: "join a cluster formed with --secure with this token (printed by its first node, or by skiff cluster join-token); join then names a running node's HTTP address HOST:PORT",
			v: text(&c.JoinToken, "")},
		{Name: "join-token-ttl", Doc: "how long the join token printed by the first node of a secure cluster stays valid",
			v: duration(&c.JoinTokenTTL, time.Hour)},
		{Name: "force-new-cluster", Doc: "restart this node's data as a one-member cluster, dropping every other etcd member: only to recover when most nodes are lost for good (docs/operations.md); remove it after that one restart",
			v: flag(&c.ForceNewCluster)},
		{Name: "rack", Kafka: "broker.rack", KafkaType: cluster.ConfigTypeString, Unlisted: true,
			Doc: "rack of this broker: replicas of a partition go to different racks",
			v:   text(&c.Rack, "")},
		{Name: "etcd-advertise-client", Doc: "etcd client address other nodes dial HOST:PORT (default: etcd-client, a wildcard host replaced by the host name)",
			v: text(&c.EtcdAdvertiseClient, "")},
		{Name: "etcd-advertise-peer", Doc: "etcd peer address other nodes dial HOST:PORT (default: etcd-peer, a wildcard host replaced by the host name)",
			v: text(&c.EtcdAdvertisePeer, "")},
		{Name: "log-level", Doc: "log level: debug, info, warn or error",
			v: text(&c.LogLevel, "info")},
		{Name: "log-format", Doc: "log format: auto (JSON unless stderr is a terminal), json or text",
			v: text(&c.LogFormat, "auto")},
		{Name: "auto-create-topics", Kafka: "auto.create.topics.enable", KafkaType: cluster.ConfigTypeBoolean, Dynamic: true,
			Doc: "create unknown topics on Metadata requests that allow it",
			v:   onUnless(&c.DisableAutoCreateTopics)},
		{Name: "num-partitions", Kafka: "num.partitions", KafkaType: cluster.ConfigTypeInt, Dynamic: true,
			Doc: "partitions of topics created without a count",
			v:   integer(&c.DefaultPartitions, kafkaapi.DefaultPartitions)},
		{Name: "default-replication-factor", Kafka: "default.replication.factor", KafkaType: cluster.ConfigTypeShort, Dynamic: true,
			Doc: "replication factor of topics created without one",
			v:   integer(&c.DefaultReplicationFactor, kafkaapi.DefaultReplicationFactor)},
		{Name: "auto-leader-rebalance", Kafka: "auto.leader.rebalance.enable", KafkaType: cluster.ConfigTypeBoolean, Unlisted: true,
			Doc: "move partition leadership back to preferred replicas",
			v:   onUnless(&c.DisableAutoLeaderRebalance)},
		{Name: "leader-imbalance-check-interval", Kafka: "leader.imbalance.check.interval.seconds", KafkaType: cluster.ConfigTypeLong, Unlisted: true,
			Doc: "how often leadership moves back to preferred replicas",
			v:   duration(&c.LeaderImbalanceCheckInterval, cluster.DefaultRebalanceInterval)},
		{Name: "replica-lag-time-max", Kafka: "replica.lag.time.max.ms", KafkaType: cluster.ConfigTypeLong, Unlisted: true,
			Doc: "a follower that has not caught up with its leader for this long leaves the ISR",
			v:   duration(&c.ReplicaLagMax, replication.DefaultReplicaLagMax)},
		{Name: "replica-fetch-min-bytes", Kafka: "replica.fetch.min.bytes", KafkaType: cluster.ConfigTypeInt, Unlisted: true,
			Doc: "a follower's fetch waits at the leader until this many bytes are there (or replica-fetch-wait-max): more batches small produce requests into fewer fetches",
			v:   integer(&c.ReplicaFetchMinBytes, replication.DefaultReplicaFetchMinBytes)},
		{Name: "replica-fetch-wait-max", Kafka: "replica.fetch.wait.max.ms", KafkaType: cluster.ConfigTypeInt, Unlisted: true,
			Doc: "the longest a follower's fetch waits at the leader for replica-fetch-min-bytes; with acks=all, up to this much is added to a produce's latency",
			v:   duration(&c.ReplicaFetchWaitMax, replication.DefaultReplicaFetchWaitMax)},
		{Name: "session-timeout", Kafka: "broker.session.timeout.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "broker session lease TTL: a broker silent this long is gone for the cluster",
			v:   duration(&c.SessionTimeout, 6*time.Second)},
		{Name: "socket-request-max-bytes", Kafka: "socket.request.max.bytes", KafkaType: cluster.ConfigTypeInt,
			Doc: "largest Kafka request frame accepted; larger ones close the connection",
			v:   integer(&c.MaxRequestBytes, kafkaapi.DefaultMaxRequestBytes)},
		{Name: "connections-max-idle", Kafka: "connections.max.idle.ms", KafkaType: cluster.ConfigTypeLong,
			Doc: "close Kafka connections idle this long",
			v:   duration(&c.IdleTimeout, kafkaapi.DefaultIdleTimeout)},
		{Name: "socket-read-timeout", Doc: "close a Kafka connection that takes longer than this to send one request from its first byte (slow or stalled clients)",
			v: duration(&c.ReadTimeout, kafkaapi.DefaultReadTimeout)},
		{Name: "max-connections", Kafka: "max.connections", KafkaType: cluster.ConfigTypeInt, Dynamic: true,
			Doc: "most Kafka connections open at once; more are closed when accepted",
			v:   integer(&c.MaxConnections, kafkaapi.DefaultMaxConnections)},
		{Name: "max-connections-per-ip", Kafka: "max.connections.per.ip", KafkaType: cluster.ConfigTypeInt, Dynamic: true,
			Doc: "most Kafka connections open at once from one client address; more are closed when accepted; 0: no limit",
			v:   zeroIsNoLimit(integer(&c.MaxConnectionsPerIP, 0))},
		{Name: "queued-max-request-bytes", Kafka: "queued.max.request.bytes", KafkaType: cluster.ConfigTypeLong,
			Doc: "memory all Kafka requests being read and handled may take together; readers wait for it; at least socket-request-max-bytes",
			v:   integer(&c.QueuedMaxRequestBytes, kafkaapi.DefaultQueuedMaxRequestBytes)},
		{Name: "quota-window-num", Kafka: "quota.window.num", KafkaType: cluster.ConfigTypeInt,
			Doc: "how many samples client rates are measured over against their quotas (docs/quotas.md)",
			v:   integer(&c.QuotaWindowNum, quota.DefaultSamples)},
		{Name: "quota-window-size-seconds", Kafka: "quota.window.size.seconds", KafkaType: cluster.ConfigTypeInt,
			Doc: "the length of each sample of client rates, in seconds (docs/quotas.md)",
			v:   integer(&c.QuotaWindowSizeSeconds, int(quota.DefaultSize/time.Second))},
		{Name: "max-partitions-per-request", Doc: "most partitions (or topics, groups) one Kafka request may name; a request naming more closes its connection",
			v: integer(&c.MaxPartitionsPerRequest, kafkaapi.DefaultMaxPartitionsPerRequest)},
		{Name: "log-retention-check-interval", Kafka: "log.retention.check.interval.ms", KafkaType: cluster.ConfigTypeLong, Dynamic: true,
			Doc: "how often retention deletes old segments",
			v:   duration(&c.RetentionCheckInterval, replication.DefaultRetentionCheckInterval)},
		{Name: "log-cleaner-threads", Kafka: "log.cleaner.threads", KafkaType: cluster.ConfigTypeInt, Dynamic: true,
			Doc: "how many logs of compacted topics (cleanup.policy=compact) the log cleaner compacts at once (docs/compaction.md)",
			v:   integer(&c.CleanerThreads, compaction.DefaultThreads)},
		{Name: "log-cleaner-dedupe-buffer-size", Kafka: "log.cleaner.dedupe.buffer.size", KafkaType: cluster.ConfigTypeLong, Dynamic: true,
			Doc: "bytes of memory for the log cleaner's key maps, all threads together (16 bytes a key); a log with more keys to compact is compacted in several passes",
			v:   integer(&c.CleanerDedupeBufferSize, compaction.DefaultDedupeBufferSize)},
		{Name: "log-cleaner-io-max-bytes-per-second", Kafka: "log.cleaner.io.max.bytes.per.second", KafkaType: cluster.ConfigTypeDouble, Dynamic: true,
			Doc: "bytes the log cleaner reads and writes per second, all threads together; 0: no limit",
			v:   zeroIsUnlimitedRate(integer(&c.CleanerIOBytesPerSecond, 0))},
		{Name: "follower-replication-throttled-rate", Kafka: "follower.replication.throttled.rate", KafkaType: cluster.ConfigTypeLong, Dynamic: true,
			Doc: "bytes per second that out-of-sync replicas listed in a topic's follower.replication.throttled.replicas fetch together on this node (a reassignment's new replicas); 0: no limit",
			v:   zeroIsMaxLong(integer(&c.FollowerThrottledRate, 0))},
		{Name: "leader-replication-throttled-rate", Kafka: "leader.replication.throttled.rate", KafkaType: cluster.ConfigTypeLong, Dynamic: true,
			Doc: "bytes per second that this node's replicas listed in a topic's leader.replication.throttled.replicas send together to out-of-sync followers (a reassignment's new replicas); 0: no limit",
			v:   zeroIsMaxLong(integer(&c.LeaderThrottledRate, 0))},
		{Name: "log-cleaner-backoff", Kafka: "log.cleaner.backoff.ms", KafkaType: cluster.ConfigTypeLong, Dynamic: true,
			Doc: "how long an idle log cleaner thread waits before it looks for logs to compact again",
			v:   duration(&c.CleanerBackoff, compaction.DefaultBackoff)},
		{Name: "flush-policy", Kafka: "flush.policy", KafkaType: cluster.ConfigTypeString, Unlisted: true, Dynamic: true,
			Doc: "default flush policy of topics: replicated (acknowledged in the page cache of every in-sync replica), always (fdatasync before acknowledging) or interval (fdatasync every flush-interval); empty: always for topics with one replica, replicated for more (docs/durability.md)",
			v:   text(&c.FlushPolicy, "")},
		{Name: "flush-interval", Kafka: "log.flush.interval.ms", KafkaType: cluster.ConfigTypeLong, Unlisted: true, Dynamic: true,
			Doc: "default flush.ms of topics: how often flush.policy=interval fdatasyncs",
			v:   duration(&c.FlushInterval, defaultFlushInterval)},
		{Name: "segment-file-cache", Doc: "most idle sealed segment files kept open, all partitions together: others are opened when read (each partition's active segment is always open; docs/scaling.md); 0: an eighth of the open-file limit",
			v: integer(&c.SegmentFileCache, 0)},
		{Name: "shutdown-timeout", Doc: "how long a stop waits for in-flight requests before closing connections",
			v: duration(&c.ShutdownTimeout, 30*time.Second)},
		{Name: "group-min-session-timeout", Kafka: "group.min.session.timeout.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "shortest session timeout a consumer group member may ask for",
			v:   duration(&g.MinSessionTimeout, groups.DefaultMinSessionTimeout)},
		{Name: "group-max-session-timeout", Kafka: "group.max.session.timeout.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "longest session timeout a consumer group member may ask for",
			v:   duration(&g.MaxSessionTimeout, groups.DefaultMaxSessionTimeout)},
		{Name: "group-initial-rebalance-delay", Kafka: "group.initial.rebalance.delay.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "how long the first rebalance of a new consumer group waits for more members to join; 0: none",
			v:   zeroIsNone(duration(&g.InitialRebalanceDelay, groups.DefaultInitialRebalanceDelay))},
		{Name: "group-max-size", Kafka: "group.max.size", KafkaType: cluster.ConfigTypeInt,
			Doc: "most members (and members being admitted) of one consumer group",
			v:   integer(&g.MaxSize, groups.DefaultMaxGroupSize)},
		{Name: "group-consumer-session-timeout", Kafka: "group.consumer.session.timeout.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "a KIP-848 consumer group member silent this long is removed and its partitions reassigned",
			v:   duration(&g.ConsumerSessionTimeout, groups.DefaultConsumerSessionTimeout)},
		{Name: "group-consumer-heartbeat-interval", Kafka: "group.consumer.heartbeat.interval.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "how often KIP-848 consumer group members heartbeat",
			v:   duration(&g.ConsumerHeartbeatInterval, groups.DefaultConsumerHeartbeatInterval)},
		{Name: "group-consumer-min-session-timeout", Kafka: "group.consumer.min.session.timeout.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "shortest consumer.session.timeout.ms a KIP-848 consumer group may set (GROUP config)",
			v:   duration(&g.ConsumerMinSessionTimeout, groups.DefaultConsumerMinSessionTimeout)},
		{Name: "group-consumer-max-session-timeout", Kafka: "group.consumer.max.session.timeout.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "longest consumer.session.timeout.ms a KIP-848 consumer group may set (GROUP config)",
			v:   duration(&g.ConsumerMaxSessionTimeout, groups.DefaultConsumerMaxSessionTimeout)},
		{Name: "group-consumer-min-heartbeat-interval", Kafka: "group.consumer.min.heartbeat.interval.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "shortest consumer.heartbeat.interval.ms a KIP-848 consumer group may set (GROUP config)",
			v:   duration(&g.ConsumerMinHeartbeatInterval, groups.DefaultConsumerMinHeartbeatInterval)},
		{Name: "group-consumer-max-heartbeat-interval", Kafka: "group.consumer.max.heartbeat.interval.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "longest consumer.heartbeat.interval.ms a KIP-848 consumer group may set (GROUP config)",
			v:   duration(&g.ConsumerMaxHeartbeatInterval, groups.DefaultConsumerMaxHeartbeatInterval)},
		{Name: "group-consumer-assignors", Kafka: "group.consumer.assignors", KafkaType: cluster.ConfigTypeList,
			Doc: "server-side assignors of KIP-848 consumer groups (uniform, range), the first the default",
			v:   list(&g.ConsumerAssignors, groups.DefaultConsumerAssignors...)},
		{Name: "group-consumer-migration-policy", Kafka: "group.consumer.migration.policy", KafkaType: cluster.ConfigTypeString,
			Doc: "whether classic groups with members turn into KIP-848 consumer groups and back: bidirectional, upgrade, downgrade or disabled",
			v:   text(&g.ConsumerMigrationPolicy, groups.DefaultConsumerMigrationPolicy)},
		{Name: "offsets-retention", Kafka: "offsets.retention.minutes", KafkaType: cluster.ConfigTypeInt, Dynamic: true,
			Doc: "delete a consumer group's committed offsets once the group has been empty this long",
			v:   duration(&g.OffsetsRetention, groups.DefaultOffsetsRetention)},
		{Name: "offsets-retention-check-interval", Kafka: "offsets.retention.check.interval.ms", KafkaType: cluster.ConfigTypeLong, Dynamic: true,
			Doc: "how often expired committed offsets are deleted",
			v:   duration(&g.OffsetsRetentionCheckInterval, groups.DefaultRetentionCheckInterval)},
		{Name: "group-share-record-lock-duration", Kafka: "group.share.record.lock.duration.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "how long a share group member holds a record it acquired before the record is available again (a group's share.record.lock.duration.ms overrides it)",
			v:   duration(&g.ShareRecordLockDuration, sharegroup.DefaultRecordLockDuration)},
		{Name: "group-share-delivery-count-limit", Kafka: "group.share.delivery.count.limit", KafkaType: cluster.ConfigTypeInt,
			Doc: "deliveries of a share group record before it is archived (a group's share.delivery.count.limit overrides it)",
			v:   integer(&g.ShareDeliveryCountLimit, sharegroup.DefaultDeliveryCountLimit)},
		{Name: "group-share-partition-max-record-locks", Kafka: "group.share.partition.max.record.locks", KafkaType: cluster.ConfigTypeInt,
			Doc: "most in-flight records of one share-partition; more are acquired once the start offset moves",
			v:   integer(&g.ShareMaxRecordLocks, sharegroup.DefaultMaxRecordLocks)},
		{Name: "group-share-session-timeout", Kafka: "group.share.session.timeout.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "a share group member silent this long is removed and its acquired records released (a group's share.session.timeout.ms overrides it)",
			v:   duration(&g.ShareSessionTimeout, sharegroup.DefaultSessionTimeout)},
		{Name: "group-share-heartbeat-interval", Kafka: "group.share.heartbeat.interval.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "how often share group members heartbeat (a group's share.heartbeat.interval.ms overrides it)",
			v:   duration(&g.ShareHeartbeatInterval, sharegroup.DefaultHeartbeatInterval)},
		{Name: "group-share-min-session-timeout", Kafka: "group.share.min.session.timeout.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "shortest share.session.timeout.ms a share group may set (GROUP config)",
			v:   duration(&g.ShareMinSessionTimeout, sharegroup.DefaultMinSessionTimeout)},
		{Name: "group-share-max-session-timeout", Kafka: "group.share.max.session.timeout.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "longest share.session.timeout.ms a share group may set (GROUP config)",
			v:   duration(&g.ShareMaxSessionTimeout, sharegroup.DefaultMaxSessionTimeout)},
		{Name: "group-share-min-heartbeat-interval", Kafka: "group.share.min.heartbeat.interval.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "shortest share.heartbeat.interval.ms a share group may set (GROUP config)",
			v:   duration(&g.ShareMinHeartbeatInterval, sharegroup.DefaultMinHeartbeatInterval)},
		{Name: "group-share-max-heartbeat-interval", Kafka: "group.share.max.heartbeat.interval.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "longest share.heartbeat.interval.ms a share group may set (GROUP config)",
			v:   duration(&g.ShareMaxHeartbeatInterval, sharegroup.DefaultMaxHeartbeatInterval)},
		{Name: "offsets-topic-num-partitions", Kafka: "offsets.topic.num.partitions", KafkaType: cluster.ConfigTypeInt,
			Doc: "partitions of the internal topic __consumer_offsets, fixed when it is created",
			v:   integer(&g.OffsetsTopicPartitions, kafkaapi.DefaultOffsetsTopicPartitions)},
		{Name: "offsets-topic-replication-factor", Kafka: "offsets.topic.replication.factor", KafkaType: cluster.ConfigTypeShort,
			Doc: "replication factor of __consumer_offsets when it is created, capped at the live brokers",
			v:   integer(&g.OffsetsTopicReplicationFactor, kafkaapi.DefaultOffsetsTopicReplicationFactor)},
		{Name: "transaction-max-timeout", Kafka: "transaction.max.timeout.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "longest transaction timeout a transactional producer may ask for",
			v:   duration(&tx.MaxTimeout, txn.DefaultMaxTimeout)},
		{Name: "transaction-abort-check-interval", Kafka: "transaction.abort.timed.out.transaction.cleanup.interval.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "how often transactions open longer than their timeout are looked for and aborted",
			v:   duration(&tx.AbortCheckInterval, txn.DefaultAbortCheckInterval)},
		{Name: "transactional-id-expiration", Kafka: "transactional.id.expiration.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "forget a transactional id with no transaction open and no request for this long",
			v:   duration(&tx.IDExpiration, txn.DefaultIDExpiration)},
		{Name: "producer-id-expiration", Kafka: "producer.id.expiration.ms", KafkaType: cluster.ConfigTypeInt,
			Doc: "forget, on each partition, a producer that appended nothing for this long and has no transaction open there",
			v:   duration(&tx.ProducerIDExpiration, replication.DefaultProducerIDExpiration)},
		{Name: "transaction-version",
			Doc: "transaction version served to clients, 1 or 2 (KIP-890 part 2: Produce v12, EndTxn v5, no AddPartitionsToTxn); the same on every node, turned on by a rolling restart (docs/operations.md)",
			v:   between(integer(&tx.Version, txn.DefaultVersion), 1, 2)},
		{Name: "transaction-state-log-num-partitions", Kafka: "transaction.state.log.num.partitions", KafkaType: cluster.ConfigTypeInt,
			Doc: "partitions of the internal topic __transaction_state, fixed when it is created",
			v:   integer(&tx.TopicPartitions, txn.DefaultTopicPartitions)},
		{Name: "transaction-state-log-replication-factor", Kafka: "transaction.state.log.replication.factor", KafkaType: cluster.ConfigTypeShort,
			Doc: "replication factor of __transaction_state when it is created, capped at the live brokers",
			v:   integer(&tx.TopicReplicationFactor, txn.DefaultTopicReplication)},
	}
}

// defaultFlushInterval is the broker's default of flush.ms: the built-in one.
const defaultFlushInterval = cluster.DefaultFlushMs * time.Millisecond

// value is a setting's typed default and the field it is bound to.
type value interface {
	kind() Kind
	defaultText() string
	check(text string) error
	set(text string) error
	// fill stores the default where the field is unset (zero, or not positive).
	fill()
	isDefault() bool
	// kafka is the field's value as DescribeConfigs reports the Kafka config name.
	kafka(name string) string
	// setKafka parses a value in Kafka's form, in unit for durations, and stores it
	// when store is set.
	setKafka(text string, unit time.Duration, store bool) error
}

// binding is a value of Go type T.
type binding[T any] struct {
	k       Kind
	p       *T
	def     T
	decode  func(string) (T, error)
	format  func(T) string                // as written in a flag or the YAML file
	toKafka func(T, time.Duration) string // given the unit of the Kafka name
	// fromKafka parses Kafka's form, given the unit of the Kafka name; nil: as
	// decode, refusing values below 1 for numbers.
	fromKafka func(string, time.Duration) (T, error)
	unset     func(T) bool // nil: the zero value is the default
}

func (b binding[T]) kind() Kind          { return b.k }
func (b binding[T]) defaultText() string { return b.format(b.def) }
func (b binding[T]) isDefault() bool     { return b.format(*b.p) == b.format(b.def) }
func (b binding[T]) kafka(name string) string {
	return b.toKafka(*b.p, kafkaUnit(name))
}

func (b binding[T]) check(text string) error { _, err := b.decode(text); return err }

func (b binding[T]) set(text string) error {
	v, err := b.decode(text)
	if err == nil {
		*b.p = v
	}
	return err
}

func (b binding[T]) setKafka(text string, unit time.Duration, store bool) error {
	v, err := b.fromKafka(text, unit)
	if err == nil && store {
		*b.p = v
	}
	return err
}

func (b binding[T]) fill() {
	if b.unset != nil && b.unset(*b.p) {
		*b.p = b.def
	}
}

// kafkaUnit is the unit of a Kafka duration config, by Kafka's naming rule.
func kafkaUnit(name string) time.Duration {
	switch {
	case strings.HasSuffix(name, ".seconds"):
		return time.Second
	case strings.HasSuffix(name, ".minutes"):
		return time.Minute
	}
	return time.Millisecond
}

func text(p *string, def string) binding[string] {
	return binding[string]{k: KindString, p: p, def: def,
		decode:    func(s string) (string, error) { return s, nil },
		fromKafka: func(s string, _ time.Duration) (string, error) { return s, nil },
		format:    func(s string) string { return s },
		toKafka:   func(s string, _ time.Duration) string { return s },
		unset:     func(s string) bool { return s == "" },
	}
}

// list is a comma-separated list; empty items are dropped. An empty list takes
// the default, if there is one.
func list(p *[]string, def ...string) binding[[]string] {
	b := binding[[]string]{k: KindString, p: p, def: def,
		decode:    func(s string) ([]string, error) { return splitList(s), nil },
		fromKafka: func(s string, _ time.Duration) ([]string, error) { return splitList(s), nil },
		format:    func(v []string) string { return strings.Join(v, ",") },
		toKafka:   func(v []string, _ time.Duration) string { return strings.Join(v, ",") },
	}
	if len(def) > 0 {
		b.unset = func(v []string) bool { return len(v) == 0 }
	}
	return b
}

// splitList splits a comma-separated setting, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// flag is a setting that is off by default.
func flag(p *bool) binding[bool] { return boolean(p, false) }

// onUnless is a setting that is on by default, bound to a field that turns it off
// (so that the zero Config has it on).
func onUnless(off *bool) binding[bool] { return boolean(off, true) }

func boolean(p *bool, negated bool) binding[bool] {
	format := func(v bool) string { return strconv.FormatBool(v != negated) }
	return binding[bool]{k: KindBool, p: p,
		decode: func(s string) (bool, error) {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return false, fmt.Errorf("%q is not true or false", s)
			}
			return b != negated, nil
		},
		fromKafka: func(s string, _ time.Duration) (bool, error) {
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "true":
				return !negated, nil
			case "false":
				return negated, nil
			}
			return false, errors.New("Expected value to be either true or false")
		},
		format:  format,
		toKafka: func(v bool, _ time.Duration) string { return format(v) },
	}
}

func integer[T int | int16 | int32 | int64](p *T, def T) binding[T] {
	format := func(v T) string { return strconv.FormatInt(int64(v), 10) }
	b := binding[T]{k: KindInt, p: p, def: def,
		decode: func(s string) (T, error) {
			n, err := strconv.ParseInt(s, 10, 64)
			if err == nil && int64(T(n)) != n {
				err = strconv.ErrRange
			}
			if err != nil {
				return 0, fmt.Errorf("%q is not a whole number", s)
			}
			return T(n), nil
		},
		format:  format,
		toKafka: func(v T, _ time.Duration) string { return format(v) },
	}
	b.fromKafka = func(s string, _ time.Duration) (T, error) { return atLeast(b.decode, s, 1) }
	if def > 0 {
		b.unset = func(v T) bool { return v <= 0 }
	}
	return b
}

// zeroIsNoLimit reports the setting's 0, no limit, as Kafka does: the largest int32.
func zeroIsNoLimit(b binding[int]) binding[int] {
	kafka, decode := b.toKafka, b.decode
	b.toKafka = func(v int, unit time.Duration) string {
		if v == 0 {
			return strconv.Itoa(math.MaxInt32)
		}
		return kafka(v, unit)
	}
	b.fromKafka = func(s string, _ time.Duration) (int, error) { return atLeast(decode, s, 0) }
	return b
}

// zeroIsUnlimitedRate reports the setting's 0, no limit, as Kafka does for a
// rate: the largest double.
func zeroIsUnlimitedRate(b binding[int64]) binding[int64] {
	kafka := b.toKafka
	b.toKafka = func(v int64, unit time.Duration) string {
		if v == 0 {
			return strconv.FormatFloat(math.MaxFloat64, 'E', -1, 64)
		}
		return kafka(v, unit)
	}
	return b
}

// zeroIsMaxLong reports the setting's 0, no limit, as Kafka's default of a
// long rate: Long.MAX_VALUE, which it also reads back as no limit.
func zeroIsMaxLong(b binding[int64]) binding[int64] {
	kafka, decode := b.toKafka, b.decode
	b.toKafka = func(v int64, unit time.Duration) string {
		if v == 0 {
			return strconv.FormatInt(math.MaxInt64, 10)
		}
		return kafka(v, unit)
	}
	b.fromKafka = func(s string, _ time.Duration) (int64, error) {
		v, err := atLeast(decode, s, 0)
		if v == math.MaxInt64 {
			v = 0
		}
		return v, err
	}
	return b
}

func duration(p *time.Duration, def time.Duration) binding[time.Duration] {
	return binding[time.Duration]{k: KindDuration, p: p, def: def,
		decode: func(s string) (time.Duration, error) {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				return 0, fmt.Errorf("%q is not a duration such as 30s or 10m", s)
			}
			return d, nil
		},
		format:  shortDuration,
		toKafka: func(d, unit time.Duration) string { return strconv.FormatInt(int64(d/unit), 10) },
		fromKafka: func(s string, unit time.Duration) (time.Duration, error) {
			n, err := atLeast(kafkaLong, s, 1)
			return time.Duration(n) * unit, err
		},
		unset: func(d time.Duration) bool { return d <= 0 },
	}
}

// kafkaLong parses a whole number as Kafka does.
func kafkaLong(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, errors.New("Not a number of type LONG")
	}
	return n, nil
}

// between refuses numbers outside lo..hi.
func between[T int | int16 | int32 | int64](b binding[T], lo, hi T) binding[T] {
	decode := b.decode
	b.decode = func(s string) (T, error) {
		n, err := decode(s)
		if err == nil && (n < lo || n > hi) {
			err = fmt.Errorf("%s is not between %d and %d", s, lo, hi)
		}
		return n, err
	}
	return b
}

// atLeast parses s with decode and refuses numbers below lo, with Kafka's reason.
func atLeast[T int | int16 | int32 | int64](decode func(string) (T, error), s string, lo T) (T, error) {
	n, err := decode(strings.TrimSpace(s))
	if err == nil && n < lo {
		err = fmt.Errorf("Value must be at least %d", lo)
	}
	return n, err
}

// zeroIsNone makes the setting's 0 mean none. The field holds none as a negative
// duration, since its zero value means the default.
func zeroIsNone(b binding[time.Duration]) binding[time.Duration] {
	decode, format, kafka := b.decode, b.format, b.toKafka
	b.decode = func(s string) (time.Duration, error) {
		d, err := decode(s)
		if err == nil && d == 0 {
			d = -1
		}
		return d, err
	}
	b.format = func(d time.Duration) string { return format(max(d, 0)) }
	b.toKafka = func(d, unit time.Duration) string { return kafka(max(d, 0), unit) }
	b.fromKafka = func(s string, unit time.Duration) (time.Duration, error) {
		n, err := atLeast(kafkaLong, s, 0)
		if err == nil && n == 0 {
			return -1, nil
		}
		return time.Duration(n) * unit, err
	}
	b.unset = func(d time.Duration) bool { return d == 0 }
	return b
}

// shortDuration writes d as a setting: 168h, 5m or 30s rather than 168h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
