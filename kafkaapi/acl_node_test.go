package kafkaapi_test

// The ACL node: one node with the ACL authorizer, shared by the authorization
// tests. Its PLAINTEXT listener is the administrator's (User:ANONYMOUS is a super
// user); users log in on its SASL_PLAINTEXT listener. Helpers reach it as the
// administrator or as a user, and grant ACLs.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/appliance"
)

// aclNode is the shared ACL node, started on first use and closed by TestMain.
var aclNode listenerNode

// The ACL node's users: aclAlice is granted rights by each test, aclMallory never.
const (
	aclAlice    = "alice"
	aclMallory  = "mallory"
	aclPassword = "acl-secret"
)

// startACLNode returns the shared ACL node: listeners PLAINTEXT (the
// administrator, User:ANONYMOUS, a super user) and SASL_PLAINTEXT (SCRAM), the
// ACL authorizer, users alice and mallory; its debug logs are in aclNode.logs.
func startACLNode(t testing.TB) *appliance.Node {
	t.Helper()
	return aclNode.start(t, "kafkaapi-acl", func(c *appliance.Config) {
		c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"}
		c.SASLMechanisms = []string{"SCRAM-SHA-512", "SCRAM-SHA-256"}
		c.Authorizer = appliance.AuthorizerACL
		c.SuperUsers = "User:ANONYMOUS"
	}, func() error {
		adm := kadm.NewClient(aclAdminClient(t))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var ups []kadm.UpsertSCRAM
		for _, u := range []string{aclAlice, aclMallory} {
			ups = append(ups, kadm.UpsertSCRAM{User: u, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: aclPassword})
		}
		res, err := adm.AlterUserSCRAMs(ctx, nil, ups)
		if err == nil {
			err = res.Error()
		}
		return err
	})
}

func closeACLNode() error { return aclNode.close() }

// aclAdminClient is a franz-go client of the ACL node's PLAINTEXT listener: the
// super user.
func aclAdminClient(t testing.TB) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(aclNode.addrs["PLAINTEXT"]), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// aclAdmin is a kadm client of the super user.
func aclAdmin(t testing.TB) *kadm.Client {
	startACLNode(t)
	return kadm.NewClient(aclAdminClient(t))
}

// aclUserClient is a franz-go client logged in as user (SCRAM-SHA-512) on the
// ACL node's SASL_PLAINTEXT listener. Its requests are not retried, so a
// refusal comes back as it is.
func aclUserClient(t testing.TB, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	startACLNode(t)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(aclNode.addrs["SASL_PLAINTEXT"]),
		kgo.SASL(saslMechanism("SCRAM-SHA-512", user, aclPassword)), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// aclBroker is the ACL node as a broker of cl: requests to it are sent as they
// are, without franz-go's routing to leaders or coordinators.
func aclBroker(t testing.TB, cl *kgo.Client) *kgo.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("ping the ACL node: %v", err)
	}
	return cl.Broker(int(aclNode.node.ID()))
}

// aclRequest sends req to the ACL node through cl and returns the answer.
func aclRequest[R kmsg.Response](t testing.TB, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := aclBroker(t, cl).Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// grant creates ACLs as the super user: each "PERMISSION OPERATION RESOURCE
// PATTERN NAME" for principal User:user from every host (DENY READ TOPIC
// PREFIXED orders-).
func grant(t testing.TB, user string, acls ...string) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		f := strings.Fields(a)
		if len(f) != 5 {
			t.Fatalf("ACL %q: want PERMISSION OPERATION RESOURCE PATTERN NAME", a)
		}
		perm, err1 := acl.ParsePermission(f[0])
		op, err2 := acl.ParseOperation(f[1])
		rt, err3 := acl.ParseResourceType(f[2])
		pt, err4 := acl.ParsePatternType(f[3])
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatalf("ACL %q: %v", a, err)
		}
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceType(rt), f[4], kmsg.ACLResourcePatternType(pt)
		cr.Principal, cr.Host = "User:"+user, "*"
		cr.Operation, cr.PermissionType = kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
		req.Creations = append(req.Creations, cr)
	}
	startACLNode(t)
	resp := aclRequest[*kmsg.CreateACLsResponse](t, aclAdminClient(t), req)
	for i, r := range resp.Results {
		wantCode(t, "create ACL "+acls[i], r.ErrorCode, 0)
	}
}

// waitACLLog waits until the ACL node has logged a line containing all of parts.
func waitACLLog(t testing.TB, parts ...string) {
	t.Helper()
	waitLogIn(t, aclNode.logs, parts...)
}
