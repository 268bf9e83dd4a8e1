package kafkaapi_test

// The authorization of every API over the wire: for each API that checks an ACL,
// a user without the right (mallory) gets Kafka's error and nothing changes, and a
// user granted the right (alice) is served.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
	"skiff/kafkaapi"
)

// refusal is one API's check: the request, the error codes of its answer that
// the check sets, the ACLs that allow it, and what must not change when refused.
type refusal struct {
	name string
	// req builds the request for this case's topic and group.
	req func(r *refusalRun) kmsg.Request
	// codes are the answer's error codes the authorization sets.
	codes func(resp kmsg.Response) []int16
	want  int16 // mallory's code
	// grants are alice's ACLs (PERMISSION OPERATION RESOURCE PATTERN NAME, with
	// TOPIC and GROUP standing for this case's names), and aliceWant her code:
	// 0, or the error the request meets once authorized.
	grants    []string
	aliceWant int16
	// unchanged checks, as the super user, that mallory's request changed nothing.
	unchanged func(t *testing.T, r *refusalRun)
	// writesNothing, for a case without unchanged, says why the request could
	// change nothing even if it were allowed (a read; or the state it would
	// change is not observable, or does not exist here).
	writesNothing string
	// given are mallory's ACLs (as grants): the rights checked before the one refused.
	given []string
	// setup prepares more, as the super user.
	setup func(t *testing.T, r *refusalRun)
}

// refusalRun is one case's topic (one partition holding one record, created by
// the super user) and group (with offset 1 committed for it).
type refusalRun struct {
	topic, group string
	adm          *kadm.Client
	// pid and epoch are the producer of group as a transactional id, when a
	// case's setup initialized it (txnSetup).
	pid   int64
	epoch int16
	// member is a member of GROUP_NAME-member, when a case's setup joined one
	// (memberSetup), or the leader of GROUP_NAME-sync at generation
	// (leaderSetup).
	member     string
	generation int32
}

var refusalSeq atomic.Int64

// TestACLRefusals runs every case of refusals, and checks that every key the node
// serves has one (everyKeyCased).
func TestACLRefusals(t *testing.T) {
	startACLNode(t)
	mallory := aclUserClient(t, aclMallory)
	cased := map[int16]bool{}
	for _, c := range slices.Concat(refusals(), configRefusals(), txnRefusals(), adminRefusals()) {
		t.Run(c.name, func(t *testing.T) {
			if (c.unchanged == nil) == (c.writesNothing == "") {
				t.Fatal("the case needs either unchanged (what a refusal must leave as it was) or writesNothing (why there is nothing to check), not both")
			}
			r := newRefusalRun(t)
			cased[c.req(r).Key()] = true
			if c.setup != nil {
				c.setup(t, r)
			}
			if len(c.given) > 0 {
				grant(t, aclMallory, r.names(c.given)...)
			}
			resp := aclRequest[kmsg.Response](t, mallory, c.req(r))
			for i, code := range c.codes(resp) {
				wantCode(t, "mallory's answer, code "+strconv.Itoa(i), code, c.want)
			}
			if c.unchanged != nil {
				c.unchanged(t, r)
			}
			grant(t, aclAlice, r.names(c.grants)...)
			resp = aclRequest[kmsg.Response](t, aclUserClient(t, aclAlice), c.req(r))
			for i, code := range c.codes(resp) {
				wantCode(t, "alice's answer, code "+strconv.Itoa(i), code, c.aliceWant)
			}
		})
	}
	waitACLLog(t, "authorization failed", "principal=User:mallory", "api=Produce", "operation=WRITE", "resource_type=TOPIC")
	everyKeyCased(t, cased)
}

// newRefusalRun makes a case's topic and group as the super user.
// withoutRefusal are the keys that refuse nothing, and why; every other key a
// node serves has a case in refusals.
var withoutRefusal = map[int16]string{
	16: "ListGroups leaves out the groups the client may not DESCRIBE (TestACLListGroups)",
	17: "SaslHandshake comes before authentication; Kafka authorizes nothing",
	18: "ApiVersions comes before authentication; Kafka authorizes nothing",
	36: "SaslAuthenticate comes before authentication; Kafka authorizes nothing",
	66: "ListTransactions leaves out the transactional ids the client may not DESCRIBE",
}

// everyKeyCased fails for a key the node serves without a refusal case (cased)
// or a reason in withoutRefusal: a new API must decide its authorization.
func everyKeyCased(t *testing.T, cased map[int16]bool) {
	served := map[int16]bool{}
	for _, req := range kafkaapi.ServedRequests() {
		served[req.Key()] = true
	}
	for key := range served {
		if _, exempt := withoutRefusal[key]; !cased[key] && !exempt {
			t.Errorf("key %d (%s) is served without a refusal case in refusals() or a reason in withoutRefusal", key, kmsg.NameForKey(key))
		}
	}
	for key := range withoutRefusal {
		if !served[key] || cased[key] {
			t.Errorf("withoutRefusal names key %d (%s), which is not served or has a refusal case", key, kmsg.NameForKey(key))
		}
	}
}

func newRefusalRun(t *testing.T) *refusalRun {
	n := refusalSeq.Add(1)
	r := &refusalRun{topic: "refusal-" + strconv.FormatInt(n, 10), group: "refusal-group-" + strconv.FormatInt(n, 10), adm: aclAdmin(t)}
	ctx := refusalCtx(t)
	if _, err := r.adm.CreateTopic(ctx, 1, 1, nil, r.topic); err != nil {
		t.Fatal(err)
	}
	if err := aclAdminClient(t).ProduceSync(ctx, &kgo.Record{Topic: r.topic, Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.AddOffset(r.topic, 0, 1, -1)
	if err := r.adm.CommitAllOffsets(ctx, r.group, offs); err != nil {
		t.Fatal(err)
	}
	return r
}

func refusalCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// names puts the run's topic and group for TOPIC_NAME and GROUP_NAME in acls.
func (r *refusalRun) names(acls []string) []string {
	var out []string
	rep := strings.NewReplacer("TOPIC_NAME", r.topic, "GROUP_NAME", r.group)
	for _, a := range acls {
		out = append(out, rep.Replace(a))
	}
	return out
}

// --- what a refused request must leave as it was ---

func endOffsetIs(want int64) func(t *testing.T, r *refusalRun) {
	return func(t *testing.T, r *refusalRun) {
		ends, err := r.adm.ListEndOffsets(refusalCtx(t), r.topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := ends.Lookup(r.topic, 0); o.Err != nil || o.Offset != want {
			t.Fatalf("end offset of %s: %d (%v), want %d", r.topic, o.Offset, o.Err, want)
		}
	}
}

func topicExists(t *testing.T, r *refusalRun, name string) (bool, int) {
	t.Helper()
	md, err := r.adm.Metadata(refusalCtx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := md.Topics[name]
	return ok && d.Err == nil, len(d.Partitions)
}

func noTopic(suffix string) func(t *testing.T, r *refusalRun) {
	return func(t *testing.T, r *refusalRun) {
		if ok, _ := topicExists(t, r, r.topic+suffix); ok {
			t.Fatalf("topic %s was created", r.topic+suffix)
		}
	}
}

func partitionsAre(n int) func(t *testing.T, r *refusalRun) {
	return func(t *testing.T, r *refusalRun) {
		if ok, got := topicExists(t, r, r.topic); !ok || got != n {
			t.Fatalf("topic %s: exists %v, %d partitions, want %d", r.topic, ok, got, n)
		}
	}
}

func committedIs(group string, want int64) func(t *testing.T, r *refusalRun) {
	return func(t *testing.T, r *refusalRun) {
		if group == "" {
			group = r.group
		}
		offs, err := r.adm.FetchOffsets(refusalCtx(t), group)
		if err != nil {
			t.Fatal(err)
		}
		o, ok := offs.Lookup(r.topic, 0)
		if got := int64(-1); ok {
			got = o.At
			if got != want {
				t.Fatalf("group %s committed %d for %s, want %d", group, got, r.topic, want)
			}
		} else if want != -1 {
			t.Fatalf("group %s has no commit for %s, want %d", group, r.topic, want)
		}
	}
}

// memberSetup joins a consumer of the super user to GROUP_NAME-member, waits
// until it read the topic's record, and keeps its member id in r.member.
func memberSetup(t *testing.T, r *refusalRun) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(aclNode.addrs["PLAINTEXT"]), kgo.ConsumerGroup(r.group+"-member"),
		kgo.ConsumeTopics(r.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := refusalCtx(t)
	for n := 0; n == 0; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n = fs.NumRecords()
	}
	gs, err := r.adm.DescribeGroups(ctx, r.group+"-member")
	if err != nil {
		t.Fatal(err)
	}
	if ms := gs[r.group+"-member"].Members; len(ms) == 1 {
		r.member = ms[0].MemberID
	} else {
		t.Fatalf("group %s-member has %d members, want 1", r.group, len(ms))
	}
}

// leaderSetup joins a member of the super user to GROUP_NAME-sync with a
// classic JoinGroup, so that the group awaits its leader's SyncGroup
// (CompletingRebalance); r.member and r.generation are the leader's.
func leaderSetup(t *testing.T, r *refusalRun) {
	join := func(member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = r.group+"-sync", member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 60000, 60000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
		return aclRequest[*kmsg.JoinGroupResponse](t, aclAdminClient(t), req)
	}
	first := join("")
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first JoinGroup: %s, want MEMBER_ID_REQUIRED", errName(first.ErrorCode))
	}
	joined := join(first.MemberID)
	if joined.ErrorCode != 0 || joined.LeaderID != first.MemberID {
		t.Fatalf("JoinGroup: %s, leader %q, want %q", errName(joined.ErrorCode), joined.LeaderID, first.MemberID)
	}
	r.member, r.generation = first.MemberID, joined.Generation
	groupState("-sync", "CompletingRebalance")(t, r)
}

// nextProducerID takes an idempotent producer id as the super user: the first
// call keeps it in r.pid, a later one checks that it follows r.pid (nothing
// took one in between).
func nextProducerID(t *testing.T, r *refusalRun) {
	resp := aclRequest[*kmsg.InitProducerIDResponse](t, aclAdminClient(t), kmsg.NewPtrInitProducerIDRequest())
	if resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %s", errName(resp.ErrorCode))
	}
	if r.pid != 0 && resp.ProducerID != r.pid+1 {
		t.Fatalf("producer id %d after %d: one was taken in between", resp.ProducerID, r.pid)
	}
	r.pid = resp.ProducerID
}

// memberIn checks whether r.member is (still) a member of GROUP_NAME-member.
func memberIn(want bool) func(t *testing.T, r *refusalRun) {
	return func(t *testing.T, r *refusalRun) {
		gs, err := r.adm.DescribeGroups(refusalCtx(t), r.group+"-member")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, m := range gs[r.group+"-member"].Members {
			found = found || m.MemberID == r.member
		}
		if found != want {
			t.Fatalf("member %s of group %s-member: present %v, want %v", r.member, r.group, found, want)
		}
	}
}

func groupState(suffix, want string) func(t *testing.T, r *refusalRun) {
	return func(t *testing.T, r *refusalRun) {
		gs, err := r.adm.DescribeGroups(refusalCtx(t), r.group+suffix)
		if err != nil {
			t.Fatal(err)
		}
		if g := gs[r.group+suffix]; g.State != want {
			t.Fatalf("group %s is %q, want %q", r.group+suffix, g.State, want)
		}
	}
}

func userAbsent(t *testing.T, r *refusalRun) {
	users, err := r.adm.DescribeUserSCRAMs(refusalCtx(t), r.topic)
	if err == nil && users[r.topic].Err == nil {
		t.Fatalf("user %s was created", r.topic)
	}
}

func aclsOf(t *testing.T, r *refusalRun, principal string) int {
	res, err := r.adm.DescribeACLs(refusalCtx(t), kadm.NewACLs().Allow(principal).AllowHosts().Deny(principal).DenyHosts().
		AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range res {
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		n += len(d.Described)
	}
	return n
}

// --- the requests ---

func fetchReq(replica int32) func(r *refusalRun) kmsg.Request {
	return func(r *refusalRun) kmsg.Request {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes = replica, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = r.topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
}

// fetchCodes are the fetched partitions' codes; a partition that returned
// records has code -1, so a refused fetch that leaks records fails.
func fetchCodes(resp kmsg.Response) []int16 {
	var out []int16
	for _, t := range resp.(*kmsg.FetchResponse).Topics {
		for _, p := range t.Partitions {
			code := p.ErrorCode
			if code != 0 && len(p.RecordBatches) > 0 {
				code = -1
			}
			out = append(out, code)
		}
	}
	return out
}

func metadataReq(suffix string, create bool) func(r *refusalRun) kmsg.Request {
	return func(r *refusalRun) kmsg.Request {
		req := kmsg.NewPtrMetadataRequest()
		name := r.topic + suffix
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = create
		return req
	}
}

func commitReq(r *refusalRun) kmsg.Request {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = r.group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = r.topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 7
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func offsetFetchReq(r *refusalRun) kmsg.Request {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = r.group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = r.topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	return req
}

// offsetFetchCodes are the group's and the partition's codes; a refused
// partition that shows its offset has code -1.
func offsetFetchCodes(resp kmsg.Response) []int16 {
	r := resp.(*kmsg.OffsetFetchResponse)
	out := []int16{r.ErrorCode}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			code := p.ErrorCode
			if code != 0 && p.Offset != -1 {
				code = -1
			}
			out = append(out, code)
		}
	}
	if r.ErrorCode != 0 {
		return out[:1]
	}
	return out[1:]
}

func describeConfigsReq(rt kmsg.ConfigResourceType) func(r *refusalRun) kmsg.Request {
	return func(r *refusalRun) kmsg.Request {
		req := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = rt, r.topic
		if rt == kmsg.ConfigResourceTypeBroker {
			res.ResourceName = strconv.Itoa(int(aclNode.node.ID()))
		}
		req.Resources = append(req.Resources, res)
		return req
	}
}

func findCoordinatorReq(keyType int8) func(r *refusalRun) kmsg.Request {
	return func(r *refusalRun) kmsg.Request {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorType = r.group, keyType
		req.CoordinatorKeys = []string{r.group} // v4+
		return req
	}
}

// findCoordinatorCode is the code of a FindCoordinator answer for one key: its
// entry's from v4, else the top-level one.
func findCoordinatorCode(r *kmsg.FindCoordinatorResponse) int16 {
	if len(r.Coordinators) == 1 {
		return r.Coordinators[0].ErrorCode
	}
	return r.ErrorCode
}

// quotaAbsent checks that the case's user (named after its topic) has no quota.
func quotaAbsent(t *testing.T, r *refusalRun) {
	t.Helper()
	got, err := r.adm.DescribeClientQuotas(refusalCtx(t), false, []kadm.DescribeClientQuotaComponent{
		{Type: "user", MatchName: &r.topic, MatchType: kmsg.QuotasMatchTypeExact}})
	if err != nil || len(got) != 0 {
		t.Fatalf("quotas of %s: %v %v, want none", r.topic, got, err)
	}
}

func topLevel[R kmsg.Response](code func(R) int16) func(kmsg.Response) []int16 {
	return func(resp kmsg.Response) []int16 { return []int16{code(resp.(R))} }
}

func refusals() []refusal {
	topicRead := []string{"ALLOW READ TOPIC LITERAL TOPIC_NAME"}
	return append([]refusal{
		{name: "Produce needs WRITE on the topic", want: kerr.TopicAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				return produceRequest(7, -1, r.topic, 0, makeBatch(noProducer, "mallory"))
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode}
			},
			unchanged: endOffsetIs(1),
			grants:    []string{"ALLOW WRITE TOPIC LITERAL TOPIC_NAME"}},
		{name: "Fetch needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
			writesNothing: "a read (a consumer's fetch moves no position; its records would come back as code -1)",
			req:           fetchReq(-1), codes: fetchCodes, grants: topicRead},
		{name: "a follower's Fetch needs CLUSTER_ACTION", want: kerr.TopicAuthorizationFailed.Code,
			writesNothing: "a follower's fetch would move its replica's position and the high watermark, but broker 77 is no replica: allowed, it is refused (NOT_LEADER_OR_FOLLOWER)",
			req:           fetchReq(77), codes: fetchCodes,
			// Allowed, a fetch by a broker that is no replica is refused otherwise.
			grants: []string{"ALLOW CLUSTER_ACTION CLUSTER LITERAL kafka-cluster"}, aliceWant: kerr.NotLeaderForPartition.Code},
		{name: "ListOffsets needs DESCRIBE on the topic", want: kerr.TopicAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrListOffsetsRequest()
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = r.topic
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp = -1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode}
			},
			grants: []string{"ALLOW DESCRIBE TOPIC LITERAL TOPIC_NAME"}},
		{name: "OffsetForLeaderEpoch needs DESCRIBE on the topic", want: kerr.TopicAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrOffsetForLeaderEpochRequest()
				rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
				rt.Topic = r.topic
				rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode}
			},
			grants: topicRead},
		{name: "Metadata of a named topic needs DESCRIBE", want: kerr.TopicAuthorizationFailed.Code,
			writesNothing: "a read (without auto-creation; the case that creates is Metadata auto-creation)",
			req:           metadataReq("", false),
			codes:         func(resp kmsg.Response) []int16 { return []int16{resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode} },
			grants:        []string{"ALLOW WRITE TOPIC LITERAL TOPIC_NAME"}},
		{name: "Metadata auto-creation needs CREATE", want: kerr.TopicAuthorizationFailed.Code,
			req:       metadataReq("-auto", true),
			codes:     func(resp kmsg.Response) []int16 { return []int16{resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode} },
			unchanged: noTopic("-auto"),
			// DESCRIBE of every topic, CREATE of this one only.
			grants: []string{"ALLOW DESCRIBE TOPIC LITERAL *", "ALLOW CREATE TOPIC PREFIXED TOPIC_NAME-auto"}},
		{name: "CreateTopics needs CREATE", want: kerr.TopicAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrCreateTopicsRequest()
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = r.topic+"-new", 1, 1
				req.Topics = append(req.Topics, rt)
				req.TimeoutMillis = 10000
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode}
			},
			unchanged: noTopic("-new"),
			grants:    []string{"ALLOW CREATE CLUSTER LITERAL kafka-cluster"}},
		{name: "DeleteTopics needs DELETE", want: kerr.TopicAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDeleteTopicsRequest()
				req.TopicNames, req.TimeoutMillis = []string{r.topic}, 10000
				req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &r.topic}} // v6+, which franz-go sends
				return req
			},
			codes:     topLevel(func(r *kmsg.DeleteTopicsResponse) int16 { return r.Topics[0].ErrorCode }),
			unchanged: partitionsAre(1),
			grants:    []string{"ALLOW DELETE TOPIC LITERAL TOPIC_NAME"}},
		{name: "CreatePartitions needs ALTER", want: kerr.TopicAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrCreatePartitionsRequest()
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = r.topic, 3
				req.Topics = append(req.Topics, rt)
				req.TimeoutMillis = 10000
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode}
			},
			unchanged: partitionsAre(1),
			grants:    []string{"ALLOW ALTER TOPIC PREFIXED TOPIC_NAME"}},
		{name: "DescribeConfigs of a topic needs DESCRIBE_CONFIGS", want: kerr.TopicAuthorizationFailed.Code,
			writesNothing: "a read",
			req:           describeConfigsReq(kmsg.ConfigResourceTypeTopic),
			codes:         topLevelResources,
			grants:        []string{"ALLOW ALTER_CONFIGS TOPIC LITERAL TOPIC_NAME"}},
		{name: "DescribeConfigs of a broker needs DESCRIBE_CONFIGS on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			writesNothing: "a read",
			req:           describeConfigsReq(kmsg.ConfigResourceTypeBroker),
			codes:         topLevelResources,
			grants:        []string{"ALLOW DESCRIBE_CONFIGS CLUSTER LITERAL kafka-cluster"}},
		{name: "FindCoordinator of a group needs DESCRIBE", want: kerr.GroupAuthorizationFailed.Code,
			writesNothing: "a read",
			req:           findCoordinatorReq(0), codes: topLevel(findCoordinatorCode),
			grants: []string{"ALLOW READ GROUP LITERAL GROUP_NAME"}},
		{name: "FindCoordinator of a transactional id needs DESCRIBE", want: kerr.TransactionalIDAuthorizationFailed.Code,
			writesNothing: "a read",
			setup:         txnSetup, // __transaction_state exists: alice's answer names the coordinator
			req:           findCoordinatorReq(1), codes: topLevel(findCoordinatorCode),
			grants: []string{"ALLOW DESCRIBE TRANSACTIONAL_ID LITERAL GROUP_NAME"}},
		{name: "FindCoordinator of a share-partition needs CLUSTER_ACTION", want: kerr.ClusterAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrFindCoordinatorRequest()
				req.CoordinatorType = 2
				req.CoordinatorKeys = []string{r.group + ":" + cluster.FormatUUID(cluster.UUID{1, 2, 3}) + ":0"}
				return req
			},
			codes:  topLevel(findCoordinatorCode),
			grants: []string{"ALLOW CLUSTER_ACTION CLUSTER LITERAL kafka-cluster"}},
		{name: "JoinGroup needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrJoinGroupRequest()
				req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = r.group+"-join", "consumer", 10000, 10000
				p := kmsg.NewJoinGroupRequestProtocol()
				p.Name, p.Metadata = "range", []byte{0, 0}
				req.Protocols = append(req.Protocols, p)
				return req
			},
			codes:     topLevel(func(r *kmsg.JoinGroupResponse) int16 { return r.ErrorCode }),
			unchanged: groupState("-join", "Dead"),
			grants:    []string{"ALLOW READ GROUP PREFIXED GROUP_NAME"}, aliceWant: kerr.MemberIDRequired.Code},
		// The leader's SyncGroup of a group awaiting it (leaderSetup): allowed,
		// it would store the assignment and make the group Stable.
		{name: "SyncGroup needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			setup: leaderSetup,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrSyncGroupRequest()
				req.Group, req.MemberID, req.Generation = r.group+"-sync", r.member, r.generation
				req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
				req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: r.member, MemberAssignment: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
				return req
			},
			codes:     topLevel(func(r *kmsg.SyncGroupResponse) int16 { return r.ErrorCode }),
			unchanged: groupState("-sync", "CompletingRebalance"),
			grants:    []string{"ALLOW READ GROUP LITERAL GROUP_NAME-sync"}},
		{name: "Heartbeat needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			writesNothing: "a heartbeat only keeps a member's session alive, in memory, and member m does not exist: allowed, it is UNKNOWN_MEMBER_ID",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrHeartbeatRequest()
				req.Group, req.MemberID, req.Generation = r.group, "m", 1
				return req
			},
			codes:  topLevel(func(r *kmsg.HeartbeatResponse) int16 { return r.ErrorCode }),
			grants: []string{"ALLOW READ GROUP LITERAL GROUP_NAME"}, aliceWant: kerr.UnknownMemberID.Code},
		{name: "LeaveGroup needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			setup: memberSetup,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrLeaveGroupRequest()
				req.Group = r.group + "-member"
				m := kmsg.NewLeaveGroupRequestMember()
				m.MemberID = r.member
				req.Members = append(req.Members, m)
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				r := resp.(*kmsg.LeaveGroupResponse)
				if r.ErrorCode == 0 && len(r.Members) == 1 {
					return []int16{r.Members[0].ErrorCode}
				}
				return []int16{r.ErrorCode}
			},
			// The member is still there after mallory's request; alice removes it.
			unchanged: memberIn(true),
			grants:    []string{"ALLOW READ GROUP LITERAL GROUP_NAME-member"}},
		{name: "OffsetCommit needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			req: commitReq, codes: commitCodes, unchanged: committedIs("", 1),
			grants: []string{"ALLOW READ GROUP LITERAL GROUP_NAME", "ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
		{name: "OffsetCommit needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
			req: commitReq, codes: commitCodes, unchanged: committedIs("", 1),
			given:  []string{"ALLOW READ GROUP LITERAL GROUP_NAME"},
			grants: []string{"ALLOW READ GROUP LITERAL GROUP_NAME", "ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
		{name: "OffsetFetch needs DESCRIBE on the group", want: kerr.GroupAuthorizationFailed.Code,
			writesNothing: "a read",
			req:           offsetFetchReq, codes: offsetFetchCodes,
			grants: []string{"ALLOW DESCRIBE GROUP LITERAL GROUP_NAME", "ALLOW DESCRIBE TOPIC LITERAL TOPIC_NAME"}},
		{name: "OffsetFetch needs DESCRIBE on the topic", want: kerr.TopicAuthorizationFailed.Code,
			writesNothing: "a read",
			req:           offsetFetchReq, codes: offsetFetchCodes,
			given:  []string{"ALLOW DESCRIBE GROUP LITERAL GROUP_NAME"},
			grants: []string{"ALLOW READ GROUP LITERAL GROUP_NAME", "ALLOW DESCRIBE TOPIC LITERAL TOPIC_NAME"}},
		{name: "DescribeGroups needs DESCRIBE on the group", want: kerr.GroupAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDescribeGroupsRequest()
				req.Groups = []string{r.group}
				return req
			},
			codes:  topLevel(func(r *kmsg.DescribeGroupsResponse) int16 { return r.Groups[0].ErrorCode }),
			grants: []string{"ALLOW DESCRIBE GROUP LITERAL GROUP_NAME"}},
		{name: "ConsumerGroupHeartbeat needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			req: consumerJoinReq, codes: topLevel(func(r *kmsg.ConsumerGroupHeartbeatResponse) int16 { return r.ErrorCode }),
			unchanged: notConsumerGroup,
			grants:    []string{"ALLOW READ GROUP LITERAL GROUP_NAME", "ALLOW DESCRIBE TOPIC LITERAL TOPIC_NAME"}},
		{name: "ConsumerGroupHeartbeat needs DESCRIBE on the subscribed topics", want: kerr.TopicAuthorizationFailed.Code,
			req: consumerJoinReq, codes: topLevel(func(r *kmsg.ConsumerGroupHeartbeatResponse) int16 { return r.ErrorCode }),
			unchanged: notConsumerGroup,
			given:     []string{"ALLOW READ GROUP LITERAL GROUP_NAME"},
			grants:    []string{"ALLOW READ GROUP LITERAL GROUP_NAME", "ALLOW DESCRIBE TOPIC LITERAL TOPIC_NAME"}},
		{name: "ConsumerGroupDescribe needs DESCRIBE on the group", want: kerr.GroupAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrConsumerGroupDescribeRequest()
				req.Groups = []string{r.group}
				return req
			},
			codes:  topLevel(func(r *kmsg.ConsumerGroupDescribeResponse) int16 { return r.Groups[0].ErrorCode }),
			grants: []string{"ALLOW DESCRIBE GROUP LITERAL GROUP_NAME"}, aliceWant: kerr.GroupIDNotFound.Code},
		{name: "DeleteGroups needs DELETE on the group", want: kerr.GroupAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDeleteGroupsRequest()
				req.Groups = []string{r.group}
				return req
			},
			codes:     topLevel(func(r *kmsg.DeleteGroupsResponse) int16 { return r.Groups[0].ErrorCode }),
			unchanged: committedIs("", 1),
			grants:    []string{"ALLOW DELETE GROUP LITERAL GROUP_NAME"}},
		{name: "OffsetDelete needs DELETE on the group", want: kerr.GroupAuthorizationFailed.Code,
			req: offsetDeleteReq, codes: offsetDeleteCodes, unchanged: committedIs("", 1),
			grants: []string{"ALLOW DELETE GROUP LITERAL GROUP_NAME", "ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
		{name: "OffsetDelete needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
			req: offsetDeleteReq, codes: offsetDeleteCodes, unchanged: committedIs("", 1),
			given:  []string{"ALLOW DELETE GROUP LITERAL GROUP_NAME"},
			grants: []string{"ALLOW DELETE GROUP LITERAL GROUP_NAME", "ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
		{name: "InitProducerId needs IDEMPOTENT_WRITE or WRITE on a topic", want: kerr.ClusterAuthorizationFailed.Code,
			setup:     nextProducerID,
			req:       func(*refusalRun) kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() },
			codes:     topLevel(func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode }),
			unchanged: nextProducerID, // no producer id was taken
			grants:    []string{"ALLOW WRITE TOPIC LITERAL TOPIC_NAME"}},
		{name: "InitProducerId with a transactional id needs WRITE on it", want: kerr.TransactionalIDAuthorizationFailed.Code,
			setup: txnSetup,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.TransactionalID = &r.group
				req.TransactionTimeoutMillis = 10000
				return req
			},
			codes:     topLevel(func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode }),
			unchanged: txnIs("Empty", 0), // the epoch did not move
			grants:    []string{"ALLOW WRITE TRANSACTIONAL_ID LITERAL GROUP_NAME"}},
		{name: "DescribeUserScramCredentials needs DESCRIBE on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			writesNothing: "a read",
			req:           func(*refusalRun) kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() },
			codes:         topLevel(func(r *kmsg.DescribeUserSCRAMCredentialsResponse) int16 { return r.ErrorCode }),
			grants:        []string{"ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster"}},
		{name: "AlterUserScramCredentials needs ALTER on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
				u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = r.topic, 2, 4096, []byte("salt"), []byte("salted password")
				req.Upsertions = append(req.Upsertions, u)
				return req
			},
			codes:     topLevel(func(r *kmsg.AlterUserSCRAMCredentialsResponse) int16 { return r.Results[0].ErrorCode }),
			unchanged: userAbsent,
			grants:    []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}},
		{name: "DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			writesNothing: "a read",
			req:           func(*refusalRun) kmsg.Request { return kmsg.NewPtrDescribeClientQuotasRequest() },
			codes:         topLevel(func(r *kmsg.DescribeClientQuotasResponse) int16 { return r.ErrorCode }),
			grants:        []string{"ALLOW DESCRIBE_CONFIGS CLUSTER LITERAL kafka-cluster"}},
		{name: "AlterClientQuotas needs ALTER_CONFIGS on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrAlterClientQuotasRequest()
				e := kmsg.NewAlterClientQuotasRequestEntry()
				ee := kmsg.NewAlterClientQuotasRequestEntryEntity()
				ee.Type, ee.Name = "user", &r.topic
				op := kmsg.NewAlterClientQuotasRequestEntryOp()
				op.Key, op.Value = "producer_byte_rate", 1<<30
				e.Entity, e.Ops = append(e.Entity, ee), append(e.Ops, op)
				req.Entries = append(req.Entries, e)
				return req
			},
			codes:     topLevel(func(r *kmsg.AlterClientQuotasResponse) int16 { return r.Entries[0].ErrorCode }),
			unchanged: quotaAbsent,
			grants:    []string{"ALLOW ALTER_CONFIGS CLUSTER LITERAL kafka-cluster"}},
		{name: "DescribeAcls needs DESCRIBE on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(*refusalRun) kmsg.Request {
				req := kmsg.NewPtrDescribeACLsRequest()
				req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = 1, 1, 1, 1
				return req
			},
			codes:  topLevel(func(r *kmsg.DescribeACLsResponse) int16 { return r.ErrorCode }),
			grants: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}},
		{name: "CreateAcls needs ALTER on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrCreateACLsRequest()
				cr := kmsg.NewCreateACLsRequestCreation()
				cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = 2, r.topic, 3
				cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:"+r.topic, "*", 3, 3
				req.Creations = append(req.Creations, cr)
				return req
			},
			codes: topLevel(func(r *kmsg.CreateACLsResponse) int16 { return r.Results[0].ErrorCode }),
			unchanged: func(t *testing.T, r *refusalRun) {
				if n := aclsOf(t, r, "User:"+r.topic); n != 0 {
					t.Fatalf("%d ACLs created", n)
				}
			},
			grants: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}},
		{name: "DeleteAcls needs ALTER on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			setup: func(t *testing.T, r *refusalRun) {
				grant(t, r.topic, r.names([]string{"DENY ALL TOPIC LITERAL TOPIC_NAME"})...)
			},
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDeleteACLsRequest()
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 1, 1, 1, 1
				p := "User:" + r.topic
				f.Principal = &p
				req.Filters = append(req.Filters, f)
				return req
			},
			codes: topLevel(func(r *kmsg.DeleteACLsResponse) int16 { return r.Results[0].ErrorCode }),
			unchanged: func(t *testing.T, r *refusalRun) {
				if n := aclsOf(t, r, "User:"+r.topic); n != 1 {
					t.Fatalf("%d ACLs of User:%s left, want 1", n, r.topic)
				}
			},
			grants: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}},
	}, shareRefusals()...)
}

// consumerJoinReq is a KIP-848 join of the case's group, subscribed to its topic.
func consumerJoinReq(r *refusalRun) kmsg.Request {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = r.group, "member-"+r.group, 30000
	req.SubscribedTopicNames = []string{r.topic}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// notConsumerGroup checks that the case's group did not become a KIP-848 group.
func notConsumerGroup(t *testing.T, r *refusalRun) {
	groups, err := r.adm.ListGroups(refusalCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if g.Group == r.group && g.GroupType == "consumer" {
			t.Fatalf("group %s became a consumer group", r.group)
		}
	}
}

func topLevelResources(resp kmsg.Response) []int16 {
	return []int16{resp.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode}
}

func commitCodes(resp kmsg.Response) []int16 {
	var out []int16
	for _, t := range resp.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

func offsetDeleteReq(r *refusalRun) kmsg.Request {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = r.group
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = r.topic
	rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	return req
}

func offsetDeleteCodes(resp kmsg.Response) []int16 {
	r := resp.(*kmsg.OffsetDeleteResponse)
	if r.ErrorCode != 0 {
		return []int16{r.ErrorCode}
	}
	var out []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}
