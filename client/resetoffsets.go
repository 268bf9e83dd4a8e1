package client

// ResetOffsets: set a group's committed offsets of a topic, for
// `skiff group reset-offsets`.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ResetTo is where ResetOffsets moves each partition's committed offset.
type ResetTo int

const (
	ResetToEarliest ResetTo = iota // the log start
	ResetToLatest                  // the log end
	ResetToOffset                  // ResetOptions.Offset, clamped to the log
	ResetToTime                    // the first record at or after ResetOptions.Time; the log end if none
)

// ResetOptions say which offsets ResetOffsets sets, and to what.
type ResetOptions struct {
	Group, Topic string
	To           ResetTo
	Offset       int64     // with ResetToOffset, at least 0
	Time         time.Time // with ResetToTime
	DryRun       bool      // print the table, commit nothing
	Out          io.Writer // the table of old and new offsets
}

// ResetOffsets commits new offsets of every partition of o.Topic for o.Group,
// which must have no active members, after printing each partition's old and
// new offset to o.Out. It returns the number of partitions. For a share group
// the offsets are the share-partitions' start offsets (AlterShareGroupOffsets).
func (k *Client) ResetOffsets(ctx context.Context, o ResetOptions) (int, error) {
	partitions, err := k.TopicPartitions(ctx, o.Topic)
	if err != nil {
		return 0, err
	}
	ctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	share, isShare, err := k.DescribeShareGroup(ctx, o.Group)
	switch {
	case err != nil:
		return 0, err
	case isShare && len(share.Group.Members) > 0:
		return 0, activeMembers(o.Group)
	case !isShare:
		if err := k.checkInactive(ctx, o.Group); err != nil {
			return 0, err
		}
	}
	next, err := k.resetTargets(ctx, o, partitions)
	if err != nil {
		return 0, err
	}
	old := make(kadm.Offsets)
	if isShare {
		for _, p := range share.Partitions {
			old.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.StartOffset})
		}
	} else {
		fetched, err := k.admin.FetchOffsetsForTopics(ctx, o.Group, o.Topic)
		if err != nil {
			return 0, fmt.Errorf("fetch the committed offsets of group %q: %w", o.Group, k.Explain(err))
		}
		fetched.Each(func(r kadm.OffsetResponse) {
			if r.Err == nil {
				old.Add(r.Offset)
			}
		})
	}
	tw := tabwriter.NewWriter(o.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tOLD\tNEW")
	for _, p := range partitions {
		was := "-"
		if r, ok := old.Lookup(o.Topic, p); ok && r.At >= 0 {
			was = strconv.FormatInt(r.At, 10)
		}
		n, _ := next.Lookup(o.Topic, p)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", o.Topic, p, was, n.At)
	}
	if err := tw.Flush(); err != nil {
		return 0, err
	}
	if o.DryRun {
		return len(partitions), nil
	}
	if isShare {
		return len(partitions), k.alterShareOffsets(ctx, o.Group, next)
	}
	return len(partitions), k.commitOffsets(ctx, o.Group, next)
}

// alterShareOffsets sets the start offsets of a share group's share-partitions.
func (k *Client) alterShareOffsets(ctx context.Context, group string, offs kadm.Offsets) error {
	rs, err := k.admin.AlterShareGroupOffsets(ctx, group, offs)
	if err == nil {
		err = rs.Error()
	}
	switch {
	case errors.Is(err, kerr.NonEmptyGroup):
		return activeMembers(group)
	case err != nil:
		return fmt.Errorf("set the start offsets of share group %q: %w", group, k.Explain(err))
	}
	return nil
}

// activeMembers is the refusal to change a group that has members.
func activeMembers(group string) error {
	return fmt.Errorf("group %q has active members: stop its consumers first (`skiff group describe %s` lists them)", group, group)
}

// resetTargets lists the topic's offsets and returns each partition's new offset.
func (k *Client) resetTargets(ctx context.Context, o ResetOptions, partitions []int32) (kadm.Offsets, error) {
	starts, err := k.admin.ListStartOffsets(ctx, o.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets of topic %q: %w", o.Topic, k.Explain(err))
	}
	ends, err := k.admin.ListEndOffsets(ctx, o.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets of topic %q: %w", o.Topic, k.Explain(err))
	}
	var after kadm.ListedOffsets
	if !o.Time.IsZero() { // ResetToTime
		if after, err = k.admin.ListOffsetsAfterMilli(ctx, o.Time.UnixMilli(), o.Topic); err == nil {
			err = after.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("find offsets of topic %q at %s: %w", o.Topic, o.Time.Format(time.RFC3339), k.Explain(err))
		}
	}
	next := make(kadm.Offsets)
	for _, p := range partitions {
		s, _ := starts.Lookup(o.Topic, p)
		e, _ := ends.Lookup(o.Topic, p)
		var at int64
		switch o.To {
		case ResetToEarliest:
			at = s.Offset
		case ResetToLatest:
			at = e.Offset
		case ResetToOffset:
			at = max(s.Offset, min(o.Offset, e.Offset))
		default:
			at = e.Offset
			if a, ok := after.Lookup(o.Topic, p); ok && a.Offset >= 0 {
				at = a.Offset
			}
		}
		next.Add(kadm.Offset{Topic: o.Topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	return next, nil
}
