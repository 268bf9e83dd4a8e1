package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

// PartitionOffsets is a partition's high watermark (from ListOffsets) and its leader's log
// end offset (from OffsetForLeaderEpoch at the current leader epoch, whose end is the
// log end); -1 where the broker did not say.
type PartitionOffsets struct{ HW, LEO int64 }

// partitionOffsets asks the leaders for every partition's high watermark and log end.
// Failures leave -1: the description is still useful without them.
func (k *Client) partitionOffsets(ctx context.Context, td kadm.TopicDetail) map[int32]PartitionOffsets {
	out := make(map[int32]PartitionOffsets, len(td.Partitions))
	var req kadm.OffsetForLeaderEpochRequest
	for _, p := range td.Partitions {
		out[p.Partition] = PartitionOffsets{-1, -1}
		if p.Leader >= 0 {
			req.Add(td.Topic, p.Partition, p.LeaderEpoch)
		}
	}
	if ends, err := k.admin.ListEndOffsets(ctx, td.Topic); err == nil {
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				v := out[o.Partition]
				v.HW = o.Offset
				out[o.Partition] = v
			}
		})
	}
	if eps, err := k.admin.OffsetForLeaderEpoch(ctx, req); err == nil {
		for _, e := range eps[td.Topic] {
			if e.Err == nil && e.EndOffset >= 0 {
				v := out[e.Partition]
				v.LEO = e.EndOffset
				out[e.Partition] = v
			}
		}
	}
	return out
}

// WriteTopicDescription prints a topic for people:
//
//	topic:              orders
//	id:                 3q2+7w...
//	partitions:         3
//	replication factor: 3
//
//	PARTITION  LEADER  EPOCH  REPLICAS  ISR    OFFLINE  HIGH WATERMARK  LOG END
//	0          1       4      1,2,3     1,2,3  -        1200            1203
//
//	CONFIG          VALUE   SOURCE
//	cleanup.policy  delete  default
func WriteTopicDescription(w io.Writer, td kadm.TopicDetail, configs []kadm.Config, offs map[int32]PartitionOffsets) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "topic:\t%s\n", td.Topic)
	if td.ID != (kadm.TopicID{}) {
		// Kafka's form of a topic id: URL-safe base64 without padding.
		fmt.Fprintf(tw, "id:\t%s\n", base64.RawURLEncoding.EncodeToString(td.ID[:]))
	}
	fmt.Fprintf(tw, "partitions:\t%d\n", len(td.Partitions))
	fmt.Fprintf(tw, "replication factor:\t%d\n", replicationFactor(td.Partitions))
	if td.IsInternal {
		fmt.Fprintf(tw, "internal:\ttrue\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	parts := td.Partitions.Sorted()
	anyErr := false
	for _, p := range parts {
		anyErr = anyErr || p.Err != nil
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\nPARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tOFFLINE\tHIGH WATERMARK\tLOG END")
	if anyErr {
		fmt.Fprint(tw, "\tERROR")
	}
	fmt.Fprintln(tw)
	for _, p := range parts {
		leader := "none"
		if p.Leader >= 0 {
			leader = strconv.Itoa(int(p.Leader))
		}
		hw, leo := "-", "-"
		if o, ok := offs[p.Partition]; ok {
			if o.HW >= 0 {
				hw = strconv.FormatInt(o.HW, 10)
			}
			if o.LEO >= 0 {
				leo = strconv.FormatInt(o.LEO, 10)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s", p.Partition, leader, p.LeaderEpoch,
			joinIDs(p.Replicas), joinIDs(p.ISR), joinIDs(p.OfflineReplicas), hw, leo)
		if anyErr {
			e := "-"
			if p.Err != nil {
				e = p.Err.Error()
			}
			fmt.Fprintf(tw, "\t%s", e)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	sort.Slice(configs, func(i, j int) bool { return configs[i].Key < configs[j].Key })
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCONFIG\tVALUE\tSOURCE")
	for _, cf := range configs {
		v := "-"
		switch {
		case cf.Sensitive:
			v = "(sensitive)"
		case cf.Value != nil:
			v = *cf.Value
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cf.Key, v, ConfigSource(cf.Source))
	}
	return tw.Flush()
}

func replicationFactor(ps kadm.PartitionDetails) int {
	rf := 0
	for _, p := range ps {
		rf = max(rf, len(p.Replicas))
	}
	return rf
}

func joinIDs(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}
