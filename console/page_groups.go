package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"skiff/acl"
)

type groupRow struct {
	Group
	Lag         int64
	Coordinator int32
}

type groupsData struct {
	Query string
	Rows  []groupRow
	Errs  []string
}

// groupList is GET /groups?q=: every group of every coordinator, with its total lag.
func (c *Console) groupList(r *http.Request) (rendered, error) {
	query := r.URL.Query().Get("q")
	v := c.gather(r.Context(), Want{AllParts: true})
	d := groupsData{Query: query, Errs: v.errors()}
	for id, a := range v.nodes {
		for _, g := range a.local.Groups {
			if query != "" && !strings.Contains(g.Name, query) || !c.may(r, acl.OpDescribe, acl.ResourceGroup, g.Name) {
				continue
			}
			if g.Type == "share" {
				_, g.Offsets = v.shares(g.Name)
			}
			g.Offsets = c.describable(r, g.Offsets)
			_, lag := v.lag(g)
			d.Rows = append(d.Rows, groupRow{Group: g, Lag: lag, Coordinator: id})
		}
	}
	sortBy(d.Rows, func(g groupRow) string { return g.Name })
	return rendered{page: "groups", title: "Groups", section: "groups", live: true, data: d}, nil
}

type groupData struct {
	Auth   authView
	Topics []string // of its committed offsets
	Group
	Protocol    string
	Coordinator int32
	Lag         int64
	Members     []GroupMember
	Rows        []lagRow
	Shares      []shareRow // of a share group
	Chart       template.HTML
	Errs        []string
}

// group is GET /groups/{group}: members from its coordinator, offsets and lag;
// for a share group its share-partitions from their leaders instead of offsets.
func (c *Console) group(r *http.Request) (rendered, error) {
	name := r.PathValue("group")
	if !c.may(r, acl.OpDescribe, acl.ResourceGroup, name) {
		return rendered{}, forbidden("You may not describe group %q.", name)
	}
	ctx := r.Context()
	v := c.gather(ctx, Want{AllParts: true, Groups: []string{name}})
	id, g, ok := v.coordinatorOf(name)
	if !ok {
		if errs := v.errors(); len(errs) > 0 {
			return rendered{}, &httpError{http.StatusServiceUnavailable, fmt.Sprintf("Group %q was not found, but not every node answered: %s", name, strings.Join(errs, "; "))}
		}
		return rendered{}, notFound("No group %q.", name)
	}
	var shares []shareRow
	if g.Type == "share" {
		shares, g.Offsets = v.shares(name)
		shares = slices.DeleteFunc(shares, func(s shareRow) bool { return !c.may(r, acl.OpDescribe, acl.ResourceTopic, s.Topic) })
	}
	g.Offsets = c.describable(r, g.Offsets)
	d := groupData{Group: g, Coordinator: id, Errs: v.errors(), Auth: c.authView(r), Shares: shares}
	for _, o := range g.Offsets {
		if !slices.Contains(d.Topics, o.Topic) {
			d.Topics = append(d.Topics, o.Topic)
		}
	}
	d.Rows, d.Lag = v.lag(g)
	var gm GroupMembers
	var err error
	if id == c.src.NodeID() {
		gm, ok = c.src.Group(name)
		if !ok {
			err = fmt.Errorf("node %d no longer coordinates the group", id)
		}
	} else if b, berr := v.brokerOf(id); berr != nil {
		err = berr
	} else {
		err = c.peerGet(ctx, b, "/v1/console/group", url.Values{"name": {name}}, &gm)
	}
	if err != nil {
		d.Errs = append(d.Errs, "members: "+err.Error())
	} else {
		d.Protocol, d.Members = gm.Protocol, gm.List
	}
	if a := v.nodes[id]; a != nil && a.local.History != nil {
		d.Chart = chart(fmt.Sprintf("Total lag of group %s, last 15 minutes", name), countUnit, a.local.History.Groups[name])
	} else {
		d.Chart = chart(fmt.Sprintf("Total lag of group %s, last 15 minutes", name), countUnit, nil)
	}
	return rendered{page: "group", title: "Group " + name, section: "groups", live: true, data: d}, nil
}

// describable keeps the offsets of topics r's user may DESCRIBE, as OffsetFetch
// leaves the others out.
func (c *Console) describable(r *http.Request, offsets []Committed) []Committed {
	out := make([]Committed, 0, len(offsets))
	for _, o := range offsets {
		if c.may(r, acl.OpDescribe, acl.ResourceTopic, o.Topic) {
			out = append(out, o)
		}
	}
	return out
}

// errors lists the nodes that did not answer.
func (v *view) errors() []string {
	var out []string
	for _, a := range v.nodes {
		if a.err != nil {
			out = append(out, a.err.Error())
		}
	}
	sortBy(out, func(s string) string { return s })
	return out
}
