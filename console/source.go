package console

import (
	"context"
	"net/http"
	"net/netip"

	"skiff/acl"
	"skiff/cluster"
)

// Source is what the console reads from its node. The appliance implements it
// over the node's own parts: the metadata cache, the partition manager, the group
// coordinator and the etcd member, the same paths the admin API reads.
type Source interface {
	// Started reports whether the node serves (the rest may be called only then).
	Started() bool
	// NodeID is this node's broker id.
	NodeID() int32
	// Snapshot is the metadata cache's current view.
	Snapshot() *cluster.Snapshot
	// Local describes this node: its replicas, counters, disk and etcd member.
	Local(ctx context.Context) Local
	// Groups lists the groups this node coordinates, with their committed offsets.
	Groups() []Group
	// Group describes one group this node coordinates (ok false: not here).
	Group(name string) (GroupMembers, bool)
	// Read returns the record batches of a partition replica of this node from
	// offset, at most maxBytes of them (at least one batch), never past its high
	// watermark.
	Read(topic string, partition int32, offset, maxBytes int64) (Batches, error)
	// OffsetForTimestamp is the first offset of a local replica whose timestamp is
	// at least ts (Unix ms); the high watermark when there is none.
	OffsetForTimestamp(topic string, partition int32, ts int64) (int64, error)
	// Members are the etcd members with their health, as GET /v1/cluster shows them.
	Members(ctx context.Context) []EtcdMember
	// BrokerDefaults are the broker-level topic config defaults, as
	// DescribeConfigs reports them.
	BrokerDefaults() cluster.BrokerDefaults
	// PeerKey is the cluster's console key: nodes send it with their requests to
	// each other's internal API, which refuses requests without it.
	PeerKey() []byte
}

// Local is what one node knows of itself; nodes send it to each other as JSON
// (GET /v1/console/node).
type Local struct {
	NodeID int32 `json:"node_id"`
	// Replicas are the node's partition replicas.
	Replicas []Replica `json:"replicas"`
	// BytesIn counts record bytes appended as leader; BytesOut record bytes sent to
	// fetchers (followers included). Both since the process started.
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
	// ISRShrinks and ISRExpands count the ISR changes this node wrote as leader.
	ISRShrinks int64 `json:"isr_shrinks"`
	ISRExpands int64 `json:"isr_expands"`
	// DiskFree and DiskTotal are of the data directory's file system; DataBytes
	// the size of its replicas.
	DiskFree  int64 `json:"disk_free"`
	DiskTotal int64 `json:"disk_total"`
	DataBytes int64 `json:"data_bytes"`
	// EtcdDBSize is the etcd member's database size, EtcdQuota its quota,
	// EtcdAlarms the cluster's active alarms.
	EtcdDBSize int64    `json:"etcd_db_size"`
	EtcdQuota  int64    `json:"etcd_quota"`
	EtcdAlarms []string `json:"etcd_alarms,omitempty"`
	// History holds the node's rate history (history.go).
	History *HistoryReport `json:"history,omitempty"`
	// Groups are the groups the node coordinates.
	Groups []Group `json:"groups,omitempty"`
	// Shares are the share-partitions of share groups the node leads.
	Shares []SharePartition `json:"shares,omitempty"`
}

// SharePartition is a share group's view of one partition, at the partition's
// leader: its start and end offsets (SPSO, SPEO), the records between them not
// done yet, and those a member holds now.
type SharePartition struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
	InFlight  int    `json:"in_flight"`
	Acquired  int    `json:"acquired"`
}

// Replica is one partition replica on a node.
type Replica struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Leader    bool   `json:"leader"`
	LogStart  int64  `json:"log_start"`
	HWM       int64  `json:"hwm"`
	LogEnd    int64  `json:"log_end"`
	Size      int64  `json:"size"`
	Unsynced  int64  `json:"unsynced"`
}

// Group is a group with its committed offsets.
type Group struct {
	Name string `json:"name"`
	// State is Kafka's: Empty, Stable, PreparingRebalance, CompletingRebalance, Dead.
	State string `json:"state"`
	// Type is classic, consumer (KIP-848's protocol) or share (KIP-932).
	Type string `json:"type"`
	// ProtocolType is "consumer" for consumers, "" for groups with offsets only.
	ProtocolType string      `json:"protocol_type"`
	Members      int         `json:"members"`
	Offsets      []Committed `json:"offsets,omitempty"`
}

// Committed is a group's committed offset of one partition.
type Committed struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// GroupMembers is a group's membership.
type GroupMembers struct {
	Group
	Protocol string        `json:"protocol"`
	List     []GroupMember `json:"list"`
}

// GroupMember is one member of a group with its assignment.
type GroupMember struct {
	ID         string       `json:"id"`
	InstanceID string       `json:"instance_id,omitempty"`
	ClientID   string       `json:"client_id"`
	ClientHost string       `json:"client_host"`
	Assigned   []Assignment `json:"assigned,omitempty"`
}

// Assignment is a topic's partitions assigned to a member.
type Assignment struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// Batches are raw record batches of a partition (RecordBatch v2, as stored).
type Batches struct {
	HWM      int64  `json:"hwm"`
	LogStart int64  `json:"log_start"`
	Data     []byte `json:"data"`
}

// EtcdMember is an etcd member.
type EtcdMember struct {
	Name    string `json:"name"`
	NodeID  int32  `json:"node_id"`
	Learner bool   `json:"learner"`
	Leader  bool   `json:"leader"`
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
}

// Admin is what the console's write actions do, and how it checks who may do
// them. The appliance implements it; without one the console is read-only.
type Admin interface {
	// AuthRequired: the cluster authenticates its clients (SASL or client
	// certificates on a Kafka listener) or authorizes them (ACLs), so every page
	// needs a logged-in user.
	AuthRequired() bool
	// Authenticate checks a SCRAM user's password; admin says whether the user
	// may use the write actions (each of which the ACLs may still refuse).
	Authenticate(ctx context.Context, user, password string) (ok, admin bool, err error)
	// HTTPAdmin: r carries the node's HTTP credentials (its bearer token or a
	// client certificate of the cluster's CA), which make it an admin; name says
	// which.
	HTTPAdmin(r *http.Request) (name string, ok bool)
	// Allowed says whether user, at addr, may do op on the resource (t, name) by
	// the cluster's ACLs; always true without the ACL authorizer.
	Allowed(user string, addr netip.Addr, op acl.Operation, t acl.ResourceType, name string) bool
	// CreateTopic creates a topic as CreateTopics does (-1: the broker defaults).
	CreateTopic(ctx context.Context, name string, partitions int32, rf int16) error
	// SetTopicConfig sets one topic-level config ("" removes the override).
	SetTopicConfig(ctx context.Context, topic, name, value string) error
	// CommitOffsets commits offsets for a group without members, as an admin
	// client does (generation -1), on the group's coordinator, this node.
	CommitOffsets(ctx context.Context, group string, offsets []Committed) error
	// DeleteGroup deletes a group without members and its offsets; the group's
	// coordinator must be this node.
	DeleteGroup(ctx context.Context, group string) error
	// RemoveNode removes a node (with drain: drains it first), as
	// POST /v1/cluster/remove-node does; the message says what happened.
	RemoveNode(ctx context.Context, id int32, drain bool) (string, error)
}
