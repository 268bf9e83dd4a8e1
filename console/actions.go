package console

// The write actions: create a topic, change a topic config, reset a group's
// offsets, delete a group, remove a node. Each is a form post that needs an admin
// session and its CSRF token (else 403), and what Kafka's ACLs would ask for the
// same operation (CREATE on the cluster or topic, ALTER_CONFIGS on the topic, READ
// on the group and its topics, DELETE on the group, ALTER on the cluster), answered first with a confirmation page
// (for a reset, a dry run of the old and new offsets) whose own post, carrying
// confirm=1, does it.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"skiff/acl"
	"skiff/cluster"
)

func (c *Console) actionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /topics", c.action(c.createTopic))
	mux.HandleFunc("POST /topics/{topic}/config", c.action(c.setConfig))
	mux.HandleFunc("POST /groups/{group}/reset", c.action(c.resetOffsets))
	mux.HandleFunc("POST /groups/{group}/delete", c.action(c.deleteGroup))
	mux.HandleFunc("POST /nodes/{id}/remove", c.action(c.removeNode))
}

// confirmData is the confirmation page of an action.
type confirmData struct {
	Title, Button, Action, Back, CSRF string
	Lines                             []string
	Fields                            []field
	Rows                              []resetRow
	Danger                            bool
}

type field struct{ Name, Value string }

type resetRow struct {
	Committed
	Old, New int64
}

// actionFunc handles a checked post: confirmed says whether it carries confirm=1.
// It returns the confirmation page, or where to go once done.
type actionFunc func(r *http.Request, s *session, confirmed bool) (page *confirmData, done string, err error)

// action checks the session (an admin's) and the CSRF token, then runs fn.
func (c *Console) action(fn actionFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c.setHeaders(w)
		if !c.src.Started() {
			c.renderError(w, r, http.StatusServiceUnavailable, "Starting", "The node is starting; try again once it serves.")
			return
		}
		s := c.auth.of(r)
		switch {
		case c.admin == nil:
			c.renderError(w, r, http.StatusForbidden, "Forbidden", "This console is read-only.")
			return
		case s == nil:
			c.renderError(w, r, http.StatusForbidden, "Forbidden", "Sign in as an admin (a user of console-admins) to change the cluster.")
			return
		case !s.Admin:
			c.renderError(w, r, http.StatusForbidden, "Forbidden", fmt.Sprintf("%s is not an admin of this console (console-admins).", s.User))
			return
		case !c.csrfOK(r, s):
			c.renderError(w, r, http.StatusForbidden, "Forbidden", "The form's token is missing or stale: reload the page and try again.")
			return
		}
		page, done, err := fn(r, s, r.PostFormValue("confirm") == "1")
		switch {
		case err != nil:
			c.renderFailure(w, r, err)
		case page != nil:
			page.CSRF = s.CSRF
			c.render(w, r, http.StatusOK, rendered{page: "confirm", title: page.Title, data: page})
		default:
			http.Redirect(w, r, done, http.StatusSeeOther)
		}
	}
}

// createTopic: name, partitions and replication factor (empty: the defaults).
func (c *Console) createTopic(r *http.Request, _ *session, confirmed bool) (*confirmData, string, error) {
	name := r.PostFormValue("name")
	if err := cluster.ValidTopicName(name); err != nil {
		return nil, "", badInput("%v", err)
	}
	partitions, err1 := optionalInt(r.PostFormValue("partitions"), 1, cluster.MaxPartitions)
	rf, err2 := optionalInt(r.PostFormValue("replication_factor"), 1, 32767)
	if err := errors.Join(err1, err2); err != nil {
		return nil, "", badInput("%v", err)
	}
	if !c.may(r, acl.OpCreate, acl.ResourceCluster, acl.ClusterName) && !c.may(r, acl.OpCreate, acl.ResourceTopic, name) {
		return nil, "", forbidden("The ACLs do not let you create topic %q.", name)
	}
	if !confirmed {
		return &confirmData{Title: "Create topic " + name, Button: "Create the topic", Action: "/topics", Back: "/topics",
			Lines:  []string{fmt.Sprintf("Create topic %q with %s partitions and replication factor %s.", name, orDefault(partitions), orDefault(rf))},
			Fields: []field{{"name", name}, {"partitions", r.PostFormValue("partitions")}, {"replication_factor", r.PostFormValue("replication_factor")}}}, "", nil
	}
	if err := c.admin.CreateTopic(r.Context(), name, int32(partitions), int16(rf)); err != nil {
		return nil, "", badInput("create topic %s: %v", name, err)
	}
	return nil, "/topics/" + url.PathEscape(name), nil
}

// optionalInt parses a form number in [lo, hi]; empty is -1 (the default).
func optionalInt(s string, lo, hi int) (int, error) {
	if s == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q: want a whole number from %d to %d", s, lo, hi)
	}
	return n, nil
}

func orDefault(n int) string {
	if n < 0 {
		return "the default number of"
	}
	return strconv.Itoa(n)
}

// setConfig: one topic config, name and value (empty: back to the default).
func (c *Console) setConfig(r *http.Request, _ *session, confirmed bool) (*confirmData, string, error) {
	topic, name, value := r.PathValue("topic"), r.PostFormValue("name"), r.PostFormValue("value")
	if !c.may(r, acl.OpAlterConfigs, acl.ResourceTopic, topic) {
		return nil, "", forbidden("The ACLs do not let you change the configs of topic %q.", topic)
	}
	t, ok := c.src.Snapshot().Topic(topic)
	if !ok {
		return nil, "", notFound("No topic %q.", topic)
	}
	spec, ok := cluster.LookupTopicConfig(name)
	if !ok {
		return nil, "", badInput("%q is not a topic config", name)
	}
	if value != "" {
		if err := spec.Validate(value); err != nil {
			return nil, "", badInput("%s: %v", name, err)
		}
	}
	back := "/topics/" + url.PathEscape(topic)
	if !confirmed {
		now := cluster.EffectiveTopicConfig(t, c.src.BrokerDefaults(), name)
		line := fmt.Sprintf("Set %s of topic %s from %q to %q.", name, topic, now, value)
		if value == "" {
			line = fmt.Sprintf("Remove the override of %s of topic %s (now %q): it takes the default again.", name, topic, now)
		}
		return &confirmData{Title: "Change " + name + " of " + topic, Button: "Change it", Action: back + "/config", Back: back,
			Lines: []string{line}, Fields: []field{{"name", name}, {"value", value}}}, "", nil
	}
	if err := c.admin.SetTopicConfig(r.Context(), topic, name, value); err != nil {
		return nil, "", badInput("set %s of %s: %v", name, topic, err)
	}
	return nil, back, nil
}

// resetOffsets: to=earliest|latest|timestamp (at= Unix ms), of one topic or all
// the group's committed topics. The first post is the dry run.
func (c *Console) resetOffsets(r *http.Request, _ *session, confirmed bool) (*confirmData, string, error) {
	ctx := r.Context()
	group, topic, to, at := r.PathValue("group"), r.PostFormValue("topic"), r.PostFormValue("to"), r.PostFormValue("at")
	if !c.may(r, acl.OpRead, acl.ResourceGroup, group) {
		return nil, "", forbidden("The ACLs do not let you commit offsets for group %q.", group)
	}
	v := c.gather(ctx, Want{AllParts: true})
	coord, g, ok := v.coordinatorOf(group)
	if !ok {
		return nil, "", notFound("No group %q with committed offsets.", group)
	}
	if g.Members > 0 {
		return nil, "", &httpError{http.StatusConflict, fmt.Sprintf("Group %q has %d members: stop its consumers before resetting its offsets.", group, g.Members)}
	}
	ts, err := strconv.ParseInt(at, 10, 64)
	if to == "timestamp" && err != nil {
		return nil, "", badInput("timestamp %q: want Unix milliseconds", at)
	}
	var rows []resetRow
	for _, o := range g.Offsets {
		if topic != "" && o.Topic != topic {
			continue
		}
		if !c.may(r, acl.OpRead, acl.ResourceTopic, o.Topic) {
			return nil, "", forbidden("The ACLs do not let you commit offsets of topic %q.", o.Topic)
		}
		rep, ok := v.leaders[tpKey{o.Topic, o.Partition}]
		if !ok {
			return nil, "", fmt.Errorf("the leader of %s partition %d did not answer: no reset now", o.Topic, o.Partition)
		}
		row := resetRow{Committed: o, Old: o.Offset}
		switch to {
		case "earliest":
			row.New = rep.LogStart
		case "latest":
			row.New = rep.HWM
		case "timestamp":
			st, _ := v.snap.Partition(o.Topic, o.Partition)
			if row.New, err = c.offsetFor(ctx, v.snap, st.Leader, o.Topic, o.Partition, ts); err != nil {
				return nil, "", err
			}
		default:
			return nil, "", badInput("to %q: want earliest, latest or timestamp", to)
		}
		row.Offset = row.New
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, "", badInput("group %q has no committed offsets of topic %q", group, topic)
	}
	back := "/groups/" + url.PathEscape(group)
	if !confirmed {
		return &confirmData{Title: "Reset the offsets of " + group, Button: "Reset the offsets", Action: back + "/reset", Back: back, Danger: true,
			Lines:  []string{fmt.Sprintf("Commit these offsets for group %q (to the %s offsets). Its consumers will start from them.", group, to)},
			Fields: []field{{"topic", topic}, {"to", to}, {"at", at}}, Rows: rows}, "", nil
	}
	offsets := make([]Committed, len(rows))
	for i, row := range rows {
		offsets[i] = row.Committed
	}
	if err := c.onCoordinator(ctx, v, coord, "/v1/console/group/commit", groupWrite{Group: group, Offsets: offsets},
		func(ctx context.Context) error { return c.admin.CommitOffsets(ctx, group, offsets) }); err != nil {
		return nil, "", err
	}
	return nil, back, nil
}

// deleteGroup deletes a group without members.
func (c *Console) deleteGroup(r *http.Request, _ *session, confirmed bool) (*confirmData, string, error) {
	ctx := r.Context()
	group := r.PathValue("group")
	if !c.may(r, acl.OpDelete, acl.ResourceGroup, group) {
		return nil, "", forbidden("The ACLs do not let you delete group %q.", group)
	}
	v := c.gather(ctx, Want{})
	coord, g, ok := v.coordinatorOf(group)
	if !ok {
		return nil, "", notFound("No group %q.", group)
	}
	back := "/groups/" + url.PathEscape(group)
	if !confirmed {
		return &confirmData{Title: "Delete group " + group, Button: "Delete the group", Action: back + "/delete", Back: back, Danger: true,
			Lines: []string{fmt.Sprintf("Delete group %q and its %d committed offsets. This cannot be undone.", group, len(g.Offsets))}}, "", nil
	}
	if err := c.onCoordinator(ctx, v, coord, "/v1/console/group/delete", groupWrite{Group: group},
		func(ctx context.Context) error { return c.admin.DeleteGroup(ctx, group) }); err != nil {
		return nil, "", err
	}
	return nil, "/groups", nil
}

// removeNode removes a node from the cluster (drain=1: drain it first).
func (c *Console) removeNode(r *http.Request, _ *session, confirmed bool) (*confirmData, string, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		return nil, "", badInput("%q is not a node id", r.PathValue("id"))
	}
	if !c.may(r, acl.OpAlter, acl.ResourceCluster, acl.ClusterName) {
		return nil, "", forbidden("The ACLs do not let you alter the cluster.")
	}
	drain := r.PostFormValue("drain") == "1"
	back := fmt.Sprintf("/nodes/%d", id)
	if !confirmed {
		line := fmt.Sprintf("Remove node %d from the cluster: its etcd member is removed and it can never rejoin with its data.", id)
		if drain {
			line = fmt.Sprintf("Drain node %d (the controller moves its replicas to other nodes), then remove it; ask again once drained.", id)
		}
		return &confirmData{Title: fmt.Sprintf("Remove node %d", id), Button: "Remove the node", Action: back + "/remove", Back: back, Danger: true,
			Lines: []string{line}, Fields: []field{{"drain", r.PostFormValue("drain")}}}, "", nil
	}
	msg, err := c.admin.RemoveNode(r.Context(), int32(id), drain)
	if err != nil {
		return nil, "", &httpError{http.StatusConflict, err.Error()}
	}
	c.logger.Info("console: node removal", "node", id, "drain", drain, "result", msg)
	return nil, "/", nil
}

// groupWrite is the body of the internal group writes.
type groupWrite struct {
	Group   string      `json:"group"`
	Offsets []Committed `json:"offsets,omitempty"`
}

// onCoordinator runs a group write on the group's coordinator: here directly,
// elsewhere over the internal API.
func (c *Console) onCoordinator(ctx context.Context, v *view, coord int32, path string, body groupWrite, local func(context.Context) error) error {
	if coord == c.src.NodeID() {
		return local(ctx)
	}
	b, err := v.brokerOf(coord)
	if err != nil {
		return err
	}
	return c.peerPost(ctx, b, path, body)
}
