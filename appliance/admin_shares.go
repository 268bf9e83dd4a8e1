package appliance

// GET /v1/share-partitions?group=G on the admin API: the share-partitions of a
// share group with their in-flight and acquired record counts, SPSO and SPEO
// (`skiff group describe G --http ADDR`). Those figures live only at each
// share-partition's leader, and no Kafka API carries them, so the node asked
// gathers them from every live node's HTTP port (local=1: its own only),
// forwarding the caller's bearer token, so that each node authorizes the
// request as it would the caller; over HTTPS it shows its own certificate,
// which the cluster's CA signed.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"
)

// shareStatsTimeout bounds the question to one peer.
const shareStatsTimeout = 5 * time.Second

// SharePartitionStatus is one share-partition as its leader reports it.
type SharePartitionStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Leader    int32  `json:"leader"`
	// StartOffset and EndOffset are the SPSO and SPEO.
	StartOffset int64 `json:"start_offset"`
	EndOffset   int64 `json:"end_offset"`
	// InFlight counts the records between them not done yet (available again or
	// acquired); Acquired those a member holds now.
	InFlight int `json:"in_flight"`
	Acquired int `json:"acquired"`
	// Lag is the leader's high watermark minus the SPSO (-1: unknown).
	Lag int64 `json:"lag"`
}

// SharePartitionsAnswer is the answer of GET /v1/share-partitions: the group's
// share-partitions (sorted by topic and partition) and the nodes that did not
// answer.
type SharePartitionsAnswer struct {
	Group      string                 `json:"group"`
	Partitions []SharePartitionStatus `json:"partitions"`
	Errors     []string               `json:"errors,omitempty"`
}

func (n *Node) shareRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/share-partitions", func(w http.ResponseWriter, r *http.Request) {
		group := r.URL.Query().Get("group")
		if group == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "group: give the share group's name"})
			return
		}
		ans := SharePartitionsAnswer{Group: group, Partitions: n.localSharePartitions(group)}
		if r.URL.Query().Get("local") != "1" {
			ans = n.gatherSharePartitions(r, group, ans)
		}
		writeJSON(w, http.StatusOK, ans)
	})
}

// localSharePartitions are the share-partitions of group this node leads.
func (n *Node) localSharePartitions(group string) []SharePartitionStatus {
	out := []SharePartitionStatus{}
	if n.shares == nil {
		return out
	}
	for _, st := range n.shares.Stats() {
		if st.Group != group {
			continue
		}
		lag := int64(-1)
		if p := n.parts.Partition(st.Topic, st.Partition); p != nil {
			lag = max(p.HighWatermark()-st.Start, 0)
		}
		out = append(out, SharePartitionStatus{Topic: st.Topic, Partition: st.Partition, Leader: n.id,
			StartOffset: st.Start, EndOffset: st.End, InFlight: st.InFlight, Acquired: st.Acquired, Lag: lag})
	}
	return out
}

// gatherSharePartitions adds to own (this node's) the share-partitions of group
// that the other live nodes lead, asked in parallel.
func (n *Node) gatherSharePartitions(r *http.Request, group string, own SharePartitionsAnswer) SharePartitionsAnswer {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, b := range n.cache.Brokers() {
		if b.ID == n.id {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts, err := n.peerSharePartitions(r, b.HTTP, group)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				own.Errors = append(own.Errors, fmt.Sprintf("node %d: %v", b.ID, err))
				return
			}
			own.Partitions = append(own.Partitions, parts...)
		}()
	}
	wg.Wait()
	sort.Slice(own.Partitions, func(i, j int) bool {
		a, b := own.Partitions[i], own.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	sort.Strings(own.Errors)
	return own
}

// peerSharePartitions asks the node at addr (its HTTP address) for its own
// share-partitions of group.
func (n *Node) peerSharePartitions(r *http.Request, addr, group string) ([]SharePartitionStatus, error) {
	if addr == "" {
		return nil, fmt.Errorf("advertises no HTTP address")
	}
	ctx, cancel := context.WithTimeout(r.Context(), shareStatsTimeout)
	defer cancel()
	scheme := "http"
	if n.cfg.HTTPTLS {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: addr, Path: "/v1/share-partitions", RawQuery: url.Values{"group": {group}, "local": {"1"}}.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	resp, err := n.peerHTTP().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %.200s", resp.Status, body)
	}
	var ans SharePartitionsAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, err
	}
	return ans.Partitions, nil
}
