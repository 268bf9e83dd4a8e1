package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"skiff/cluster"
)

// peerTimeout bounds one request to another node: a page shows that node as not
// answering rather than wait for it.
const peerTimeout = 3 * time.Second

// nodeAnswer is one node's Local, or why it could not be had.
type nodeAnswer struct {
	id    int32
	local Local
	err   error
}

// view is the cluster as a page sees it: the metadata snapshot and what every
// live node reported about itself.
type view struct {
	snap  *cluster.Snapshot
	nodes map[int32]*nodeAnswer
	// leaders holds the leader's replica of each partition, from its report.
	leaders map[tpKey]Replica
}

// gather asks every live broker for its Local (this node directly, the others
// over GET /v1/console/node), in parallel, with the history series of w.
func (c *Console) gather(ctx context.Context, w Want) *view {
	snap := c.src.Snapshot()
	v := &view{snap: snap, nodes: map[int32]*nodeAnswer{}, leaders: map[tpKey]Replica{}}
	brokers := snap.Brokers()
	answers := make([]*nodeAnswer, len(brokers))
	var wg sync.WaitGroup
	for i, b := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := &nodeAnswer{id: b.ID}
			if b.ID == c.src.NodeID() {
				a.local = c.local(ctx, w)
			} else {
				a.local, a.err = c.peerLocal(ctx, b, w)
			}
			answers[i] = a
		}()
	}
	wg.Wait()
	for _, a := range answers {
		v.nodes[a.id] = a
		if a.err != nil {
			continue
		}
		for _, r := range a.local.Replicas {
			if r.Leader {
				v.leaders[tpKey{r.Topic, r.Partition}] = r
			}
		}
	}
	return v
}

// local is this node's Local with its history.
func (c *Console) local(ctx context.Context, w Want) Local {
	l := c.src.Local(ctx)
	if !w.AllParts {
		keep := make(map[string]bool, len(w.Parts))
		for _, t := range w.Parts {
			keep[t] = true
		}
		l.Replicas = slices.DeleteFunc(l.Replicas, func(r Replica) bool { return !keep[r.Topic] })
	}
	l.History = c.hist.Report(time.Now(), w)
	l.Groups = c.src.Groups()
	return l
}

// peerLocal asks broker b for its Local.
func (c *Console) peerLocal(ctx context.Context, b cluster.Broker, w Want) (Local, error) {
	var l Local
	q := url.Values{}
	if w.Node {
		q.Set("node", "1")
	}
	for _, t := range w.Topics {
		q.Add("topic", t)
	}
	for _, g := range w.Groups {
		q.Add("group", g)
	}
	for _, t := range w.Parts {
		q.Add("parts", t)
	}
	if w.AllParts {
		q.Set("all_parts", "1")
	}
	err := c.peerGet(ctx, b, "/v1/console/node", q, &l)
	return l, err
}

// peerGet GETs path from broker b's HTTP address and decodes its JSON answer.
func (c *Console) peerGet(ctx context.Context, b cluster.Broker, path string, q url.Values, into any) error {
	return c.peerDo(ctx, b, http.MethodGet, path, q, nil, into)
}

// peerPost POSTs body as JSON to path on broker b.
func (c *Console) peerPost(ctx context.Context, b cluster.Broker, path string, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.peerDo(ctx, b, http.MethodPost, path, nil, data, nil)
}

func (c *Console) peerDo(ctx context.Context, b cluster.Broker, method, path string, q url.Values, body []byte, into any) error {
	if b.HTTP == "" {
		return fmt.Errorf("node %d advertises no HTTP address", b.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	u := url.URL{Scheme: c.scheme, Host: b.HTTP, Path: path, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(peerKeyHeader, base64.StdEncoding.EncodeToString(c.src.PeerKey()))
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("node %d: %w", b.ID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("node %d: %s: %s", b.ID, resp.Status, e.Error)
	}
	if into == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("node %d: decode %s: %w", b.ID, path, err)
	}
	return nil
}

// brokerOf returns the live broker id, or an error naming why it cannot be asked.
func (v *view) brokerOf(id int32) (cluster.Broker, error) {
	b, ok := v.snap.Broker(id)
	if !ok {
		return cluster.Broker{}, fmt.Errorf("node %d is not live", id)
	}
	return b, nil
}

// coordinatorOf returns the node whose report lists group name.
func (v *view) coordinatorOf(name string) (int32, Group, bool) {
	for id, a := range v.nodes {
		for _, g := range a.local.Groups {
			if g.Name == name {
				return id, g, true
			}
		}
	}
	return 0, Group{}, false
}

// lag is the group's lag per committed partition (log end: the leader's high
// watermark; -1 when the leader did not answer) and in total.
func (v *view) lag(g Group) (rows []lagRow, total int64) {
	for _, o := range g.Offsets {
		r := lagRow{Committed: o, End: -1, Lag: -1}
		if rep, ok := v.leaders[tpKey{o.Topic, o.Partition}]; ok {
			r.End = rep.HWM
			r.Lag = max(rep.HWM-o.Offset, 0)
			total += r.Lag
		}
		rows = append(rows, r)
	}
	return rows, total
}

// shares returns the share-partitions of share group name that the nodes lead,
// each with the lag of its start offset (SPSO) behind its leader's high
// watermark, and the start offsets as the group's offsets (its lag).
func (v *view) shares(name string) (rows []shareRow, offsets []Committed) {
	for id, a := range v.nodes {
		for _, sp := range a.local.Shares {
			if sp.Group != name {
				continue
			}
			r := shareRow{SharePartition: sp, Leader: id, LogEnd: -1, Lag: -1}
			if rep, ok := v.leaders[tpKey{sp.Topic, sp.Partition}]; ok {
				r.LogEnd, r.Lag = rep.HWM, max(rep.HWM-sp.Start, 0)
			}
			rows = append(rows, r)
			offsets = append(offsets, Committed{Topic: sp.Topic, Partition: sp.Partition, Offset: sp.Start})
		}
	}
	sortBy(rows, func(r shareRow) string { return fmt.Sprintf("%s\x00%010d", r.Topic, r.Partition) })
	sortBy(offsets, func(o Committed) string { return fmt.Sprintf("%s\x00%010d", o.Topic, o.Partition) })
	return rows, offsets
}

// shareRow is one share-partition of a group's page.
type shareRow struct {
	SharePartition
	Leader      int32
	LogEnd, Lag int64 // the leader's high watermark and LogEnd-SPSO; -1 unknown
}

type lagRow struct {
	Committed
	End, Lag int64
}

// sumSeries adds up the series of each node, slot by slot (NaN only where no
// node has a sample).
func sumSeries(parts [][]float32) []float32 {
	var out []float32
	for _, p := range parts {
		if out == nil {
			out = slices.Clone(p)
			continue
		}
		for i := range min(len(out), len(p)) {
			switch {
			case p[i] != p[i]: // NaN
			case out[i] != out[i]:
				out[i] = p[i]
			default:
				out[i] += p[i]
			}
		}
	}
	return out
}

func sortBy[T any](s []T, key func(T) string) {
	slices.SortFunc(s, func(a, b T) int { return strings.Compare(key(a), key(b)) })
}
