package client

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ReplicaSize is one replica of a partition as its node describes it
// (DescribeLogDirs): the directory holding it, its bytes on disk and how far its
// log end is behind its high watermark.
type ReplicaSize struct {
	Partition, Node int32
	Dir             string
	Size, OffsetLag int64
}

// ReplicaSizes asks every node for the sizes of topic's replicas, sorted by
// partition then node.
func (k *Client) ReplicaSizes(ctx context.Context, topic string, partitions []int32) ([]ReplicaSize, error) {
	set := kadm.TopicsSet{}
	set.Add(topic, partitions...)
	all, err := k.admin.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("describe log dirs of topic %q: %w", topic, k.Explain(err))
	}
	var out []ReplicaSize
	for node, dirs := range all {
		for _, d := range dirs {
			if d.Err != nil {
				return nil, fmt.Errorf("describe log dirs of topic %q: node %d directory %s: %w", topic, node, d.Dir, d.Err)
			}
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				out = append(out, ReplicaSize{Partition: p.Partition, Node: node, Dir: d.Dir, Size: p.Size, OffsetLag: p.OffsetLag})
			})
		}
	}
	slices.SortFunc(out, func(a, b ReplicaSize) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Node, b.Node))
	})
	return out, nil
}

// WriteReplicaSizes prints replica sizes for people, sizes in bytes:
//
//	PARTITION  NODE  SIZE    OFFSET LAG  DIRECTORY
//	0          1     104857  0           /var/lib/skiff/topics
func WriteReplicaSizes(w io.Writer, sizes []ReplicaSize) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPARTITION\tNODE\tSIZE\tOFFSET LAG\tDIRECTORY")
	for _, s := range sizes {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\n", s.Partition, s.Node, s.Size, s.OffsetLag, s.Dir)
	}
	return tw.Flush()
}
