package client

// Offset snapshots: back up consumer groups' committed offsets and load them
// into a cluster (the same or another) through the Kafka API only (ListGroups,
// OffsetFetch, DescribeGroups, OffsetCommit), for `skiff offsets`.

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"skiff/internal/offsetsnap"
)

// SnapshotOffsets fetches the committed offsets of every group matching
// filter (nil: every group). groups counts the groups with at least one offset.
func (k *Client) SnapshotOffsets(ctx context.Context, filter *regexp.Regexp) (snap *offsetsnap.Snapshot, groups int, err error) {
	rctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	listed, err := k.admin.ListGroups(rctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list groups: %w", k.Explain(err))
	}
	snap = &offsetsnap.Snapshot{TakenAt: time.Now().UnixMilli()}
	for _, g := range listed.Sorted() {
		if filter != nil && !filter.MatchString(g.Group) {
			continue
		}
		rctx, cancel := k.RequestCtx(ctx)
		rs, err := k.admin.FetchOffsets(rctx, g.Group)
		cancel()
		if err != nil {
			return nil, 0, fmt.Errorf("fetch the committed offsets of group %q: %w", g.Group, k.Explain(err))
		}
		if err := rs.Error(); err != nil {
			return nil, 0, fmt.Errorf("fetch the committed offsets of group %q: %w", g.Group, err)
		}
		n := 0
		for _, r := range rs.Sorted() {
			if r.At < 0 {
				continue
			}
			snap.Offsets = append(snap.Offsets, offsetsnap.Offset{
				Group: g.Group, Topic: r.Topic, Partition: r.Partition,
				Offset: r.At, LeaderEpoch: r.LeaderEpoch, CommitTime: -1, Metadata: r.Metadata,
			})
			n++
		}
		if n > 0 {
			groups++
		}
	}
	return snap, groups, nil
}

// GroupOffsets is a snapshot's offsets by group.
type GroupOffsets map[string]kadm.Offsets

// OffsetsByGroup groups snap's offsets, keeping the groups that match filter
// (nil: every group).
func OffsetsByGroup(snap *offsetsnap.Snapshot, filter *regexp.Regexp) GroupOffsets {
	byGroup := make(GroupOffsets)
	for _, o := range snap.Offsets {
		if filter != nil && !filter.MatchString(o.Group) {
			continue
		}
		offs := byGroup[o.Group]
		offs.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata})
		byGroup[o.Group] = offs
	}
	return byGroup
}

// Groups lists the groups, sorted.
func (g GroupOffsets) Groups() []string {
	groups := make([]string, 0, len(g))
	for name := range g {
		groups = append(groups, name)
	}
	sort.Strings(groups)
	return groups
}

// RestoreStats count what RestoreOffsets committed, or would commit.
type RestoreStats struct {
	Offsets int // offsets in the restore
	Changed int // of them, those that differ from the group's committed offset
}

// RestoreOffsets commits byGroup's offsets, after printing each partition's old
// and new offset to out; with dryRun it commits nothing. It refuses the whole
// restore if a group has active members (a broker accepts offsets from outside
// only for a group without members) or a partition no longer exists.
func (k *Client) RestoreOffsets(ctx context.Context, byGroup GroupOffsets, dryRun bool, out io.Writer) (RestoreStats, error) {
	var st RestoreStats
	groups := byGroup.Groups()
	if err := k.checkInactive(ctx, groups...); err != nil {
		return st, err
	}
	if err := k.checkPartitions(ctx, byGroup); err != nil {
		return st, err
	}

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tOLD\tNEW")
	for _, g := range groups {
		old, err := k.admin.FetchOffsets(ctx, g)
		if err != nil {
			return st, fmt.Errorf("fetch the committed offsets of group %q: %w", g, k.Explain(err))
		}
		for _, o := range byGroup[g].Sorted() {
			was := "-"
			if r, ok := old.Lookup(o.Topic, o.Partition); ok && r.Err == nil && r.At >= 0 {
				was = strconv.FormatInt(r.At, 10)
			}
			if was != strconv.FormatInt(o.At, 10) {
				st.Changed++
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", g, o.Topic, o.Partition, was, o.At)
		}
	}
	if err := tw.Flush(); err != nil {
		return st, err
	}
	for _, g := range groups {
		st.Offsets += len(byGroup[g].Sorted())
	}
	if dryRun {
		return st, nil
	}
	for _, g := range groups {
		if err := k.commitOffsets(ctx, g, byGroup[g]); err != nil {
			return st, err
		}
	}
	return st, nil
}

// checkPartitions refuses a restore naming partitions that do not exist.
func (k *Client) checkPartitions(ctx context.Context, byGroup GroupOffsets) error {
	topics := make(map[string]bool)
	for _, offs := range byGroup {
		for t := range offs {
			topics[t] = true
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	tds, err := k.admin.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("look up topics: %w", k.Explain(err))
	}
	var missing []string
	for g, offs := range byGroup {
		for _, o := range offs.Sorted() {
			td, ok := tds[o.Topic]
			if !ok || td.Err != nil {
				missing = append(missing, fmt.Sprintf("%s/%s (topic missing)", g, o.Topic))
				continue
			}
			if _, ok := td.Partitions[o.Partition]; !ok {
				missing = append(missing, fmt.Sprintf("%s/%s/%d (partition missing)", g, o.Topic, o.Partition))
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		missing = compactStrings(missing)
		return fmt.Errorf("refusing to restore: the cluster lacks %s; create the topics first or narrow the restore with --group", strings.Join(missing, ", "))
	}
	return nil
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
