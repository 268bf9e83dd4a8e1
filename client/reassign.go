package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
)

// ReassignmentPlan is the JSON plan of kafka-reassign-partitions.sh:
//
//	{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3]}]}
//
// log_dirs, when given, must be "any" (a node has one directory).
type ReassignmentPlan struct {
	Version    int                   `json:"version"`
	Partitions []PartitionAssignment `json:"partitions"`
}

// PartitionAssignment is one partition of a plan.
type PartitionAssignment struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// ParseReassignmentPlan reads and checks a plan.
func ParseReassignmentPlan(r io.Reader) (ReassignmentPlan, error) {
	var plan ReassignmentPlan
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&plan); err != nil {
		return plan, fmt.Errorf("reassignment plan: %w", err)
	}
	if plan.Version != 1 {
		return plan, fmt.Errorf("reassignment plan: version %d, want 1", plan.Version)
	}
	if len(plan.Partitions) == 0 {
		return plan, fmt.Errorf("reassignment plan: no partitions")
	}
	seen := map[string]bool{}
	for _, p := range plan.Partitions {
		where := fmt.Sprintf("%s/%d", p.Topic, p.Partition)
		switch {
		case p.Topic == "" || p.Partition < 0:
			return plan, fmt.Errorf("reassignment plan: partition %q: want a topic and a partition of 0 or more", where)
		case seen[where]:
			return plan, fmt.Errorf("reassignment plan: %s is listed twice", where)
		case len(p.Replicas) == 0:
			return plan, fmt.Errorf("reassignment plan: %s has no replicas", where)
		case len(p.LogDirs) > 0 && (len(p.LogDirs) != len(p.Replicas) || slices.ContainsFunc(p.LogDirs, func(d string) bool { return d != "any" })):
			return plan, fmt.Errorf("reassignment plan: %s: log_dirs must be \"any\" for each replica (a node has one directory)", where)
		}
		seen[where] = true
	}
	return plan, nil
}

// Reassign asks for the plan's moves (AlterPartitionReassignments) and prints one
// line per partition; it fails if any was refused.
func (k *Client) Reassign(ctx context.Context, w io.Writer, plan ReassignmentPlan) error {
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan.Partitions {
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	rs, err := k.admin.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("reassign partitions: %w", k.Explain(err))
	}
	failed := 0
	for _, r := range rs.Sorted() {
		if r.Err != nil {
			failed++
			fmt.Fprintf(w, "%s/%d: refused: %v%s\n", r.Topic, r.Partition, r.Err, BrokerSays(r.ErrMessage))
			continue
		}
		fmt.Fprintf(w, "%s/%d: moving to %s\n", r.Topic, r.Partition, joinIDs(req[r.Topic][r.Partition]))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d reassignments refused", failed, len(plan.Partitions))
	}
	return nil
}

// ListReassignments prints the reassignments in progress, one line per
// partition.
func (k *Client) ListReassignments(ctx context.Context, w io.Writer) error {
	moving, err := k.reassignmentsInProgress(ctx)
	if err != nil {
		return err
	}
	for _, m := range moving {
		fmt.Fprintf(w, "%s/%d: replicas %s, adding %s, removing %s\n", m.Topic, m.Partition,
			joinIDs(m.Replicas), joinIDs(m.AddingReplicas), joinIDs(m.RemovingReplicas))
	}
	if len(moving) == 0 {
		fmt.Fprintln(w, "no reassignment in progress")
	}
	return nil
}

// reassignment is one partition's reassignment in progress.
type reassignment struct {
	Topic string
	kmsg.ListPartitionReassignmentsResponseTopicPartition
}

// reassignmentsInProgress lists every reassignment in progress. kadm asks only
// for partitions named, so the request for all of them (topics null) is sent as
// it is.
func (k *Client) reassignmentsInProgress(ctx context.Context) ([]reassignment, error) {
	resp, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, k.kafka)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, fmt.Errorf("list reassignments: %w", k.Explain(err))
	}
	var out []reassignment
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, reassignment{Topic: t.Topic, ListPartitionReassignmentsResponseTopicPartition: p})
		}
	}
	return out, nil
}

// CancelReassignment cancels the reassignments in progress of the plan's
// partitions (all of them in progress when plan is nil), as
// kafka-reassign-partitions.sh --cancel does: AlterPartitionReassignments with
// null replicas puts each back on its replicas from before the move, and the
// throttle of the moves (the rates and the topics' throttled replicas) is
// cleared. It prints one line per partition; a partition of the plan not being
// moved is said so and left alone.
func (k *Client) CancelReassignment(ctx context.Context, w io.Writer, plan *ReassignmentPlan) error {
	moving, err := k.reassignmentsInProgress(ctx)
	if err != nil {
		return err
	}
	inPlan := func(topic string, partition int32) bool {
		return plan == nil || slices.ContainsFunc(plan.Partitions, func(p PartitionAssignment) bool { return p.Topic == topic && p.Partition == partition })
	}
	var req kadm.AlterPartitionAssignmentsReq
	before := map[string]map[int32][]int32{}
	var topics []string
	for _, m := range moving {
		if !inPlan(m.Topic, m.Partition) {
			continue
		}
		req.CancelAssign(m.Topic, m.Partition)
		if before[m.Topic] == nil {
			before[m.Topic] = map[int32][]int32{}
			topics = append(topics, m.Topic)
		}
		before[m.Topic][m.Partition] = slices.DeleteFunc(slices.Clone(m.Replicas), func(id int32) bool { return slices.Contains(m.AddingReplicas, id) })
	}
	if plan != nil {
		for _, p := range plan.Partitions {
			if _, ok := before[p.Topic][p.Partition]; !ok {
				fmt.Fprintf(w, "%s/%d: no reassignment in progress\n", p.Topic, p.Partition)
			}
		}
	}
	if len(req) == 0 {
		if plan == nil {
			fmt.Fprintln(w, "no reassignment in progress")
		}
		return nil
	}
	rs, err := k.admin.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("cancel reassignments: %w", k.Explain(err))
	}
	failed := 0
	for _, r := range rs.Sorted() {
		switch {
		case errors.Is(r.Err, kerr.NoReassignmentInProgress): // ended meanwhile
			fmt.Fprintf(w, "%s/%d: no reassignment in progress\n", r.Topic, r.Partition)
		case r.Err != nil:
			failed++
			fmt.Fprintf(w, "%s/%d: cancel refused: %v%s\n", r.Topic, r.Partition, r.Err, BrokerSays(r.ErrMessage))
		default:
			fmt.Fprintf(w, "%s/%d: cancelled, back to %s\n", r.Topic, r.Partition, joinIDs(before[r.Topic][r.Partition]))
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d cancels refused", failed, len(rs))
	}
	return k.clearThrottle(ctx, w, topics)
}

// GenerateReassignment proposes a plan moving topics' replicas onto brokers
// (every live broker when empty), keeping each partition's replica count: the
// replicas and preferred leaders spread evenly across them, rack-aware, as new
// topics are placed (cluster.PlaceReplicas).
func (k *Client) GenerateReassignment(ctx context.Context, topics []string, brokers []int32) (ReassignmentPlan, error) {
	plan := ReassignmentPlan{Version: 1}
	md, err := k.admin.Metadata(ctx, topics...)
	if err != nil {
		return plan, fmt.Errorf("generate a reassignment: %w", k.Explain(err))
	}
	var targets []cluster.Broker
	for _, b := range md.Brokers {
		if len(brokers) == 0 || slices.Contains(brokers, b.NodeID) {
			targets = append(targets, cluster.Broker{ID: b.NodeID, Rack: deref(b.Rack)})
		}
	}
	for _, id := range brokers {
		if !slices.ContainsFunc(targets, func(b cluster.Broker) bool { return b.ID == id }) {
			return plan, fmt.Errorf("generate a reassignment: broker %d is not live", id)
		}
	}
	slices.SortFunc(targets, func(a, b cluster.Broker) int { return cmp.Compare(a.ID, b.ID) })
	load := map[int32]cluster.BrokerLoad{}
	for _, name := range topics {
		td, ok := md.Topics[name]
		switch {
		case !ok:
			return plan, fmt.Errorf("generate a reassignment: the broker's answer did not mention topic %q", name)
		case td.Err != nil:
			return plan, TopicError(name, td.Err)
		}
		parts := td.Partitions.Sorted()
		rf := int16(replicationFactor(td.Partitions))
		placed, err := cluster.PlaceReplicas(targets, load, int32(len(parts)), rf)
		if err != nil {
			return plan, fmt.Errorf("generate a reassignment of %q onto %d brokers: %w", name, len(targets), err)
		}
		for i, p := range parts {
			plan.Partitions = append(plan.Partitions, PartitionAssignment{Topic: name, Partition: p.Partition, Replicas: placed[i]})
			for j, b := range placed[i] {
				l := load[b]
				l.Replicas++
				if j == 0 {
					l.Leaders++
				}
				load[b] = l
			}
		}
	}
	return plan, nil
}

// WritePlan writes a plan as kafka-reassign-partitions.sh does: one line of JSON.
func WritePlan(w io.Writer, plan ReassignmentPlan) error {
	b, err := json.Marshal(plan)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}
