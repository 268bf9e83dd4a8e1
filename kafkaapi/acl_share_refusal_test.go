package kafkaapi_test

// The refusal cases of the share-group keys (76..79), as Kafka's KafkaApis checks
// them.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func refusalCtxBackground() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 20*time.Second)
}

// runTopicID is the id of the run's topic.
func runTopicID(r *refusalRun) [16]byte {
	ctx, cancel := refusalCtxBackground()
	defer cancel()
	td, err := r.adm.ListTopics(ctx, r.topic)
	if err != nil {
		return [16]byte{}
	}
	return td[r.topic].ID
}

// shareHeartbeatReq joins a new share group, GROUP_NAME-sh: allowed, it
// makes the group.
func shareHeartbeatReq(r *refusalRun) kmsg.Request {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.SubscribedTopicNames = r.group+"-sh", "refusal-member", []string{r.topic}
	return req
}

// noShareGroup checks, as the super user, that GROUP_NAME-sh does not exist.
func noShareGroup(t *testing.T, r *refusalRun) {
	groups, err := r.adm.ListGroups(refusalCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if g.Group == r.group+"-sh" {
			t.Fatalf("group %s was made: %+v", g.Group, g)
		}
	}
}

func shareFetchReq(r *refusalRun) kmsg.Request { return shareFetchIn(r, r.group) }

// shareFetchIn is a ShareFetch of the run's topic for group.
func shareFetchIn(r *refusalRun, group string) kmsg.Request {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr("refusal-member")
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = runTopicID(r)
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// shareFetchPartitionCode is the code of the request's partition, 0 when the
// answer has no entry for it (nothing to deliver yet).
func shareFetchPartitionCode(resp kmsg.Response) []int16 {
	r := resp.(*kmsg.ShareFetchResponse)
	if r.ErrorCode != 0 {
		return []int16{r.ErrorCode}
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			return []int16{p.ErrorCode}
		}
	}
	return []int16{0}
}

func shareGroupFetchReq(r *refusalRun) kmsg.Request { return shareFetchIn(r, r.group+"-share") }

// recordAvailable checks, as the super user, that the run's record is still
// there for the run's share group to take: a ShareFetch of another member
// acquires offset 0 (it would wait a second for a record another member holds).
func recordAvailable(t *testing.T, r *refusalRun) {
	req := shareGroupFetchReq(r).(*kmsg.ShareFetchRequest)
	req.MemberID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = kmsg.StringPtr("observer"), 1000, 1, 1<<20
	req.MaxRecords, req.BatchSize = 100, 100
	resp := aclRequest[*kmsg.ShareFetchResponse](t, aclAdminClient(t), req)
	if resp.ErrorCode != 0 {
		t.Fatalf("the super user's ShareFetch: %s", errName(resp.ErrorCode))
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			for _, a := range p.AcquiredRecords {
				if a.FirstOffset <= 0 && a.LastOffset >= 0 {
					return
				}
			}
		}
	}
	t.Fatalf("another member could not acquire offset 0 of %s: %+v", r.topic, resp.Topics)
}

// extraShareRefusals are more cases, added by init functions.
var extraShareRefusals []refusal

func shareRefusals() []refusal {
	groupRead := "ALLOW READ GROUP LITERAL GROUP_NAME"
	shGroupRead := "ALLOW READ GROUP LITERAL GROUP_NAME-sh"
	shareGroupRead := "ALLOW READ GROUP LITERAL GROUP_NAME-share"
	return append(extraShareRefusals, []refusal{
		{name: "ShareGroupHeartbeat needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			req:       shareHeartbeatReq,
			codes:     topLevel(func(r *kmsg.ShareGroupHeartbeatResponse) int16 { return r.ErrorCode }),
			unchanged: noShareGroup,
			grants:    []string{shGroupRead, "ALLOW DESCRIBE TOPIC LITERAL TOPIC_NAME"}},
		{name: "ShareGroupHeartbeat needs DESCRIBE on its topics", want: kerr.TopicAuthorizationFailed.Code,
			req:       shareHeartbeatReq,
			codes:     topLevel(func(r *kmsg.ShareGroupHeartbeatResponse) int16 { return r.ErrorCode }),
			unchanged: noShareGroup,
			given:     []string{shGroupRead},
			grants:    []string{shGroupRead, "ALLOW DESCRIBE TOPIC LITERAL TOPIC_NAME"}},
		{name: "ShareGroupDescribe needs DESCRIBE on the group", want: kerr.GroupAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrShareGroupDescribeRequest()
				req.GroupIDs = []string{r.group}
				return req
			},
			codes: topLevel(func(r *kmsg.ShareGroupDescribeResponse) int16 { return r.Groups[0].ErrorCode }),
			// Allowed: the run's group is a classic one, no share group.
			grants: []string{"ALLOW DESCRIBE GROUP LITERAL GROUP_NAME"}, aliceWant: kerr.GroupIDNotFound.Code},
		// Of the run's share group (shareGroupSetup): allowed, mallory's fetch
		// would acquire the run's record.
		{name: "ShareFetch needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			setup:     shareGroupSetup,
			req:       shareGroupFetchReq,
			codes:     topLevel(func(r *kmsg.ShareFetchResponse) int16 { return r.ErrorCode }),
			unchanged: recordAvailable,
			grants:    []string{shareGroupRead, "ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
		{name: "ShareFetch needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
			setup:     shareGroupSetup,
			req:       shareGroupFetchReq,
			codes:     shareFetchPartitionCode,
			unchanged: recordAvailable,
			given:     []string{shareGroupRead},
			grants:    []string{shareGroupRead, "ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
		{name: "ShareAcknowledge needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			writesNothing: "there is no share session: allowed, it is SHARE_SESSION_NOT_FOUND",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrShareAcknowledgeRequest()
				req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(r.group), kmsg.StringPtr("refusal-member"), 1
				return req
			},
			codes: topLevel(func(r *kmsg.ShareAcknowledgeResponse) int16 { return r.ErrorCode }),
			// Allowed, it has no share session here.
			grants: []string{groupRead}, aliceWant: kerr.ShareSessionNotFound.Code},
		{name: "ShareAcknowledge needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
			// The super user opens the member's share session in the run's share
			// group (epoch 0, then 1), acquiring the record at offset 0, which
			// mallory's request would accept: the group's start offset would move.
			setup: func(t *testing.T, r *refusalRun) {
				shareGroupSetup(t, r)
				fetch := shareGroupFetchReq(r).(*kmsg.ShareFetchRequest)
				fetch.MemberID, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = kmsg.StringPtr("ack-member"), 1000, 1, 1<<20
				fetch.MaxRecords, fetch.BatchSize = 100, 100
				resp := aclRequest[*kmsg.ShareFetchResponse](t, aclAdminClient(t), fetch)
				if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || len(resp.Topics[0].Partitions[0].AcquiredRecords) == 0 {
					t.Fatalf("open the share session and acquire the record: %s, %+v", errName(resp.ErrorCode), resp.Topics)
				}
			},
			unchanged: shareStartIs(0),
			given:     []string{shareGroupRead},
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrShareAcknowledgeRequest()
				req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(r.group+"-share"), kmsg.StringPtr("ack-member"), 1
				rt := kmsg.NewShareAcknowledgeRequestTopic()
				rt.TopicID = runTopicID(r)
				rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
				rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				r := resp.(*kmsg.ShareAcknowledgeResponse)
				if r.ErrorCode != 0 || len(r.Topics) == 0 {
					return []int16{r.ErrorCode}
				}
				return []int16{r.Topics[0].Partitions[0].ErrorCode}
			},
			// Allowed: mallory's refused request used the session's epoch 1.
			grants: []string{shareGroupRead, "ALLOW READ TOPIC LITERAL TOPIC_NAME"}, aliceWant: kerr.InvalidShareSessionEpoch.Code},
	}...)
}

func init() { extraShareRefusals = append(extraShareRefusals, groupConfigRefusals()...) }

// groupConfigRefusals: the GROUP config resource needs DESCRIBE_CONFIGS and
// ALTER_CONFIGS on the group.
func groupConfigRefusals() []refusal {
	return []refusal{
		{name: "DescribeConfigs of a group needs DESCRIBE_CONFIGS on it", want: kerr.GroupAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDescribeConfigsRequest()
				res := kmsg.NewDescribeConfigsRequestResource()
				res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, r.group
				req.Resources = append(req.Resources, res)
				return req
			},
			codes:  topLevelResources,
			grants: []string{"ALLOW DESCRIBE_CONFIGS GROUP LITERAL GROUP_NAME"}},
		{name: "IncrementalAlterConfigs of a group needs ALTER_CONFIGS on it", want: kerr.GroupAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrIncrementalAlterConfigsRequest()
				res := kmsg.NewIncrementalAlterConfigsRequestResource()
				res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, r.group
				res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
				req.Resources = append(req.Resources, res)
				return req
			},
			codes:     topLevel(func(r *kmsg.IncrementalAlterConfigsResponse) int16 { return r.Resources[0].ErrorCode }),
			unchanged: groupConfigIsNot("share.auto.offset.reset", "earliest"),
			grants:    []string{"ALLOW ALTER_CONFIGS GROUP LITERAL GROUP_NAME"}},
	}
}

// groupConfigIsNot checks, as the super user, that the run's group does not
// have config name set to value.
func groupConfigIsNot(name, value string) func(t *testing.T, r *refusalRun) {
	return func(t *testing.T, r *refusalRun) {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, r.group
		req.Resources = append(req.Resources, res)
		resp := aclRequest[*kmsg.DescribeConfigsResponse](t, aclAdminClient(t), req)
		if code := resp.Resources[0].ErrorCode; code != 0 {
			t.Fatalf("describe the configs of group %s: %s", r.group, errName(code))
		}
		for _, c := range resp.Resources[0].Configs {
			if c.Name == name && c.Value != nil && *c.Value == value {
				t.Fatalf("group %s has %s=%s", r.group, name, value)
			}
		}
	}
}

func init() { extraShareRefusals = append(extraShareRefusals, shareOffsetsRefusals()...) }

// shareOffsetsRefusals: keys 90..92 need DESCRIBE, ALTER and DELETE on the group.
func shareOffsetsRefusals() []refusal {
	return []refusal{
		{name: "DescribeShareGroupOffsets needs DESCRIBE on the group", want: kerr.GroupAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
				req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: r.group}}
				return req
			},
			codes: topLevel(func(r *kmsg.DescribeShareGroupOffsetsResponse) int16 { return r.Groups[0].ErrorCode }),
			// Allowed: the run's group is a classic one.
			grants: []string{"ALLOW DESCRIBE GROUP LITERAL GROUP_NAME"}, aliceWant: kerr.GroupIDNotFound.Code},
		// On the run's share group (GROUP_NAME-share, start offset 0), which
		// allowed they would move or delete.
		{name: "AlterShareGroupOffsets needs ALTER on the group", want: kerr.GroupAuthorizationFailed.Code,
			setup: shareGroupSetup,
			req: func(r *refusalRun) kmsg.Request {
				return alterShareOffsetsReq(r, 1)
			},
			codes:     topLevel(func(r *kmsg.AlterShareGroupOffsetsResponse) int16 { return r.ErrorCode }),
			unchanged: shareStartIs(0),
			grants:    []string{"ALLOW ALTER GROUP LITERAL GROUP_NAME-share", "ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
		{name: "DeleteShareGroupOffsets needs DELETE on the group", want: kerr.GroupAuthorizationFailed.Code,
			setup: shareGroupSetup,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
				req.GroupID, req.Topics = r.group+"-share", []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: r.topic}}
				return req
			},
			codes:     topLevel(func(r *kmsg.DeleteShareGroupOffsetsResponse) int16 { return r.ErrorCode }),
			unchanged: shareStartIs(0),
			grants:    []string{"ALLOW DELETE GROUP LITERAL GROUP_NAME-share", "ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
		// The topic checks, on an empty share group (GROUP_NAME-share, its start
		// offset 0 set by the super user) whose group right mallory has.
		{name: "DescribeShareGroupOffsets needs DESCRIBE on the topic", want: kerr.TopicAuthorizationFailed.Code,
			writesNothing: "a read",
			setup:         shareGroupSetup, given: []string{"ALLOW DESCRIBE GROUP LITERAL GROUP_NAME-share"},
			req: func(r *refusalRun) kmsg.Request {
				return describeShareOffsetsReq(r)
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].Topics[0].Partitions[0].ErrorCode}
			},
			grants: []string{"ALLOW DESCRIBE GROUP LITERAL GROUP_NAME-share", "ALLOW DESCRIBE TOPIC LITERAL TOPIC_NAME"}},
		{name: "AlterShareGroupOffsets needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
			setup: shareGroupSetup, given: []string{"ALLOW ALTER GROUP LITERAL GROUP_NAME-share"},
			req: func(r *refusalRun) kmsg.Request {
				return alterShareOffsetsReq(r, 1)
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.AlterShareGroupOffsetsResponse).Topics[0].Partitions[0].ErrorCode}
			},
			unchanged: shareStartIs(0),
			grants:    []string{"ALLOW ALTER GROUP LITERAL GROUP_NAME-share", "ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
		{name: "DeleteShareGroupOffsets needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
			setup: shareGroupSetup, given: []string{"ALLOW DELETE GROUP LITERAL GROUP_NAME-share"},
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
				req.GroupID, req.Topics = r.group+"-share", []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: r.topic}}
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.DeleteShareGroupOffsetsResponse).Topics[0].ErrorCode}
			},
			unchanged: shareStartIs(0),
			grants:    []string{"ALLOW DELETE GROUP LITERAL GROUP_NAME-share", "ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
	}
}

func alterShareOffsetsReq(r *refusalRun, start int64) *kmsg.AlterShareGroupOffsetsRequest {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = r.group + "-share"
	req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: r.topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: start}}}}
	return req
}

func describeShareOffsetsReq(r *refusalRun) *kmsg.DescribeShareGroupOffsetsRequest {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: r.group + "-share",
		Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: r.topic, Partitions: []int32{0}}}}}
	return req
}

// shareGroupSetup makes the run's share group, GROUP_NAME-share, as the super
// user: start offset 0 on the run's topic.
func shareGroupSetup(t *testing.T, r *refusalRun) {
	resp := aclRequest[*kmsg.AlterShareGroupOffsetsResponse](t, aclAdminClient(t), alterShareOffsetsReq(r, 0))
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("make the share group: %s, %s", errName(resp.ErrorCode), errName(resp.Topics[0].Partitions[0].ErrorCode))
	}
	shareStartIs(0)(t, r)
}

// shareStartIs checks, as the super user, the start offset of the run's share
// group on partition 0 of its topic.
func shareStartIs(want int64) func(t *testing.T, r *refusalRun) {
	return func(t *testing.T, r *refusalRun) {
		t.Helper()
		resp := aclRequest[*kmsg.DescribeShareGroupOffsetsResponse](t, aclAdminClient(t), describeShareOffsetsReq(r))
		g := resp.Groups[0]
		if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
			t.Fatalf("share group %s: %s, %+v", g.GroupID, errName(g.ErrorCode), g.Topics)
		}
		if p := g.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.StartOffset != want {
			t.Fatalf("share group %s starts at %d (%s), want %d", g.GroupID, p.StartOffset, errName(p.ErrorCode), want)
		}
	}
}

func init() { extraShareRefusals = append(extraShareRefusals, shareStateRefusals()...) }

// shareStateRefusals: the node-to-node keys 83 and 86 need CLUSTER_ACTION on the
// cluster, as in Kafka. Each is sent for the run's share group, whose start
// offset must stay 0 when it is refused.
func shareStateRefusals() []refusal {
	clusterAction := "ALLOW CLUSTER_ACTION CLUSTER LITERAL kafka-cluster"
	firstCode := func(resp kmsg.Response) []int16 {
		switch r := resp.(type) {
		case *kmsg.InitializeShareGroupStateResponse:
			return []int16{r.Topics[0].Partitions[0].ErrorCode}
		case *kmsg.DeleteShareGroupStateResponse:
			return []int16{r.Topics[0].Partitions[0].ErrorCode}
		}
		return []int16{-1}
	}
	return []refusal{
		{name: "InitializeShareGroupState needs CLUSTER_ACTION", want: kerr.ClusterAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrInitializeShareGroupStateRequest()
				req.GroupID = r.group + "-share"
				req.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: runTopicID(r),
					Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StartOffset: 1}}}}
				return req
			},
			setup: shareGroupSetup, unchanged: shareStartIs(0),
			codes: firstCode, grants: []string{clusterAction}},
		{name: "DeleteShareGroupState needs CLUSTER_ACTION", want: kerr.ClusterAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDeleteShareGroupStateRequest()
				req.GroupID = r.group + "-share"
				req.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: runTopicID(r),
					Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
				return req
			},
			setup: shareGroupSetup, unchanged: shareStartIs(0),
			codes: firstCode, grants: []string{clusterAction}},
	}
}
