package console

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"

	"skiff/acl"
	"skiff/cluster"
)

// nodeRow is one node on the overview.
type nodeRow struct {
	cluster.BrokerSummary
	Address, Etcd   string
	Answered        bool
	Err             string
	DataBytes       int64
	DiskFree        int64
	InRate, OutRate int64
	Spark           template.HTML
}

type overviewData struct {
	ClusterID                string
	Controller               int32
	Live                     int
	Topics, Partitions       int
	Nodes                    []nodeRow
	Offline, UnderReplicated []cluster.PartitionSummary
	Shrinks, Expands         int64
	QuotaPct                 float64
	Alarms                   []string
	InChart, OutChart        template.HTML
}

// overview is GET /: the cluster at a glance.
func (c *Console) overview(r *http.Request) (rendered, error) {
	ctx := r.Context()
	v := c.gather(ctx, Want{Node: true})
	members := c.src.Members(ctx)
	ov := v.snap.Overview()
	d := overviewData{ClusterID: v.snap.ClusterID(), Controller: v.snap.Controller(),
		Offline: c.describableParts(r, ov.Offline), UnderReplicated: c.describableParts(r, ov.UnderReplicated)}
	for _, t := range v.snap.Topics() { // the topics the user may describe
		if c.may(r, acl.OpDescribe, acl.ResourceTopic, t.Name) {
			d.Topics++
			d.Partitions += int(t.Partitions)
		}
	}
	var ins, outs [][]float32
	alarms := map[string]bool{}
	for _, b := range ov.Brokers {
		row := nodeRow{BrokerSummary: b, Etcd: etcdRole(members, b.ID)}
		if b.Live {
			d.Live++
			row.Address = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
		if a := v.nodes[b.ID]; a != nil {
			if a.err != nil {
				row.Err = a.err.Error()
			} else {
				row.Answered = true
				l := a.local
				row.DataBytes, row.DiskFree = l.DataBytes, l.DiskFree
				if h := l.History; h != nil {
					row.InRate, row.OutRate = lastRate(h.In), lastRate(h.Out)
					row.Spark = spark(fmt.Sprintf("node %d bytes in and out per second, last 15 minutes", b.ID), h.In, h.Out)
					ins, outs = append(ins, h.In), append(outs, h.Out)
					d.Shrinks += h.ISRShrinks
					d.Expands += h.ISRExpands
				}
				if l.EtcdQuota > 0 {
					d.QuotaPct = math.Max(d.QuotaPct, 100*float64(l.EtcdDBSize)/float64(l.EtcdQuota))
				}
				for _, al := range l.EtcdAlarms {
					alarms[al] = true
				}
			}
		}
		d.Nodes = append(d.Nodes, row)
	}
	for al := range alarms {
		d.Alarms = append(d.Alarms, al)
	}
	slices.Sort(d.Alarms)
	d.InChart = chart("Bytes in per second, all nodes, last 15 minutes", bytesUnit, sumSeries(ins))
	d.OutChart = chart("Bytes out per second, all nodes, last 15 minutes", bytesUnit, sumSeries(outs))
	return rendered{page: "overview", title: "Overview", section: "overview", live: true, data: d}, nil
}

// describableParts keeps the partitions of topics r's user may DESCRIBE.
func (c *Console) describableParts(r *http.Request, ps []cluster.PartitionSummary) []cluster.PartitionSummary {
	return slices.DeleteFunc(slices.Clone(ps), func(p cluster.PartitionSummary) bool {
		return !c.may(r, acl.OpDescribe, acl.ResourceTopic, p.Topic)
	})
}

// etcdRole describes node id's etcd member: leader, voter or learner, and its health.
func etcdRole(members []EtcdMember, id int32) string {
	for _, m := range members {
		if m.NodeID != id {
			continue
		}
		role := "voter"
		switch {
		case m.Leader:
			role = "leader"
		case m.Learner:
			role = "learner"
		}
		if !m.Healthy {
			return role + ", unhealthy"
		}
		return role + ", healthy"
	}
	return "no member"
}

// lastRate is the newest sample of s (0 when there is none).
func lastRate(s []float32) int64 {
	for i := len(s) - 1; i >= len(s)-2 && i >= 0; i-- {
		if !math.IsNaN(float64(s[i])) {
			return int64(s[i])
		}
	}
	return 0
}

type nodeData struct {
	Auth                authView
	ID                  int32
	Live, Draining      bool
	Address, HTTP, Rack string
	Etcd                string
	Replicas, Leaders   int
	Answered            bool
	Err                 string
	Local               Local
	InChart, OutChart   template.HTML
}

// node is GET /nodes/{id}.
func (c *Console) node(r *http.Request) (rendered, error) {
	id64, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		return rendered{}, badInput("%q is not a node id", r.PathValue("id"))
	}
	id := int32(id64)
	ctx := r.Context()
	snap := c.src.Snapshot()
	ov := snap.Overview()
	i := slices.IndexFunc(ov.Brokers, func(b cluster.BrokerSummary) bool { return b.ID == id })
	if i < 0 {
		return rendered{}, notFound("No node %d: it is neither live nor holds replicas.", id)
	}
	b := ov.Brokers[i]
	d := nodeData{ID: id, Live: b.Live, Draining: b.Draining, Rack: b.Rack, Replicas: b.Replicas, Leaders: b.Leaders,
		Etcd: etcdRole(c.src.Members(ctx), id), Auth: c.authView(r)}
	if br, ok := snap.Broker(id); ok {
		d.Address, d.HTTP = net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))), br.HTTP
		l, err := c.nodeLocal(ctx, br)
		if err != nil {
			d.Err = err.Error()
		} else {
			d.Answered, d.Local = true, l
			d.InChart = chart(fmt.Sprintf("Node %d bytes in per second", id), bytesUnit, l.History.In)
			d.OutChart = chart(fmt.Sprintf("Node %d bytes out per second", id), bytesUnit, l.History.Out)
		}
	}
	return rendered{page: "node", title: fmt.Sprintf("Node %d", id), live: true, data: d}, nil
}

// nodeLocal is one node's Local with its node series.
func (c *Console) nodeLocal(ctx context.Context, b cluster.Broker) (Local, error) {
	if b.ID == c.src.NodeID() {
		return c.local(ctx, Want{Node: true}), nil
	}
	return c.peerLocal(ctx, b, Want{Node: true})
}
