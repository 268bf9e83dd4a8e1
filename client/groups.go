package client

// Consumer groups, as `skiff group` administers them through the admin API.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ListGroups writes the groups to w, one per line, sorted; withStates makes it
// a table of each group's state, protocol type and member count.
func (k *Client) ListGroups(ctx context.Context, w io.Writer, withStates bool) error {
	groups, err := k.admin.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list groups: %w", k.Explain(err))
	}
	var described kadm.DescribedGroups
	var consumers kadm.DescribedConsumerGroups
	if withStates && len(groups) > 0 {
		// ListGroups reports states only from v4; DescribeGroups always does, but
		// for KIP-848 groups, which ConsumerGroupDescribe describes.
		var classic, kip848 []string
		for _, g := range groups.Sorted() {
			if g.GroupType == "share" {
				continue // ListGroups v5 has its state; shareMembers counts its members
			}
			if g.GroupType == "consumer" {
				kip848 = append(kip848, g.Group)
			} else {
				classic = append(classic, g.Group)
			}
		}
		if len(classic) > 0 {
			if described, err = k.admin.DescribeGroups(ctx, classic...); err != nil {
				return fmt.Errorf("describe groups: %w", k.Explain(err))
			}
		}
		if len(kip848) > 0 {
			if consumers, err = k.admin.DescribeConsumerGroups(ctx, kip848...); err != nil {
				return fmt.Errorf("describe consumer groups: %w", k.Explain(err))
			}
		}
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if withStates {
		fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE\tMEMBERS")
	}
	for _, g := range groups.Sorted() {
		if !withStates {
			fmt.Fprintln(tw, g.Group)
			continue
		}
		d := described[g.Group]
		state, pt, members := d.State, d.ProtocolType, len(d.Members)
		if d.Err != nil {
			state = "error: " + d.Err.Error()
		}
		if g.GroupType == "share" {
			state, pt, members = g.State, "share", k.shareMembers(ctx, g.Group)
		}
		if cd, ok := consumers[g.Group]; ok {
			state, pt, members = cd.State, "consumer", len(cd.Members)
			if cd.Err != nil {
				state = "error: " + cd.Err.Error()
			}
		}
		if pt == "" {
			pt = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", g.Group, state, pt, members)
	}
	tw.Flush()
	_, err = io.WriteString(w, b.String())
	return err
}

// DescribeGroup returns a group's members, assignments, committed offsets and
// lag. A group that does not exist is an error.
func (k *Client) DescribeGroup(ctx context.Context, group string) (kadm.DescribedGroupLag, error) {
	lags, err := k.admin.Lag(ctx, group)
	if err != nil {
		return kadm.DescribedGroupLag{}, fmt.Errorf("describe group %q: %w", group, k.Explain(err))
	}
	l, ok := lags[group]
	if !ok {
		return l, fmt.Errorf("describe group %q: the broker's answer did not mention the group", group)
	}
	if errors.Is(l.DescribeErr, kerr.GroupIDNotFound) {
		// Kafka describes KIP-848 groups only with ConsumerGroupDescribe.
		return l, fmt.Errorf("describe group %q: %w", group, ErrConsumerGroup)
	}
	if l.DescribeErr != nil {
		return l, fmt.Errorf("describe group %q: %w", group, k.Explain(l.DescribeErr))
	}
	if l.FetchErr != nil {
		return l, fmt.Errorf("fetch the committed offsets of group %q: %w", group, k.Explain(l.FetchErr))
	}
	if l.State == "Dead" && len(l.Lag) == 0 {
		return l, fmt.Errorf("group %q does not exist (list groups with `skiff group list`)", group)
	}
	return l, nil
}

// DeleteGroup deletes a group without members, with its committed offsets.
// With ifExists a missing group is no error; deleted then is false.
func (k *Client) DeleteGroup(ctx context.Context, group string, ifExists bool) (deleted bool, err error) {
	rs, err := k.admin.DeleteGroups(ctx, group)
	if err != nil {
		return false, fmt.Errorf("delete group %q: %w", group, k.Explain(err))
	}
	r, ok := rs[group]
	if !ok {
		return false, fmt.Errorf("delete group %q: the broker's answer did not mention the group", group)
	}
	switch {
	case errors.Is(r.Err, kerr.GroupIDNotFound):
		if ifExists {
			return false, nil
		}
		return false, fmt.Errorf("group %q does not exist (use --if-exists to accept that)", group)
	case errors.Is(r.Err, kerr.NonEmptyGroup):
		return false, activeMembers(group)
	case r.Err != nil:
		return false, fmt.Errorf("delete group %q: %w", group, r.Err)
	}
	return true, nil
}

// checkInactive refuses a group that has members: offsets cannot be committed for
// it from outside (the coordinator answers UNKNOWN_MEMBER_ID), and its consumers
// would overwrite them anyway.
func (k *Client) checkInactive(ctx context.Context, groups ...string) error {
	ds, err := k.admin.DescribeGroups(ctx, groups...)
	if err != nil {
		return fmt.Errorf("describe groups: %w", k.Explain(err))
	}
	var active []string
	for _, g := range groups {
		d, ok := ds[g]
		switch {
		case !ok:
			return fmt.Errorf("describe group %q: the broker's answer did not mention the group", g)
		case d.Err != nil:
			return fmt.Errorf("describe group %q: %w", g, k.Explain(d.Err))
		case d.State != "Empty" && d.State != "Dead":
			active = append(active, fmt.Sprintf("%s (%s, %d members)", g, d.State, len(d.Members)))
		}
	}
	if len(active) > 0 {
		return fmt.Errorf("refusing to change the offsets of groups with active members: %s; stop their consumers first, "+
			"since a broker accepts offsets for a group from outside only while it has no members", strings.Join(active, ", "))
	}
	return nil
}

// commitOffsets commits offs for group from outside the group.
func (k *Client) commitOffsets(ctx context.Context, group string, offs kadm.Offsets) error {
	rs, err := k.admin.CommitOffsets(ctx, group, offs)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", group, commitError(k.Explain(err)))
	}
	return nil
}

// commitError words the refusal of an outside commit to a group that gained members.
func commitError(err error) error {
	if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.RebalanceInProgress) {
		return fmt.Errorf("the group has active members now (stop its consumers first): %w", err)
	}
	return err
}
