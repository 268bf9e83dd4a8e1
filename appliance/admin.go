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

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/cluster"
	"skiff/embedetcd"
)

// MemberStatusTimeout bounds the status call to each etcd member in GET /v1/cluster.
const MemberStatusTimeout = time.Second

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
	// Healthy: the member answered a status call within MemberStatusTimeout, knows a
	// leader and reports no error. Error says why not.
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
}

// BrokerStatus is one broker with the partitions it holds.
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

// PartitionStatus names one partition with its leadership state.
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

// adminError is a refusal with its HTTP status.
type adminError struct {
	status int
	msg    string
	// partitions are the partitions that keep a node from being removed.
	partitions []string
}

func (e *adminError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) *adminError {
	return &adminError{status: status, msg: fmt.Sprintf(format, args...)}
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
		res, aerr := n.removeNode(ctx, int32(id), drain)
		if aerr != nil {
			body := map[string]any{"error": aerr.msg}
			if len(aerr.partitions) > 0 {
				body["partitions"] = aerr.partitions
			}
			writeJSON(w, aerr.status, body)
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

// started reports whether Start has finished (the admin API needs the cache).
func (n *Node) started() bool {
	select {
	case <-n.ready:
		return true
	default:
		return false
	}
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
	brokers := map[int32]*BrokerStatus{}
	for _, b := range snap.Brokers() {
		brokers[b.ID] = &BrokerStatus{ID: b.ID, Host: b.Host, Port: b.Port, Rack: b.Rack, Live: true, Draining: snap.Draining(b.ID)}
	}
	broker := func(id int32) *BrokerStatus {
		if brokers[id] == nil {
			brokers[id] = &BrokerStatus{ID: id, Draining: snap.Draining(id)}
		}
		return brokers[id]
	}
	for _, t := range snap.Topics() {
		st.Topics++
		for p, replicas := range t.Assignment {
			st.Partitions++
			for _, r := range replicas {
				broker(r).Replicas++
			}
			ps, ok := snap.Partition(t.Name, int32(p))
			status := PartitionStatus{Topic: t.Name, Partition: int32(p), Leader: ps.Leader, Replicas: replicas, ISR: ps.ISR}
			if !ok {
				status.Leader = cluster.NoLeader
			}
			if status.ISR == nil {
				status.ISR = []int32{}
			}
			if status.Leader == cluster.NoLeader {
				st.OfflinePartitions = append(st.OfflinePartitions, status)
			} else {
				broker(status.Leader).Leaders++
			}
			if len(status.ISR) < len(replicas) {
				st.UnderReplicatedPartitions = append(st.UnderReplicatedPartitions, status)
			}
		}
	}
	for _, b := range brokers {
		st.Brokers = append(st.Brokers, *b)
	}
	slices.SortFunc(st.Brokers, func(a, b BrokerStatus) int { return int(a.ID) - int(b.ID) })
	return st
}

// memberStatuses lists the etcd members as this member knows them (serializable:
// it answers without quorum) and asks each for its status, in parallel.
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
	out := make([]MemberStatus, len(list.Members))
	var leaders sync.Map // member id -> true, as reported by any member
	var wg sync.WaitGroup
	for i, m := range list.Members {
		ms := MemberStatus{ID: strconv.FormatUint(m.ID, 16), Name: m.Name, NodeID: cluster.NoLeader,
			PeerURLs: nonNil(m.PeerURLs), ClientURLs: nonNil(m.ClientURLs), Learner: m.IsLearner}
		if id, ok := nodeOf[m.ID]; ok {
			ms.NodeID = id
		}
		out[i] = ms
		if len(m.ClientURLs) == 0 {
			out[i].Error = "not started yet (added by a join that has not finished)"
			continue
		}
		wg.Add(1)
		go func(i int, m *etcdserverpb.Member) {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, MemberStatusTimeout)
			defer cancel()
			resp, err := cli.Status(sctx, m.ClientURLs[0])
			switch {
			case err != nil:
				out[i].Error = fmt.Sprintf("no answer within %v: %v", MemberStatusTimeout, err)
			case len(resp.Errors) > 0:
				out[i].Error = strings.Join(resp.Errors, "; ")
			case resp.Leader == 0:
				out[i].Error = "knows no leader (cut off from a quorum)"
			default:
				out[i].Healthy = true
			}
			if err == nil && resp.Leader != 0 {
				leaders.Store(resp.Leader, true)
			}
		}(i, m)
	}
	wg.Wait()
	for i, m := range list.Members {
		if _, ok := leaders.Load(m.ID); ok {
			out[i].Leader = true
		}
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

// removeNode removes node id from the cluster: refused while it holds replicas (with
// drain, the node is marked for draining instead and the answer says how many replicas
// are left to move), when it is the node answering, when its etcd member is the last
// voter, or when the voting members left would not make a quorum; otherwise its etcd
// member is removed (the node's process then stops), its record and draining mark
// deleted and its broker session ended.
//
// A topic created between the replica check and the removal could still place
// replicas on the node; such partitions show up as offline in the status and can be
// deleted.
func (n *Node) removeNode(ctx context.Context, id int32, drain bool) (RemoveResult, *adminError) {
	if !n.started() {
		return RemoveResult{}, refuse(http.StatusServiceUnavailable, "the node is starting; try again when it is ready")
	}
	if id == n.id {
		return RemoveResult{}, refuse(http.StatusConflict, "node %d is the node answering this request; send remove-node to another node (--http HOST:PORT of another node's HTTP port)", id)
	}
	if err := n.member.Healthy(ctx); err != nil {
		return RemoveResult{}, refuse(http.StatusServiceUnavailable, "the cluster metadata (etcd) has no quorum, so no node can be removed: a majority of the nodes must be up (%v)", err)
	}
	// Check the partitions against a cache that has seen every write up to now.
	rev, err := n.store.Revision(ctx)
	if err == nil {
		err = n.cache.WaitRevision(ctx, rev)
	}
	if err != nil {
		return RemoveResult{}, refuse(http.StatusServiceUnavailable, "read the cluster metadata: %v", err)
	}
	snap := n.cache.Snapshot()
	if held := replicasOn(snap, id); len(held) > 0 {
		if drain {
			return n.drainNode(ctx, snap, id, held)
		}
		e := refuse(http.StatusConflict, "node %d still holds replicas of %d partitions: %s; move or delete these partitions first "+
			"(skiff cluster remove-node %d --drain moves them to other nodes, one partition at a time, and then removes the node)",
			id, len(held), listSome(held), id)
		e.partitions = held
		return RemoveResult{}, e
	}

	nodes, err := n.store.Nodes(ctx, false)
	if err != nil {
		return RemoveResult{}, refuse(http.StatusServiceUnavailable, "read the node records: %v", err)
	}
	list, err := n.member.Client().MemberList(ctx)
	if err != nil {
		return RemoveResult{}, refuse(http.StatusServiceUnavailable, "list etcd members: %v", err)
	}
	var target *etcdserverpb.Member
	known := false
	for _, nm := range nodes {
		if nm.NodeID != id {
			continue
		}
		known = true
		for _, m := range list.Members {
			if m.ID == nm.MemberID {
				target = m
			}
		}
	}
	if !known {
		// A node that started before node records existed: its member has the
		// default name.
		for _, m := range list.Members {
			if m.Name == fmt.Sprintf("skiff-%d", id) {
				target, known = m, true
			}
		}
	}
	if !known {
		if _, live := n.cache.Broker(id); !live {
			return RemoveResult{}, refuse(http.StatusNotFound, "there is no node %d in this cluster (skiff cluster status lists the nodes)", id)
		}
	}
	if target == nil {
		if err := n.store.ForgetNode(ctx, id); err != nil {
			return RemoveResult{}, refuse(http.StatusInternalServerError, "%v", err)
		}
		if err := n.store.Undrain(ctx, id); err != nil {
			return RemoveResult{}, refuse(http.StatusInternalServerError, "%v", err)
		}
		return RemoveResult{NodeID: id, Message: fmt.Sprintf("node %d had no etcd member left; its record and broker registration were removed", id)}, nil
	}

	if !target.IsLearner {
		if err := n.checkQuorumWithout(ctx, list.Members, target); err != nil {
			return RemoveResult{}, err
		}
	}
	if err := embedetcd.RemoveMember(ctx, n.member.Client(), target.ID); err != nil && !errors.Is(err, embedetcd.ErrMemberNotFound) {
		return RemoveResult{}, refuse(http.StatusServiceUnavailable, "remove the etcd member %s of node %d: %v", target.Name, id, err)
	}
	// Removing the etcd leader makes the others elect a new one first: retry.
	for attempt := 1; ; attempt++ {
		err := n.store.ForgetNode(ctx, id)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return RemoveResult{}, refuse(http.StatusInternalServerError, "node %d's etcd member was removed, but: %v; run remove-node again to finish", id, err)
		}
		n.logger.Info("deleting the record of a removed node failed; retrying", "removed_node_id", id, "attempt", attempt, "err", err)
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if err := n.store.Undrain(ctx, id); err != nil {
		n.logger.Warn("clearing the draining mark of a removed node", "removed_node_id", id, "err", err)
	}
	n.logger.Info("removed node from the cluster", "removed_node_id", id, "member", target.Name, "member_id", fmt.Sprintf("%x", target.ID))
	return RemoveResult{
		NodeID: id, MemberName: target.Name, MemberID: strconv.FormatUint(target.ID, 16),
		Message: fmt.Sprintf("removed node %d (etcd member %s) from the cluster; its process stops on its own, and its data directory can be deleted", id, target.Name),
	}, nil
}

// checkQuorumWithout refuses to remove voting member target when it is the last
// voter, or when the voters left that answer a status call would not make a quorum
// of the smaller cluster.
func (n *Node) checkQuorumWithout(ctx context.Context, members []*etcdserverpb.Member, target *etcdserverpb.Member) *adminError {
	var others []*etcdserverpb.Member
	for _, m := range members {
		if !m.IsLearner && m.ID != target.ID {
			others = append(others, m)
		}
	}
	if len(others) == 0 {
		return refuse(http.StatusConflict, "etcd member %s is the last voting member: removing it would leave no cluster", target.Name)
	}
	healthy := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range others {
		if len(m.ClientURLs) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, MemberStatusTimeout)
			defer cancel()
			if resp, err := n.member.Client().Status(sctx, m.ClientURLs[0]); err == nil && len(resp.Errors) == 0 && resp.Leader != 0 {
				mu.Lock()
				healthy++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if need := len(others)/2 + 1; healthy < need {
		return refuse(http.StatusConflict, "removing etcd member %s would leave %d voting members of which %d answer, fewer than the %d a quorum needs; start the stopped nodes again first (or remove those that are gone for good first)",
			target.Name, len(others), healthy, need)
	}
	return nil
}

// drainNode marks node id for draining (idempotent) and says how far it got: held are
// the partitions with a replica on it. Partitions whose records only node id has (it
// is down and no other replica is in sync) cannot move until it returns; the answer
// names them.
func (n *Node) drainNode(ctx context.Context, snap *cluster.Snapshot, id int32, held []string) (RemoveResult, *adminError) {
	if _, ok := snap.Broker(id); !ok && !snap.Draining(id) {
		if known, err := n.nodeKnown(ctx, snap, id); err != nil {
			return RemoveResult{}, err
		} else if !known {
			return RemoveResult{}, refuse(http.StatusNotFound, "there is no node %d in this cluster (skiff cluster status lists the nodes)", id)
		}
	}
	if err := n.store.Drain(ctx, id); err != nil {
		return RemoveResult{}, refuse(http.StatusServiceUnavailable, "%v", err)
	}
	msg := fmt.Sprintf("draining node %d: %s left to move to other nodes", id, countOf(len(held), "partition replica"))
	if _, live := snap.Broker(id); !live {
		var stuck []string
		for _, t := range snap.Topics() {
			for p, replicas := range t.Assignment {
				if !slices.Contains(replicas, id) {
					continue
				}
				st, _ := snap.Partition(t.Name, int32(p))
				movable := false
				for _, r := range st.ISR {
					if _, ok := snap.Broker(r); ok && r != id {
						movable = true
					}
				}
				if !movable {
					stuck = append(stuck, fmt.Sprintf("%s/%d", t.Name, p))
				}
			}
		}
		if len(stuck) > 0 {
			msg += fmt.Sprintf("; node %d is down and is the only in-sync replica of %s: these cannot move until it returns (or delete them)", id, listSome(stuck))
		}
	}
	return RemoveResult{NodeID: id, Draining: true, ReplicasLeft: len(held), Message: msg}, nil
}

// nodeKnown reports whether id names a node of this cluster: a node record, a
// member with its default name, or a live broker.
func (n *Node) nodeKnown(ctx context.Context, snap *cluster.Snapshot, id int32) (bool, *adminError) {
	if _, ok := snap.Broker(id); ok {
		return true, nil
	}
	nodes, err := n.store.Nodes(ctx, false)
	if err != nil {
		return false, refuse(http.StatusServiceUnavailable, "read the node records: %v", err)
	}
	for _, nm := range nodes {
		if nm.NodeID == id {
			return true, nil
		}
	}
	return false, nil
}

// listSome joins up to 20 names, saying how many more there are.
func listSome(names []string) string {
	if len(names) <= 20 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:20], ", ") + fmt.Sprintf(" and %d more", len(names)-20)
}

// countOf is "1 partition", "2 partitions".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// replicasOn lists "topic/partition" of every partition with a replica on broker id.
func replicasOn(snap *cluster.Snapshot, id int32) []string {
	var out []string
	for _, t := range snap.Topics() {
		for p, replicas := range t.Assignment {
			if slices.Contains(replicas, id) {
				out = append(out, fmt.Sprintf("%s/%d", t.Name, p))
			}
		}
	}
	return out
}
