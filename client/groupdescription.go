package client

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

// WriteGroupDescription prints a group, as DescribeGroup returns it, for people:
//
//	group:        orders
//	state:        Stable
//	protocol:     consumer (cooperative-sticky)
//	coordinator:  1 (localhost:9092)
//
//	MEMBER          CLIENT-ID  HOST        PARTITIONS
//	kgo-4e1f...     kgo        /10.0.0.7   orders:0,1,2
//
//	TOPIC   PARTITION  COMMITTED  LOG-END  LAG  MEMBER
//	orders  0          120        130      10   kgo-4e1f...
func WriteGroupDescription(w io.Writer, l kadm.DescribedGroupLag) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "group:\t%s\n", l.Group)
	fmt.Fprintf(tw, "state:\t%s\n", l.State)
	pt := l.ProtocolType
	if pt == "" {
		pt = "none (offsets only)"
	}
	if l.Protocol != "" {
		pt += " (" + l.Protocol + ")"
	}
	fmt.Fprintf(tw, "protocol:\t%s\n", pt)
	fmt.Fprintf(tw, "coordinator:\t%d (%s)\n", l.Coordinator.NodeID, addrOf(l.Coordinator))
	fmt.Fprintf(tw, "members:\t%d\n", len(l.Members))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(l.Members) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\nMEMBER\tCLIENT-ID\tHOST\tPARTITIONS")
		for _, m := range l.Members {
			id := m.MemberID
			if m.InstanceID != nil {
				id += " (instance " + *m.InstanceID + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", id, m.ClientID, m.ClientHost, memberPartitions(m))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	var rows []OffsetRow
	for _, r := range l.Lag.Sorted() {
		row := OffsetRow{Topic: r.Topic, Partition: r.Partition, Committed: r.Commit.At, End: -1, Lag: r.Lag}
		if r.End.Err == nil {
			row.End = r.End.Offset
		}
		if r.Member != nil {
			row.Member = r.Member.MemberID
		}
		rows = append(rows, row)
	}
	return writeOffsetRows(w, rows)
}

// writeOffsetRows prints a group's partitions: committed offset, log end, lag
// and member ("-" for what is not known).
func writeOffsetRows(w io.Writer, rows []OffsetRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "\nno committed offsets and no assigned partitions")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTOPIC\tPARTITION\tCOMMITTED\tLOG-END\tLAG\tMEMBER")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Topic, r.Partition, orDash(r.Committed), orDash(r.End), orDash(r.Lag), orDashString(r.Member))
	}
	return tw.Flush()
}

func addrOf(b kadm.BrokerDetail) string {
	return b.Host + ":" + strconv.Itoa(int(b.Port))
}

// memberPartitions lists a consumer's assigned partitions as "t:0,1 u:3".
func memberPartitions(m kadm.DescribedGroupMember) string {
	a, ok := m.Assigned.AsConsumer()
	if !ok || len(a.Topics) == 0 {
		return "-"
	}
	byTopic := make(map[string][]int32, len(a.Topics))
	for _, t := range a.Topics {
		byTopic[t.Topic] = t.Partitions
	}
	return partitionList(byTopic)
}

// partitionList writes partitions by topic as "t:0,1 u:3", sorted.
func partitionList(byTopic map[string][]int32) string {
	var parts []string
	for topic, ps := range byTopic {
		ps = append([]int32(nil), ps...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		ids := make([]string, len(ps))
		for i, p := range ps {
			ids[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, topic+":"+strings.Join(ids, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
