package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"skiff/acl"
	"skiff/cluster"
)

// defaultPerPage is the topics list's page size; per= asks for up to maxPerPage.
const (
	defaultPerPage = 100
	maxPerPage     = 1000
)

type topicRow struct {
	Name           string
	Partitions     int32
	RF             int16
	Size           int64
	Rate           float32
	Cleanup, Flush string
	Offline, Under int
}

type topicsData struct {
	Auth             authView
	Query            string
	Internal         bool
	Total, Matched   int
	Page, Pages      int
	PrevURL, NextURL string
	Rows             []topicRow
}

// topics is GET /topics?q=&internal=1&page=N&per=N: the topics whose name holds q,
// a page at a time; only the topics of the page are asked of the other nodes.
func (c *Console) topics(r *http.Request) (rendered, error) {
	q := r.URL.Query()
	d := topicsData{Query: q.Get("q"), Internal: q.Get("internal") != "", Auth: c.authView(r)}
	per := intParam(q, "per", defaultPerPage, 1, maxPerPage)
	d.Page = intParam(q, "page", 1, 1, 1<<30)
	snap := c.src.Snapshot()
	names := snap.TopicNames()
	d.Total = len(names)
	var matched []string
	for _, n := range names {
		if !d.Internal && strings.HasPrefix(n, "__") {
			continue
		}
		if (d.Query == "" || strings.Contains(n, d.Query)) && c.may(r, acl.OpDescribe, acl.ResourceTopic, n) {
			matched = append(matched, n)
		}
	}
	d.Matched = len(matched)
	d.Pages = max((len(matched)+per-1)/per, 1)
	d.Page = min(d.Page, d.Pages)
	page := matched[min((d.Page-1)*per, len(matched)):min(d.Page*per, len(matched))]
	v := c.gather(r.Context(), Want{Parts: page})
	rates := v.rates()
	defaults := c.src.BrokerDefaults()
	d.Rows = make([]topicRow, 0, len(page))
	for _, name := range page {
		t, _ := snap.Topic(name)
		row := topicRow{Name: name, Partitions: t.Partitions, RF: t.ReplicationFactor, Rate: rates[name],
			Cleanup: cluster.EffectiveTopicConfig(t, defaults, "cleanup.policy"),
			Flush:   cluster.EffectiveTopicConfig(t, defaults, "flush.policy")}
		if _, ok := rates[name]; !ok {
			row.Rate = nan32()
		}
		for p := range t.Partitions {
			st, ok := snap.Partition(name, p)
			switch {
			case !ok || st.Leader == cluster.NoLeader:
				row.Offline++
			case len(st.ISR) < len(t.Assignment[p]):
				row.Under++
			}
			row.Size += v.leaders[tpKey{name, p}].Size
		}
		d.Rows = append(d.Rows, row)
	}
	link := func(page int) string {
		u := url.Values{}
		if d.Query != "" {
			u.Set("q", d.Query)
		}
		if d.Internal {
			u.Set("internal", "1")
		}
		if per != defaultPerPage {
			u.Set("per", strconv.Itoa(per))
		}
		u.Set("page", strconv.Itoa(page))
		return "/topics?" + u.Encode()
	}
	d.PrevURL, d.NextURL = link(d.Page-1), link(d.Page+1)
	return rendered{page: "topics", title: "Topics", section: "topics", live: true, data: d}, nil
}

// rates sums the nodes' latest messages per second by topic.
func (v *view) rates() map[string]float32 {
	out := map[string]float32{}
	for _, a := range v.nodes {
		if a.err != nil || a.local.History == nil {
			continue
		}
		for t, r := range a.local.History.Rates {
			out[t] += r
		}
	}
	return out
}

func intParam(q url.Values, name string, def, lo, hi int) int {
	n, err := strconv.Atoi(q.Get(name))
	if err != nil {
		return def
	}
	return min(max(n, lo), hi)
}

type partRow struct {
	Partition      int32
	Leader         int32
	Replicas, ISR  []int32
	Known          bool
	LogStart, HWM  int64
	Size, Unsynced int64
}

type topicData struct {
	Auth           authView
	ConfigNames    []string
	Name, ID       string
	PartitionCount int32
	RF             int16
	Size           int64
	Rate           float32
	Chart          template.HTML
	Parts          []partRow
	Configs        []cluster.ConfigEntry
}

// topicOf returns the topic a page is about, if r's user may do op on it (403
// otherwise, 404 if there is no such topic).
func (c *Console) topicOf(r *http.Request, name string, op acl.Operation) (*cluster.Snapshot, cluster.Topic, error) {
	if !c.may(r, op, acl.ResourceTopic, name) {
		return nil, cluster.Topic{}, forbidden("You may not %s topic %q.", strings.ToLower(op.String()), name)
	}
	snap := c.src.Snapshot()
	t, ok := snap.Topic(name)
	if !ok {
		return nil, cluster.Topic{}, notFound("No topic %q.", name)
	}
	return snap, t, nil
}

// topic is GET /topics/{topic}.
func (c *Console) topic(r *http.Request) (rendered, error) {
	name := r.PathValue("topic")
	snap, t, err := c.topicOf(r, name, acl.OpDescribe)
	if err != nil {
		return rendered{}, err
	}
	v := c.gather(r.Context(), Want{Topics: []string{name}, Parts: []string{name}})
	d := topicData{Name: name, ID: cluster.FormatUUID(t.ID), PartitionCount: t.Partitions, RF: t.ReplicationFactor,
		Configs: cluster.DescribeTopicConfigs(t, c.src.BrokerDefaults()), Auth: c.authView(r)}
	for _, spec := range cluster.TopicConfigSpecs() {
		d.ConfigNames = append(d.ConfigNames, spec.Name)
	}
	rate, ok := v.rates()[name]
	d.Rate = rate
	if !ok {
		d.Rate = nan32()
	}
	var series [][]float32
	for _, a := range v.nodes {
		if a.err == nil && a.local.History != nil {
			if s, ok := a.local.History.Topics[name]; ok {
				series = append(series, s)
			}
		}
	}
	d.Chart = chart(fmt.Sprintf("Messages per second of %s, last 15 minutes", name), countUnit, sumSeries(series))
	for p := range t.Partitions {
		row := partRow{Partition: p, Leader: cluster.NoLeader, Replicas: t.Assignment[p]}
		if st, ok := snap.Partition(name, p); ok {
			row.Leader, row.ISR = st.Leader, st.ISR
		}
		if rep, ok := v.leaders[tpKey{name, p}]; ok {
			row.Known = true
			row.LogStart, row.HWM, row.Size, row.Unsynced = rep.LogStart, rep.HWM, rep.Size, rep.Unsynced
			d.Size += rep.Size
		}
		d.Parts = append(d.Parts, row)
	}
	return rendered{page: "topic", title: "Topic " + name, section: "topics", live: true, data: d}, nil
}
