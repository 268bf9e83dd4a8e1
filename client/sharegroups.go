package client

// Share groups (KIP-932) in `skiff group describe`: members and their
// assignments (ShareGroupDescribe), and each share-partition's start offset and
// lag (DescribeShareGroupOffsets).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupDescription is a share group as its coordinator describes it.
type ShareGroupDescription struct {
	Group      kmsg.ShareGroupDescribeResponseGroup
	Partitions []SharePartitionOffsets
	// InFlight is set when the partitions' leaders reported their in-flight
	// figures (AddInFlight); InFlightErrors are the nodes that did not answer.
	InFlight       bool
	InFlightErrors []string
}

// SharePartitionOffsets is one share-partition's start offset (SPSO) and lag
// (the records at or above it not yet done; -1 when unknown), and, from its
// leader, its end offset (SPEO), in-flight and acquired records (-1: unknown).
type SharePartitionOffsets struct {
	Topic            string
	Partition        int32
	StartOffset, Lag int64
	Leader           int32
	EndOffset        int64
	InFlight         int
	Acquired         int
}

// SharePartitionStats is one share-partition as its leader reports it.
type SharePartitionStats struct {
	Topic                       string
	Partition, Leader           int32
	StartOffset, EndOffset, Lag int64
	InFlight, Acquired          int
}

// AddInFlight adds the figures the share-partitions' leaders reported to d; a
// share-partition only a leader knows of (no offsets described yet) is added
// with its leader's lag, and one no leader reported keeps unknown figures.
func (d *ShareGroupDescription) AddInFlight(stats []SharePartitionStats, errs []string) {
	d.InFlight, d.InFlightErrors = true, errs
	byTP := make(map[string]int, len(d.Partitions))
	for i := range d.Partitions {
		p := &d.Partitions[i]
		p.Leader, p.EndOffset, p.InFlight, p.Acquired = -1, -1, -1, -1
		byTP[p.Topic+"\x00"+strconv.Itoa(int(p.Partition))] = i
	}
	for _, st := range stats {
		i, ok := byTP[st.Topic+"\x00"+strconv.Itoa(int(st.Partition))]
		if !ok {
			d.Partitions = append(d.Partitions, SharePartitionOffsets{Topic: st.Topic, Partition: st.Partition, StartOffset: st.StartOffset, Lag: -1})
			i = len(d.Partitions) - 1
		}
		p := &d.Partitions[i]
		p.Leader, p.EndOffset, p.InFlight, p.Acquired = st.Leader, st.EndOffset, st.InFlight, st.Acquired
		if p.Lag < 0 { // the coordinator knows the lag only of what it leads
			p.Lag = st.Lag
		}
	}
	sortSharePartitions(d.Partitions)
}

func sortSharePartitions(ps []SharePartitionOffsets) {
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
}

// DescribeShareGroup describes group as a share group; ok is false when the
// cluster has no share group of that name (or does not serve share groups).
func (k *Client) DescribeShareGroup(ctx context.Context, group string) (d ShareGroupDescription, ok bool, err error) {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	resp, err := req.RequestWith(ctx, k.kafka)
	switch {
	case errors.Is(err, kerr.UnsupportedVersion) || err != nil && strings.Contains(err.Error(), "too old"):
		return d, false, nil
	case err != nil:
		return d, false, fmt.Errorf("describe share group %q: %w", group, k.Explain(err))
	case len(resp.Groups) != 1:
		return d, false, fmt.Errorf("describe share group %q: %d groups in the answer", group, len(resp.Groups))
	}
	d.Group = resp.Groups[0]
	if code := d.Group.ErrorCode; code == kerr.GroupIDNotFound.Code {
		return d, false, nil
	} else if code != 0 {
		return d, false, fmt.Errorf("describe share group %q: %w", group, k.Explain(kerr.ErrorForCode(code)))
	}
	oreq := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	oreq.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
	oresp, err := oreq.RequestWith(ctx, k.kafka)
	if err != nil {
		return d, true, fmt.Errorf("describe the offsets of share group %q: %w", group, k.Explain(err))
	}
	for _, g := range oresp.Groups {
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 && p.StartOffset >= 0 {
					d.Partitions = append(d.Partitions, SharePartitionOffsets{Topic: t.Topic, Partition: p.Partition, StartOffset: p.StartOffset, Lag: p.Lag})
				}
			}
		}
	}
	sortSharePartitions(d.Partitions)
	return d, true, nil
}

// WriteShareGroupDescription prints a share group for people:
//
//	group:     orders-workers
//	type:      share
//	state:     Stable
//	epoch:     4
//	members:   2
//
//	MEMBER    CLIENT-ID  HOST        PARTITIONS
//	Yx3...    kgo        /10.0.0.7   orders:0,1
//
//	TOPIC   PARTITION  START-OFFSET  LAG
//	orders  0          120           10
//
// With the leaders' figures (AddInFlight) the partitions' table is
//
//	TOPIC   PARTITION  START-OFFSET  END-OFFSET  IN-FLIGHT  ACQUIRED  LAG  LEADER
//	orders  0          120           130         10         4         10   2
func WriteShareGroupDescription(w io.Writer, d ShareGroupDescription) error {
	g := d.Group
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "group:\t%s\n", g.GroupID)
	fmt.Fprintf(tw, "type:\tshare\n")
	fmt.Fprintf(tw, "state:\t%s\n", g.GroupState)
	fmt.Fprintf(tw, "epoch:\t%d\n", g.GroupEpoch)
	fmt.Fprintf(tw, "members:\t%d\n", len(g.Members))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(g.Members) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\nMEMBER\tCLIENT-ID\tHOST\tPARTITIONS")
		for _, m := range g.Members {
			byTopic := make(map[string][]int32, len(m.Assignment.TopicPartitions))
			for _, tp := range m.Assignment.TopicPartitions {
				byTopic[tp.Topic] = tp.Partitions
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.MemberID, m.ClientID, m.ClientHost, partitionList(byTopic))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(d.Partitions) == 0 {
		_, err := fmt.Fprintln(w, "\nno share-partition state yet")
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !d.InFlight {
		fmt.Fprintln(tw, "\nTOPIC\tPARTITION\tSTART-OFFSET\tLAG")
		for _, p := range d.Partitions {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", p.Topic, p.Partition, p.StartOffset, orUnknown(p.Lag))
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "\nTOPIC\tPARTITION\tSTART-OFFSET\tEND-OFFSET\tIN-FLIGHT\tACQUIRED\tLAG\tLEADER")
	for _, p := range d.Partitions {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, p.StartOffset, orUnknown(p.EndOffset),
			orUnknown(int64(p.InFlight)), orUnknown(int64(p.Acquired)), orUnknown(p.Lag), orUnknown(int64(p.Leader)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range d.InFlightErrors {
		if _, err := fmt.Fprintf(w, "no in-flight figures from %s\n", e); err != nil {
			return err
		}
	}
	return nil
}

// orUnknown prints n, or "-" for a negative (unknown) n.
func orUnknown(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// shareMembers counts a share group's members, 0 when it cannot be described.
func (k *Client) shareMembers(ctx context.Context, group string) int {
	d, ok, err := k.DescribeShareGroup(ctx, group)
	if err != nil || !ok {
		return 0
	}
	return len(d.Group.Members)
}
