package client

// KIP-848 consumer groups, which DescribeGroups does not describe: `skiff group
// describe` shows them with ConsumerGroupDescribe (epochs, current and target
// assignments) and their committed offsets and lag.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ErrConsumerGroup: DescribeGroup was asked for a KIP-848 consumer group, which
// DescribeConsumerGroup describes.
var ErrConsumerGroup = errors.New("client: the group uses the consumer group protocol (KIP-848)")

// ConsumerGroupDescription is a KIP-848 group with its committed offsets.
type ConsumerGroupDescription struct {
	kadm.DescribedConsumerGroup
	Offsets []OffsetRow // by topic, then partition
}

// OffsetRow is one partition of a group: its committed offset (-1: none), log
// end offset (-1: unknown), lag (-1: unknown) and the member it is assigned to.
type OffsetRow struct {
	Topic               string
	Partition           int32
	Committed, End, Lag int64
	Member              string
}

// DescribeConsumerGroup describes a KIP-848 consumer group: members with their
// epochs, current and target assignments, and the group's committed offsets and
// lag on every partition committed or assigned.
func (k *Client) DescribeConsumerGroup(ctx context.Context, group string) (ConsumerGroupDescription, error) {
	ds, err := k.admin.DescribeConsumerGroups(ctx, group)
	if err == nil {
		err = ds.Error()
	}
	if err != nil {
		return ConsumerGroupDescription{}, fmt.Errorf("describe consumer group %q: %w", group, k.Explain(err))
	}
	d := ConsumerGroupDescription{DescribedConsumerGroup: ds[group]}
	committed, err := k.admin.FetchOffsets(ctx, group)
	if err != nil {
		return d, fmt.Errorf("fetch the committed offsets of group %q: %w", group, k.Explain(err))
	}
	owner := map[string]map[int32]string{}
	topics := kadm.TopicsSet{}
	for _, m := range d.Members {
		m.Assignment.Each(func(t string, p int32) {
			if owner[t] == nil {
				owner[t] = map[int32]string{}
			}
			owner[t][p] = m.MemberID
		})
		topics.Merge(m.Assignment)
	}
	committed.Each(func(o kadm.OffsetResponse) { topics.Add(o.Topic, o.Partition) })
	ends := kadm.ListedOffsets{}
	if len(topics) > 0 {
		if ends, err = k.admin.ListEndOffsets(ctx, topics.Topics()...); err != nil {
			return d, fmt.Errorf("list the end offsets of group %q's topics: %w", group, k.Explain(err))
		}
	}
	topics.Each(func(t string, p int32) {
		r := OffsetRow{Topic: t, Partition: p, Committed: -1, End: -1, Lag: -1, Member: owner[t][p]}
		if o, ok := committed.Lookup(t, p); ok && o.Err == nil {
			r.Committed = o.At
		}
		if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
			r.End = e.Offset
		}
		if r.Committed >= 0 && r.End >= 0 {
			r.Lag = max(r.End-r.Committed, 0)
		}
		d.Offsets = append(d.Offsets, r)
	})
	sort.Slice(d.Offsets, func(i, j int) bool {
		a, b := d.Offsets[i], d.Offsets[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return d, nil
}

// WriteConsumerGroupDescription prints a KIP-848 group for people:
//
//	group:             orders
//	type:              consumer (KIP-848)
//	state:             Reconciling
//	group epoch:       7
//	assignment epoch:  7
//	assignor:          uniform
//	coordinator:       1 (localhost:9092)
//	members:           2
//
//	MEMBER    EPOCH  CLIENT-ID  HOST        ASSIGNED      TARGET
//	Jw8x...   6      kgo        /10.0.0.7   orders:0,1,2  orders:0,1
//
//	TOPIC   PARTITION  COMMITTED  LOG-END  LAG  MEMBER
//	orders  0          120        130      10   Jw8x...
func WriteConsumerGroupDescription(w io.Writer, d ConsumerGroupDescription) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "group:\t%s\n", d.Group)
	fmt.Fprintf(tw, "type:\tconsumer (KIP-848)\n")
	fmt.Fprintf(tw, "state:\t%s\n", d.State)
	fmt.Fprintf(tw, "group epoch:\t%d\n", d.Epoch)
	fmt.Fprintf(tw, "assignment epoch:\t%d\n", d.AssignmentEpoch)
	fmt.Fprintf(tw, "assignor:\t%s\n", d.AssignorName)
	fmt.Fprintf(tw, "coordinator:\t%d (%s)\n", d.Coordinator.NodeID, addrOf(d.Coordinator))
	fmt.Fprintf(tw, "members:\t%d\n", len(d.Members))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Members) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\nMEMBER\tEPOCH\tCLIENT-ID\tHOST\tASSIGNED\tTARGET")
		for _, m := range d.Members {
			id := m.MemberID
			if m.InstanceID != nil {
				id += " (instance " + *m.InstanceID + ")"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", id, m.MemberEpoch, m.ClientID, m.ClientHost,
				topicsSetString(m.Assignment), topicsSetString(m.TargetAssignment))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return writeOffsetRows(w, d.Offsets)
}

// topicsSetString lists partitions as "t:0,1 u:3", or "-".
func topicsSetString(s kadm.TopicsSet) string {
	var parts []string
	for _, t := range s.Sorted() {
		if len(t.Partitions) == 0 {
			continue
		}
		ids := make([]string, len(t.Partitions))
		for i, p := range t.Partitions {
			ids[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, t.Topic+":"+strings.Join(ids, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func orDash(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

func orDashString(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
