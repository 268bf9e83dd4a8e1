// Package cluster keeps Skiff's cluster metadata (the cluster id, live
// brokers, topics, partition state, producer-id blocks) in etcd under
// /skiff/, and serves it from a watch-fed in-memory cache.
//
// The key layout, value encodings and invariants are specified in
// docs/format/etcd-keys.md; keys.go is its code. Every write is one etcd
// transaction guarded by a compare, so no write can half-apply or overwrite
// a change it did not see:
//
//   - Store writes: EnsureCluster, RegisterBroker (a Session: an etcd lease
//     kept alive), CreateTopic, CreatePartitions, DeleteTopic, AlterTopicConfigs,
//     AlterBrokerConfigs (dynamic broker configs, broker_configs.go),
//     AlterPartition, AllocateProducerID, RecordNode and ForgetNode (each
//     node's etcd member, for status and remove-node), AlterScramCredentials
//     (users.go), CreateACLs and DeleteACLs (acls.go). Writes return the etcd
//     revision at which they took effect, so a caller can wait until its cache
//     has seen them (Cache.WaitRevision: read-your-writes).
//   - Cache reads: an immutable Snapshot behind an atomic pointer, replaced on
//     every change; reads take no lock. It indexes the ACLs for the authorizer
//     (Snapshot.ACLs). Subscriptions turn snapshots into
//     created/deleted/changed events without ever blocking the cache.
//   - Topic configs: the table of Kafka's topic configs, their types, defaults
//     and validation with Kafka's messages (configs_table.go, configs_rules.go),
//     and how a topic's value resolves through the broker layers (configs.go).
//   - Replica placement for new topics and partitions: PlaceReplicas
//     (rack-aware, leaders spread with the brokers' existing load).
//   - Rules that the node applies with its own state: ProposeISR (the ISR a
//     leader may write: a replica is admitted under its current registration,
//     KIP-903), Snapshot.Overview, ReplicasOn and Stranded (skiff cluster status
//     and remove-node).
//
// CreateTopic makes the first replica of each partition's assignment its
// leader; after that, leadership moves only through the elected controller
// (controller.go: failover, rebalance, draining) and ISRs through the
// leaders' AlterPartition, every write a compare-and-swap.
//
// Lock order: Store.pid.mu is the only Store lock and is never held while
// taking another. Cache has no lock on its read path; its watch goroutine
// is the only writer of the snapshot pointer.
package cluster
