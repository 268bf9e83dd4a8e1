package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"skiff/internal/testnode"
)

// TestConsoleACLs: with the ACL authorizer, a user sees only the topics and
// groups it may DESCRIBE and reads records only where it may READ (403
// otherwise); a super user is an admin of the console without console-admins.
func TestConsoleACLs(t *testing.T) {
	// User:ANONYMOUS (PLAINTEXT) is a super user here only to set the cluster up.
	n := testnode.Start(t, "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"--authorizer", "acl", "--super-users", "User:ANONYMOUS;User:boss")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(t, n.Listeners["PLAINTEXT"])
	adm := kadm.NewClient(cl)
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pw"},
		{User: "boss", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "boss-pw"},
	}); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"pub", "secret"} {
		if res, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || res.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, res.Err)
		}
		produce(t, ctx, cl, topic, 3)
		offsets := kadm.Offsets{}
		offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
		if err := adm.CommitAllOffsets(ctx, "g"+topic, offsets); err != nil {
			t.Fatal(err)
		}
	}
	acls := kadm.NewACLs().Allow("User:alice").Topics("pub").Groups("gpub").
		Operations(kadm.OpDescribe, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
		t.Fatalf("create ACLs: %v %v", err, res)
	}
	base := "http://" + n.HTTPAddr

	alice := login(t, base, "alice", "alice-pw")
	topics := get(t, alice, base+"/topics").body
	if !strings.Contains(topics, `data-topic="pub"`) || strings.Contains(topics, `data-topic="secret"`) {
		t.Errorf("alice's topics page should list pub and not secret:\n%s", topics)
	}
	groups := get(t, alice, base+"/groups").body
	if !strings.Contains(groups, `data-group="gpub"`) || strings.Contains(groups, `data-group="gsecret"`) {
		t.Errorf("alice's groups page should list gpub and not gsecret:\n%s", groups)
	}
	for path, want := range map[string]int{
		"/topics/pub": http.StatusOK, "/topics/pub/messages?partition=0&offset=0": http.StatusOK, "/groups/gpub": http.StatusOK,
		"/topics/secret": http.StatusForbidden, "/topics/secret/messages?partition=0&offset=0": http.StatusForbidden,
		"/groups/gsecret": http.StatusForbidden,
	} {
		if got := get(t, alice, base+path).code; got != want {
			t.Errorf("alice GET %s: %d, want %d", path, got, want)
		}
	}
	if body := get(t, alice, base+"/topics/pub/messages?partition=0&offset=0").body; !strings.Contains(body, `data-offset="2"`) {
		t.Errorf("alice does not see the records of pub:\n%s", body)
	}
	if resp := post(t, alice, base+"/topics", url.Values{"name": {"made"}, "confirm": {"1"}, "csrf": {csrfOf(t, alice, base+"/topics")}}); resp.code != http.StatusForbidden {
		t.Errorf("create by alice: %d, want 403", resp.code)
	}

	boss := login(t, base, "boss", "boss-pw")
	csrf := csrfOf(t, boss, base+"/topics")
	if resp := post(t, boss, base+"/topics", url.Values{"name": {"made"}, "csrf": {csrf}, "confirm": {"1"}}); resp.code != http.StatusSeeOther {
		t.Errorf("create by the super user: %d, want 303: %s", resp.code, resp.body)
	}
	topicExists(t, ctx, n.Listeners["PLAINTEXT"], "made", true)
}
