package kafkaapi

import "github.com/twmb/franz-go/pkg/kmsg"

// dispatch runs the handler of one decoded request (every advertised key but Fetch,
// which writes its own zero-copy response) and returns the answer, or nil when the
// request gets none (acks=0 produce).
func (s *Server) dispatch(c *conn, hdr *requestHeader, req kmsg.Request) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		return s.handleProduce(c, r)
	case *kmsg.ListOffsetsRequest:
		return s.handleListOffsets(r)
	case *kmsg.MetadataRequest:
		return s.handleMetadata(c, r)
	case *kmsg.ApiVersionsRequest:
		return s.handleApiVersions(r)
	case *kmsg.CreateTopicsRequest:
		return s.handleCreateTopics(c, r)
	case *kmsg.DeleteTopicsRequest:
		return s.handleDeleteTopics(c, r)
	case *kmsg.InitProducerIDRequest:
		return s.handleInitProducerID(c, r)
	case *kmsg.OffsetForLeaderEpochRequest:
		return s.handleOffsetForLeaderEpoch(r)
	case *kmsg.DescribeConfigsRequest:
		return s.handleDescribeConfigs(r)
	case *kmsg.CreatePartitionsRequest:
		return s.handleCreatePartitions(c, r)
	case *kmsg.OffsetCommitRequest:
		return s.handleOffsetCommit(c, r)
	case *kmsg.OffsetFetchRequest:
		return s.handleOffsetFetch(r)
	case *kmsg.FindCoordinatorRequest:
		return s.handleFindCoordinator(c, r)
	case *kmsg.JoinGroupRequest:
		return s.handleJoinGroup(c, hdr, r)
	case *kmsg.HeartbeatRequest:
		return s.handleHeartbeat(r)
	case *kmsg.LeaveGroupRequest:
		return s.handleLeaveGroup(r)
	case *kmsg.SyncGroupRequest:
		return s.handleSyncGroup(c, r)
	case *kmsg.DescribeGroupsRequest:
		return s.handleDescribeGroups(r)
	case *kmsg.ListGroupsRequest:
		return s.handleListGroups(r)
	case *kmsg.DeleteGroupsRequest:
		return s.handleDeleteGroups(c, r)
	case *kmsg.OffsetDeleteRequest:
		return s.handleOffsetDelete(c, r)
	}
	// Unreachable: supported() admits only the keys above.
	panic("kafkaapi: no handler for " + kmsg.NameForKey(hdr.key))
}
