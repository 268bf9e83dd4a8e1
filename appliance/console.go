package appliance

// The web console (package console) on the HTTP port: this file is its Source, the
// node's parts read through the same paths the admin API and the Kafka handlers
// use, and nothing else.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
	"skiff/console"
	"skiff/embedetcd"
)

// etcdStatusTimeout bounds the status and alarm calls of a console page to this
// node's own etcd member.
const etcdStatusTimeout = time.Second

// consoleRoutes mounts the console on mux unless it is turned off: its pages
// wrapped in open (the HTTP credentials under http-auth all), its internal API
// (/v1/console/, which checks the cluster's console key) as it is.
func (n *Node) consoleRoutes(mux *http.ServeMux, open func(http.Handler) http.Handler) {
	if n.cfg.DisableConsole {
		return
	}
	n.console = console.New(console.Config{Source: consoleSource{n}, Admin: consoleAdmin{n}, Logger: n.logger,
		Client: n.consoleClient(), PeerTLS: n.cfg.HTTPTLS})
	pages := http.NewServeMux()
	n.console.Register(pages)
	mux.Handle("/", open(pages))
	mux.Handle("/v1/console/", pages)
}

// consoleClient is how the console asks the other nodes: over TLS with this
// node's certificate when the HTTP port speaks TLS (http-tls).
func (n *Node) consoleClient() *http.Client {
	if !n.cfg.HTTPTLS || n.tls == nil {
		return &http.Client{}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: n.tls.ClientConfig("")}}
}

// consoleSource is the console's view of the node.
type consoleSource struct{ n *Node }

func (s consoleSource) Started() bool {
	select {
	case <-s.n.stop:
		return false
	default:
		return s.n.started()
	}
}

func (s consoleSource) NodeID() int32 { return s.n.id }

func (s consoleSource) Snapshot() *cluster.Snapshot { return s.n.cache.Snapshot() }

func (s consoleSource) BrokerDefaults() cluster.BrokerDefaults {
	return s.n.cache.Snapshot().BrokerDefaults(s.n.id, s.n.topicDefaults())
}

func (s consoleSource) PeerKey() []byte { return s.n.consoleKey }

func (s consoleSource) Local(ctx context.Context) console.Local {
	n := s.n
	l := console.Local{NodeID: n.id, EtcdQuota: embedetcd.DefaultQuotaBackendBytes}
	for _, p := range n.parts.Partitions() {
		r := console.Replica{Topic: p.Topic, Partition: p.ID, Leader: p.IsLeader(), LogStart: p.LogStartOffset(),
			HWM: p.HighWatermark(), LogEnd: p.LogEndOffset(), Size: p.Size(), Unsynced: p.UnsyncedBytes()}
		l.DataBytes += r.Size
		l.Replicas = append(l.Replicas, r)
	}
	if n.kafkaMetrics != nil {
		l.BytesIn, l.BytesOut = n.kafkaMetrics.Bytes()
	}
	l.ISRShrinks, l.ISRExpands = n.parts.ISRChanges()
	if n.shares != nil {
		for _, st := range n.shares.Stats() {
			l.Shares = append(l.Shares, console.SharePartition{Group: st.Group, Topic: st.Topic, Partition: st.Partition,
				Start: st.Start, End: st.End, InFlight: st.InFlight, Acquired: st.Acquired})
		}
	}
	if total, usable, ok := n.parts.DiskSpace(); ok {
		l.DiskFree, l.DiskTotal = usable, total
	}
	ctx, cancel := context.WithTimeout(ctx, etcdStatusTimeout)
	defer cancel()
	cli := n.member.Client()
	if status, err := cli.Status(ctx, n.member.ClientURL()); err == nil {
		l.EtcdDBSize = status.DbSize
	}
	if alarms, err := cli.AlarmList(ctx); err == nil {
		for _, a := range alarms.Alarms {
			l.EtcdAlarms = append(l.EtcdAlarms, fmt.Sprintf("%s on member %x", a.Alarm, a.MemberID))
		}
	}
	return l
}

// Groups lists the groups this node coordinates: ListGroups, DescribeGroups and
// OffsetFetch of its coordinator, as a Kafka client would see them.
func (s consoleSource) Groups() []console.Group {
	c := s.n.groups
	list := c.ListGroups(kmsg.NewPtrListGroupsRequest())
	out := make([]console.Group, 0, len(list.Groups))
	for _, lg := range list.Groups {
		g := console.Group{Name: lg.Group, State: lg.GroupState, Type: cmp.Or(lg.GroupType, "classic"), ProtocolType: lg.ProtocolType}
		if g.Type == "consumer" {
			if d := s.consumerGroup(lg.Group); d != nil {
				g.Members = len(d.Members)
			}
		} else {
			dreq := kmsg.NewPtrDescribeGroupsRequest()
			dreq.Groups = []string{lg.Group}
			if d := c.DescribeGroups(dreq); len(d.Groups) == 1 {
				g.Members = len(d.Groups[0].Members)
			}
		}
		oreq := kmsg.NewPtrOffsetFetchRequest()
		oreq.Version, oreq.Group = 7, lg.Group
		for _, t := range c.OffsetFetch(oreq).Topics {
			for _, p := range t.Partitions {
				if p.Offset >= 0 && p.ErrorCode == 0 {
					g.Offsets = append(g.Offsets, console.Committed{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset})
				}
			}
		}
		slices.SortFunc(g.Offsets, func(a, b console.Committed) int {
			if a.Topic != b.Topic {
				return strings.Compare(a.Topic, b.Topic)
			}
			return int(a.Partition - b.Partition)
		})
		out = append(out, g)
	}
	if s.n.shareGroups != nil { // their offsets (start offsets) are at the partitions' leaders
		for _, lg := range s.n.shareGroups.ListGroups(kmsg.NewPtrListGroupsRequest()).Groups {
			out = append(out, console.Group{Name: lg.Group, State: lg.GroupState, Type: lg.GroupType,
				ProtocolType: lg.ProtocolType, Members: s.n.shareGroups.Members(lg.Group)})
		}
	}
	return out
}

// Group describes one group with its members' assignments (decoded when the group
// is a consumer group).
func (s consoleSource) Group(name string) (console.GroupMembers, bool) {
	var gm console.GroupMembers
	groups := s.Groups()
	i := slices.IndexFunc(groups, func(g console.Group) bool { return g.Name == name })
	if i < 0 {
		return gm, false
	}
	gm.Group = groups[i]
	if gm.Type == "share" { // KIP-932: ShareGroupDescribe
		names := make(map[[16]byte]string)
		for _, t := range s.n.cache.Topics() {
			names[t.ID] = t.Name
		}
		d, ok := s.n.shareGroups.Describe(name, func(id [16]byte) string { return names[id] })
		if !ok {
			return gm, false
		}
		gm.Protocol = d.Assignor
		for _, m := range d.Members {
			member := console.GroupMember{ID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost}
			for _, tp := range m.Assignment.TopicPartitions {
				member.Assigned = append(member.Assigned, console.Assignment{Topic: tp.Topic, Partitions: tp.Partitions})
			}
			gm.List = append(gm.List, member)
		}
		return gm, true
	}
	if gm.Type == "consumer" { // KIP-848: ConsumerGroupDescribe
		d := s.consumerGroup(name)
		if d == nil {
			return gm, false
		}
		gm.Protocol = d.AssignorName
		for _, m := range d.Members {
			member := console.GroupMember{ID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost}
			if m.InstanceID != nil {
				member.InstanceID = *m.InstanceID
			}
			for _, tp := range m.Assignment.TopicPartitions {
				member.Assigned = append(member.Assigned, console.Assignment{Topic: tp.Topic, Partitions: tp.Partitions})
			}
			gm.List = append(gm.List, member)
		}
		return gm, true
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{name}
	d := s.n.groups.DescribeGroups(req)
	if len(d.Groups) != 1 {
		return gm, false
	}
	dg := d.Groups[0]
	gm.Protocol = dg.Protocol
	for _, m := range dg.Members {
		member := console.GroupMember{ID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost}
		if m.InstanceID != nil {
			member.InstanceID = *m.InstanceID
		}
		var a kmsg.ConsumerMemberAssignment
		if dg.ProtocolType == "consumer" && len(m.MemberAssignment) > 0 && a.ReadFrom(m.MemberAssignment) == nil {
			for _, t := range a.Topics {
				member.Assigned = append(member.Assigned, console.Assignment{Topic: t.Topic, Partitions: t.Partitions})
			}
		}
		gm.List = append(gm.List, member)
	}
	return gm, true
}

// consumerGroup describes a group of the consumer protocol (KIP-848), nil if
// the coordinator does not answer for it.
func (s consoleSource) consumerGroup(name string) *kmsg.ConsumerGroupDescribeResponseGroup {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{name}
	d := s.n.groups.ConsumerGroupDescribe(req)
	if len(d.Groups) != 1 || d.Groups[0].ErrorCode != 0 {
		return nil
	}
	return &d.Groups[0]
}

// Read reads batches from this node's leader replica (Partition.Read: never past
// the high watermark); offset -1 only reports the marks.
func (s consoleSource) Read(topic string, partition int32, offset, maxBytes int64) (console.Batches, error) {
	p := s.n.parts.Partition(topic, partition)
	if p == nil || !p.IsLeader() {
		return console.Batches{}, fmt.Errorf("%w: node %d does not lead partition %d of %s", console.ErrNotHere, s.n.id, partition, topic)
	}
	b := console.Batches{HWM: p.HighWatermark(), LogStart: p.LogStartOffset()}
	if offset < 0 {
		return b, nil
	}
	slice, err := p.Read(offset, maxBytes)
	if err != nil {
		return b, err
	}
	defer slice.Release()
	var buf bytes.Buffer
	if _, err := slice.WriteTo(&buf); err != nil {
		return b, err
	}
	b.Data = buf.Bytes()
	return b, nil
}

func (s consoleSource) OffsetForTimestamp(topic string, partition int32, ts int64) (int64, error) {
	p := s.n.parts.Partition(topic, partition)
	if p == nil || !p.IsLeader() {
		return 0, fmt.Errorf("%w: node %d does not lead partition %d of %s", console.ErrNotHere, s.n.id, partition, topic)
	}
	off, _, ok, err := p.OffsetForTimestamp(ts)
	if err != nil || !ok {
		return p.HighWatermark(), err
	}
	return off, nil
}

// Members are the etcd members as GET /v1/cluster lists them.
func (s consoleSource) Members(ctx context.Context) []console.EtcdMember {
	ms, _ := s.n.memberStatuses(ctx)
	out := make([]console.EtcdMember, len(ms))
	for i, m := range ms {
		out[i] = console.EtcdMember{Name: m.Name, NodeID: m.NodeID, Learner: m.Learner, Leader: m.Leader, Healthy: m.Healthy, Error: m.Error}
	}
	return out
}
