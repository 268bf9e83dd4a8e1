package kafkaapi

// DescribeLogDirs, key 35, versions 0..4 (KIP-113; total and usable bytes KIP-827).
//
// Behaviour: a node has one log directory, the folder of its partition replicas
// (<data>/topics), reported with its absolute path and, from v4 on, the total and
// usable bytes of its filesystem (-1 when they cannot be read). Under it, each
// requested partition with a replica here (every one when topics is null): its
// size (the bytes of its segment files), its offset lag as Kafka computes it
// (the replica's high watermark minus its log end offset, never below 0) and
// is_future false (Skiff has one directory, so no replica ever moves between
// directories). Requested partitions without a replica here are left out, as in
// Kafka. A replica whose log could not be opened is left out too (Kafka reports
// its whole directory offline instead).
//
// Authorization, as in Kafka: DESCRIBE on the cluster; without it the answer has
// no directories, and from v3 on CLUSTER_AUTHORIZATION_FAILED.

import (
	"cmp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/replication"
)

func init() {
	register(api[*kmsg.DescribeLogDirsRequest]{
		min: 0, max: 4,
		handle: (*Server).handleDescribeLogDirs,
		entries: func(r *kmsg.DescribeLogDirsRequest) (n int) {
			for _, t := range r.Topics {
				n += topicEntries(len(t.Partitions))
			}
			return n
		},
	})
}

func (s *Server) handleDescribeLogDirs(c *conn, _ *RequestHeader, req *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !c.allowedCluster(acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = s.parts.Dir()
	if total, usable, ok := s.parts.DiskSpace(); ok {
		dir.TotalBytes, dir.UsableBytes = total, usable
	}
	var parts []*replication.Partition
	if req.Topics == nil {
		parts = s.parts.Partitions()
	} else {
		for _, t := range req.Topics {
			for _, id := range t.Partitions {
				if p := s.parts.Partition(t.Topic, id); p != nil && !slices.Contains(parts, p) {
					parts = append(parts, p)
				}
			}
		}
	}
	slices.SortFunc(parts, func(a, b *replication.Partition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.ID, b.ID))
	})
	for _, p := range parts {
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != p.Topic {
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic = p.Topic
			dir.Topics = append(dir.Topics, rt)
		}
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition, rp.Size = p.ID, p.Size()
		rp.OffsetLag = max(p.HighWatermark()-p.LogEndOffset(), 0)
		rt := &dir.Topics[len(dir.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}
