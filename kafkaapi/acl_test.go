package kafkaapi_test

// Authorization beyond single refusals: what Metadata and ListGroups show, the
// patterns (literal, prefixed, the wildcard), DENY over ALLOW, super users,
// idempotent producers (KIP-679), authorized operations, the metric, and a
// refused acks=0 produce.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// aclTopics creates topics as the super user.
func aclTopics(t *testing.T, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := aclAdmin(t).CreateTopics(ctx, 1, 1, nil, names...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// metadataTopics asks Metadata (franz-go picks the version, 8) for names (nil:
// every topic) and returns each answered topic's error code by name.
func metadataTopics(t *testing.T, cl *kgo.Client, names ...string) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	if names != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	for _, n := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	resp := aclRequest[*kmsg.MetadataResponse](t, cl, req)
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		out[*rt.Topic] = rt.ErrorCode
		if rt.ErrorCode == kerr.TopicAuthorizationFailed.Code && (len(rt.Partitions) > 0 || rt.TopicID != [16]byte{}) {
			t.Errorf("refused topic %s shows its partitions or id", *rt.Topic)
		}
	}
	return out
}

// TestACLMetadata: a listing of every topic shows only those the client may
// DESCRIBE (by a literal, a prefixed or an implied ACL); a named topic without
// it answers TOPIC_AUTHORIZATION_FAILED, whether it exists or not, and nothing
// is created.
func TestACLMetadata(t *testing.T) {
	p := topicName(t, "")
	visible, prefixed, implied, hidden := p+"-visible", p+"-pre-x", p+"-implied", p+"-hidden"
	aclTopics(t, visible, prefixed, implied, hidden)
	who := "metadata-" + p
	grant(t, who, "ALLOW DESCRIBE TOPIC LITERAL "+visible, "ALLOW DESCRIBE TOPIC PREFIXED "+p+"-pre", "ALLOW READ TOPIC LITERAL "+implied)
	createACLUser(t, who)
	cl := aclUserClient(t, who)

	all := metadataTopics(t, cl)
	var mine []string
	for name := range all {
		if strings.HasPrefix(name, p) {
			mine = append(mine, name)
		}
	}
	slices.Sort(mine)
	if want := []string{implied, prefixed, visible}; !slices.Equal(mine, want) {
		t.Fatalf("every topic lists %v, want %v", mine, want)
	}
	// v0's empty list also means every topic (franz-go would send v8: a raw
	// connection).
	c := dial(t, aclNode.addrs["SASL_PLAINTEXT"])
	wantCode(t, "login", saslLogin(t, c, saslMechanism("SCRAM-SHA-512", who, aclPassword), 2).ErrorCode, 0)
	v0 := kmsg.NewPtrMetadataRequest()
	v0.SetVersion(0)
	v0.Topics = []kmsg.MetadataRequestTopic{}
	var v0names []string
	for _, rt := range c.do(v0).(*kmsg.MetadataResponse).Topics {
		v0names = append(v0names, *rt.Topic)
	}
	if len(v0names) != len(all) || slices.Contains(v0names, hidden) || !slices.Contains(v0names, visible) {
		t.Fatalf("v0 lists %v, v8 %d topics", v0names, len(all))
	}
	named := metadataTopics(t, cl, visible, hidden, p+"-missing")
	for name, want := range map[string]int16{visible: 0, hidden: kerr.TopicAuthorizationFailed.Code, p + "-missing": kerr.TopicAuthorizationFailed.Code} {
		wantCode(t, "Metadata of "+name, named[name], want)
	}
	if ok, _ := topicExists(t, &refusalRun{adm: aclAdmin(t)}, p+"-missing"); ok {
		t.Fatal("a refused Metadata created the topic")
	}
}

// createACLUser makes a SCRAM user of the ACL node with the shared password.
func createACLUser(t *testing.T, user string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := aclAdmin(t).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: aclPassword}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestACLListGroups: ListGroups shows the groups the client may DESCRIBE, or
// all of them with DESCRIBE on the cluster.
func TestACLListGroups(t *testing.T) {
	p := topicName(t, "")
	aclTopics(t, p)
	adm := aclAdmin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, g := range []string{p + "-mine", p + "-other"} {
		offs := kadm.Offsets{}
		offs.AddOffset(p, 0, 0, -1)
		if err := adm.CommitAllOffsets(ctx, g, offs); err != nil {
			t.Fatal(err)
		}
	}
	list := func(who string) []string {
		resp := aclRequest[*kmsg.ListGroupsResponse](t, aclUserClient(t, who), kmsg.NewPtrListGroupsRequest())
		var out []string
		for _, g := range resp.Groups {
			if strings.HasPrefix(g.Group, p) {
				out = append(out, g.Group)
			}
		}
		slices.Sort(out)
		return out
	}
	who, admin := "groups-"+p, "groups-admin-"+p
	createACLUser(t, who)
	createACLUser(t, admin)
	grant(t, who, "ALLOW DESCRIBE GROUP LITERAL "+p+"-mine")
	grant(t, admin, "ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster")
	if got := list(who); !slices.Equal(got, []string{p + "-mine"}) {
		t.Fatalf("%s lists %v", who, got)
	}
	if got := list(admin); !slices.Equal(got, []string{p + "-mine", p + "-other"}) {
		t.Fatalf("%s lists %v", admin, got)
	}
	if got := list(aclMallory); len(got) != 0 {
		t.Fatalf("mallory lists %v", got)
	}
}

// TestACLPatterns produces as users whose rights come from literal, prefixed
// and wildcard ACLs, DENY ACLs that override them, and a super user, with
// franz-go's idempotent producer (InitProducerId allowed by WRITE on some
// topic, KIP-679).
func TestACLPatterns(t *testing.T) {
	p := topicName(t, "")
	exact, pre, other := p+"-exact", p+"-pre-1", p+"-other"
	aclTopics(t, exact, pre, other)
	type want = produceWant
	cases := []struct {
		name  string
		acls  []string
		wants []want
	}{
		{"literal", []string{"ALLOW WRITE TOPIC LITERAL " + exact},
			[]want{{exact, 0}, {pre, kerr.TopicAuthorizationFailed.Code}}},
		{"prefixed", []string{"ALLOW WRITE TOPIC PREFIXED " + p + "-pre"},
			[]want{{pre, 0}, {exact, kerr.TopicAuthorizationFailed.Code}}},
		{"a literal is not a prefix", []string{"ALLOW WRITE TOPIC LITERAL " + p + "-pre"},
			[]want{{pre, kerr.TopicAuthorizationFailed.Code}}},
		{"wildcard", []string{"ALLOW WRITE TOPIC LITERAL *"},
			[]want{{exact, 0}, {pre, 0}, {other, 0}}},
		{"DENY literal over ALLOW wildcard", []string{"ALLOW WRITE TOPIC LITERAL *", "DENY WRITE TOPIC LITERAL " + exact},
			[]want{{exact, kerr.TopicAuthorizationFailed.Code}, {pre, 0}}},
		{"DENY prefixed over ALLOW literal", []string{"ALLOW WRITE TOPIC LITERAL " + pre, "DENY ALL TOPIC PREFIXED " + p},
			[]want{{pre, kerr.TopicAuthorizationFailed.Code}}},
		{"DENY of another operation", []string{"ALLOW WRITE TOPIC PREFIXED " + p, "DENY READ TOPIC PREFIXED " + p},
			[]want{{exact, 0}, {other, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			who := "patterns-" + topicName(t, "")
			createACLUser(t, who)
			grant(t, who, c.acls...)
			produceAs(t, who, c.wants...)
		})
	}
	t.Run("super user", func(t *testing.T) {
		// User:ANONYMOUS is a super user on the PLAINTEXT listener, despite a DENY.
		grant(t, "ANONYMOUS", "DENY ALL TOPIC LITERAL "+other)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := aclAdminClient(t).ProduceSync(ctx, &kgo.Record{Topic: other, Value: []byte("super")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	})
}

// produceWant is what producing to topic answers.
type produceWant struct {
	topic string
	code  int16
}

// produceAs produces one record to each topic as user with franz-go's
// idempotent producer and checks each result.
func produceAs(t *testing.T, user string, wants ...produceWant) {
	t.Helper()
	cl := aclUserClient(t, user, kgo.RecordRetries(1), kgo.ProducerLinger(0))
	for _, w := range wants {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: w.topic, Value: []byte(user)}).FirstErr()
		cancel()
		var ke *kerr.Error
		switch {
		case w.code == 0 && err != nil:
			t.Fatalf("%s produce to %s: %v", user, w.topic, err)
		case w.code != 0 && (!errors.As(err, &ke) || ke.Code != w.code):
			t.Fatalf("%s produce to %s: %v, want %s", user, w.topic, err, errName(w.code))
		}
	}
}

// TestACLIdempotence: without WRITE on any topic nor IDEMPOTENT_WRITE an
// idempotent producer gets no producer id (CLUSTER_AUTHORIZATION_FAILED);
// IDEMPOTENT_WRITE alone gives one.
func TestACLIdempotence(t *testing.T) {
	who := "idempotent-" + topicName(t, "")
	createACLUser(t, who)
	cl := aclUserClient(t, who)
	code := func() int16 {
		return aclRequest[*kmsg.InitProducerIDResponse](t, cl, kmsg.NewPtrInitProducerIDRequest()).ErrorCode
	}
	wantCode(t, "InitProducerId without rights", code(), kerr.ClusterAuthorizationFailed.Code)
	grant(t, who, "ALLOW READ TOPIC LITERAL *") // READ is not WRITE
	wantCode(t, "InitProducerId with READ", code(), kerr.ClusterAuthorizationFailed.Code)
	grant(t, who, "ALLOW IDEMPOTENT_WRITE CLUSTER LITERAL kafka-cluster")
	wantCode(t, "InitProducerId with IDEMPOTENT_WRITE", code(), 0)
}

// TestACLAuthorizedOperations: Metadata v8 and DescribeGroups v4 report what
// the client may do when asked.
func TestACLAuthorizedOperations(t *testing.T) {
	p := topicName(t, "")
	aclTopics(t, p)
	who := "ops-" + p
	createACLUser(t, who)
	grant(t, who, "ALLOW READ TOPIC LITERAL "+p, "ALLOW DESCRIBE GROUP LITERAL "+p, "ALLOW ALTER CLUSTER LITERAL kafka-cluster")
	// Metadata v8 is the last version reporting the cluster's operations (v11
	// moved them to DescribeCluster): franz-go sends the newest version unless capped.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.Metadata), 8)
	cl := aclUserClient(t, who, kgo.MaxVersions(versions))
	bits := func(ops ...kmsg.ACLOperation) int32 {
		var n int32
		for _, op := range ops {
			n |= 1 << op
		}
		return n
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(8)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(p)}}
	req.IncludeClusterAuthorizedOperations, req.IncludeTopicAuthorizedOperations = true, true
	md := aclRequest[*kmsg.MetadataResponse](t, cl, req)
	if want := bits(kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe); md.AuthorizedOperations != want {
		t.Errorf("cluster operations %b, want %b", md.AuthorizedOperations, want)
	}
	if want := bits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe); len(md.Topics) != 1 || md.Topics[0].AuthorizedOperations != want {
		t.Errorf("topic operations %+v, want %b", md.Topics, want)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(4)
	dg.Groups, dg.IncludeAuthorizedOperations = []string{p}, true
	resp := aclRequest[*kmsg.DescribeGroupsResponse](t, cl, dg)
	if want := bits(kmsg.ACLOperationDescribe); len(resp.Groups) != 1 || resp.Groups[0].AuthorizedOperations != want {
		t.Errorf("group operations %+v, want %b", resp.Groups, want)
	}
}

// TestACLProduceAcksZero: a refused acks=0 produce gets no answer and writes
// nothing; the connection goes on.
func TestACLProduceAcksZero(t *testing.T) {
	p := topicName(t, "")
	aclTopics(t, p)
	c := dial(t, aclNode.addrs["SASL_PLAINTEXT"])
	wantCode(t, "login", saslLogin(t, c, saslMechanism("SCRAM-SHA-512", aclMallory, aclPassword), 2).ErrorCode, 0)
	c.send(produceRequest(7, 0, p, 0, makeBatch(noProducer, "unanswered")))
	// The next answer is the Metadata's: the produce had none.
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(8)
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(p)}}
	wantCode(t, "Metadata after acks=0", c.do(md).(*kmsg.MetadataResponse).Topics[0].ErrorCode, kerr.TopicAuthorizationFailed.Code)
	endOffsetIs(0)(t, &refusalRun{topic: p, adm: aclAdmin(t)})
}

// TestACLMetric: refusals are counted by API, resource type and operation.
func TestACLMetric(t *testing.T) {
	p := topicName(t, "")
	aclTopics(t, p)
	resp := aclRequest[*kmsg.DeleteTopicsResponse](t, aclUserClient(t, aclMallory), &kmsg.DeleteTopicsRequest{TopicNames: []string{p}, Topics: []kmsg.DeleteTopicsRequestTopic{{Topic: &p}}, TimeoutMillis: 5000})
	wantCode(t, "DeleteTopics", resp.Topics[0].ErrorCode, kerr.TopicAuthorizationFailed.Code)
	r, err := http.Get("http://" + aclNode.node.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	want := `skiff_authorization_failures_total{api="DeleteTopics",operation="DELETE",resource_type="TOPIC"}`
	if !strings.Contains(string(body), want) {
		t.Fatalf("/metrics has no %s", want)
	}
	waitACLLog(t, "authorization failed", "principal=User:mallory", "api=DeleteTopics", "resource_name="+p)
}
