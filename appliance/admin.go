package appliance

// The admin HTTP API on the node's HTTP port, used by `skiff cluster`:
//
//	GET  /v1/cluster                  ClusterStatus as JSON (200 even without quorum: it
//	                                  then says so and shows this node's view)
//	POST /v1/cluster/remove-node?id=N RemoveResult as JSON; errors are {"error": "..."}
//	                                  with 400 (bad id), 404 (no such node), 409 (refused:
//	                                  replicas left, last voter, quorum at risk, or the
//	                                  node answering), 503 (no quorum) or 500.
//	     ...&drain=true               a node holding replicas is marked for draining
//	                                  instead (the controller moves its replicas away,
//	                                  cluster/reassign.go): 202 and a RemoveResult with
//	                                  Draining set; ask again until it answers 200.
//
// This file is the HTTP side only. The decisions are made elsewhere: what may be
// removed in removal.go, the etcd quorum rules in embedetcd (CheckRemove, Statuses),
// the counts in cluster (Snapshot.Overview, ReplicasOn, Stranded).

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/cluster"
	"skiff/embedetcd"
)

// ClusterStatus is the answer of GET /v1/cluster.
type ClusterStatus struct {
	ClusterID string `json:"cluster_id"`
	// NodeID is the node that answered.
	NodeID int32 `json:"node_id"`
	// ControllerID is the elected controller's broker id, -1 for none.
	ControllerID int32 `json:"controller_id"`
	// Quorum: this node's etcd member served a linearizable read. Without quorum the
	// rest is this node's last view, which may be stale; QuorumError says why.
	Quorum      bool   `json:"quorum"`
	QuorumError string `json:"quorum_error,omitempty"`
	// Members are the etcd members (MembersError: why the list could not be read).
	Members      []MemberStatus `json:"members"`
	MembersError string         `json:"members_error,omitempty"`
	// Brokers are the live brokers and any broker that holds replicas without being
	// live, sorted by id.
	Brokers    []BrokerStatus `json:"brokers"`
	Topics     int            `json:"topics"`
	Partitions int            `json:"partitions"`
	// OfflinePartitions have no leader; UnderReplicatedPartitions have fewer in-sync
	// replicas than replicas.
	OfflinePartitions         []PartitionStatus `json:"offline_partitions"`
	UnderReplicatedPartitions []PartitionStatus `json:"under_replicated_partitions"`
}

// MemberStatus is one etcd member.
type MemberStatus struct {
	// ID is the etcd member id in hex, as etcdctl prints it.
	ID   string `json:"id"`
	Name string `json:"name"`
	// NodeID is the node running the member (from /skiff/nodes/), -1 if unknown.
	NodeID     int32    `json:"node_id"`
	PeerURLs   []string `json:"peer_urls"`
	ClientURLs []string `json:"client_urls"`
	// Learner: a member that joined and is not voting yet (or never started).
	Learner bool `json:"learner"`
	// Leader: the member is the etcd (raft) leader.
	Leader bool `json:"leader"`
	// Healthy: the member answered a status call within embedetcd.StatusTimeout,
	// knows a leader and reports no error. Error says why not.
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
}

// BrokerStatus is one broker with the partitions it holds: cluster.BrokerSummary
// with JSON names (the fields match, for a conversion).
type BrokerStatus struct {
	ID   int32  `json:"id"`
	Host string `json:"host,omitempty"`
	Port int32  `json:"port,omitempty"`
	Rack string `json:"rack,omitempty"`
	// Live: registered under a session now.
	Live bool `json:"live"`
	// Draining: the controller is moving the broker's replicas to other brokers
	// (remove-node with drain); new replicas are not placed on it.
	Draining bool `json:"draining,omitempty"`
	// Replicas is the number of partition replicas assigned to it; Leaders the number
	// of partitions it leads now.
	Replicas int `json:"replicas"`
	Leaders  int `json:"leaders"`
}

// PartitionStatus names one partition with its leadership state:
// cluster.PartitionSummary with JSON names.
type PartitionStatus struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
}

// RemoveResult is the answer of a successful POST /v1/cluster/remove-node: the node
// was removed (200), or, with drain, is being drained (202: Draining set, ReplicasLeft
// partitions still have a replica on it).
type RemoveResult struct {
	NodeID       int32  `json:"node_id"`
	MemberName   string `json:"member_name,omitempty"`
	MemberID     string `json:"member_id,omitempty"`
	Draining     bool   `json:"draining,omitempty"`
	ReplicasLeft int    `json:"replicas_left,omitempty"`
	Message      string `json:"message"`
}

// removeStatus is the HTTP status of each kind of failed removal.
var removeStatus = map[removeFailure]int{
	removeRefused:     http.StatusConflict,
	removeNoSuchNode:  http.StatusNotFound,
	removeUnavailable: http.StatusServiceUnavailable,
	removeFailed:      http.StatusInternalServerError,
}

// adminRoutes registers the admin API on mux.
func (n *Node) adminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/cluster", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, n.clusterStatus(r.Context()))
	})
	mux.HandleFunc("POST /v1/cluster/remove-node", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 32)
		if err != nil || id < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("id %q: want a node id, a whole number (skiff cluster status lists them)", r.URL.Query().Get("id"))})
			return
		}
		drain, err := strconv.ParseBool(cmp.Or(r.URL.Query().Get("drain"), "false"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("drain %q: want true or false", r.URL.Query().Get("drain"))})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		res, rerr := n.removeNode(ctx, int32(id), drain)
		if rerr != nil {
			body := map[string]any{"error": rerr.msg}
			if len(rerr.partitions) > 0 {
				body["partitions"] = rerr.partitions
			}
			writeJSON(w, removeStatus[rerr.kind], body)
			return
		}
		if res.Draining {
			writeJSON(w, http.StatusAccepted, res)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to do
}

// clusterStatus gathers the status. It answers within about HealthTimeout even
// without quorum: members are listed from this member's own view, each member's
// health is asked in parallel with a short timeout, and brokers and partitions come
// from the metadata cache.
func (n *Node) clusterStatus(ctx context.Context) ClusterStatus {
	st := ClusterStatus{NodeID: n.id, ControllerID: cluster.NoLeader, Members: []MemberStatus{}, Brokers: []BrokerStatus{},
		OfflinePartitions: []PartitionStatus{}, UnderReplicatedPartitions: []PartitionStatus{}}
	if !n.started() {
		st.QuorumError = "the node is starting"
		return st
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := n.member.Healthy(ctx); err != nil {
			st.QuorumError = err.Error()
			return
		}
		st.Quorum = true
	}()
	st.Members, st.MembersError = n.memberStatuses(ctx)
	wg.Wait()

	snap := n.cache.Snapshot()
	st.ClusterID, st.ControllerID = snap.ClusterID(), snap.Controller()
	ov := snap.Overview()
	st.Topics, st.Partitions = ov.Topics, ov.Partitions
	for _, b := range ov.Brokers {
		st.Brokers = append(st.Brokers, BrokerStatus(b))
	}
	st.OfflinePartitions, st.UnderReplicatedPartitions = partitionStatuses(ov.Offline), partitionStatuses(ov.UnderReplicated)
	return st
}

// partitionStatuses converts ps, with [] rather than null for empty lists.
func partitionStatuses(ps []cluster.PartitionSummary) []PartitionStatus {
	out := make([]PartitionStatus, len(ps))
	for i, p := range ps {
		out[i] = PartitionStatus(p)
		if out[i].ISR == nil {
			out[i].ISR = []int32{}
		}
	}
	return out
}

// memberStatuses lists the etcd members as this member knows them (serializable:
// it answers without quorum) with each one's answer to a status call, sorted by node.
func (n *Node) memberStatuses(ctx context.Context) ([]MemberStatus, string) {
	cli := n.member.Client()
	lctx, cancel := context.WithTimeout(ctx, embedetcd.HealthTimeout)
	defer cancel()
	list, err := cli.MemberList(lctx, clientv3.WithSerializable())
	if err != nil {
		return []MemberStatus{}, fmt.Sprintf("list etcd members: %v", err)
	}
	nodeOf := map[uint64]int32{}
	if nodes, err := n.store.Nodes(lctx, true); err == nil {
		for _, nm := range nodes {
			nodeOf[nm.MemberID] = nm.NodeID
		}
	}
	out := make([]MemberStatus, 0, len(list.Members))
	for _, h := range embedetcd.Statuses(ctx, cli, list.Members) {
		m := h.Member
		ms := MemberStatus{ID: strconv.FormatUint(m.ID, 16), Name: m.Name, NodeID: cluster.NoLeader,
			PeerURLs: nonNil(m.PeerURLs), ClientURLs: nonNil(m.ClientURLs), Learner: m.IsLearner,
			Leader: h.Leader, Healthy: h.Healthy, Error: h.Error}
		if id, ok := nodeOf[m.ID]; ok {
			ms.NodeID = id
		}
		out = append(out, ms)
	}
	slices.SortFunc(out, func(a, b MemberStatus) int {
		if a.NodeID != b.NodeID {
			return int(a.NodeID) - int(b.NodeID)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, ""
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
