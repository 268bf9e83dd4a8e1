package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// TestConsoleActions: on a node whose SASL listener makes the console ask for a
// login, pages need one, and the internal API needs the console key; write actions are refused (403) without a session, for a
// user who is not an admin, and without the CSRF token; an admin's first post
// only shows the confirmation (a reset's dry run changes no offset) and the
// confirmed one does it, as kadm then sees.
func TestConsoleActions(t *testing.T) {
	n := testnode.Start(t, "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "--console-admins", "boss")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(t, n.Listeners["PLAINTEXT"])
	adm := kadm.NewClient(cl)
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "boss", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "boss-pw"},
		{User: "reader", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "reader-pw"},
	}); err != nil {
		t.Fatal(err)
	}
	base := "http://" + n.HTTPAddr

	anon := newBrowserlessClient(t)
	if resp := get(t, anon, base+"/topics"); resp.code != http.StatusSeeOther || !strings.HasPrefix(resp.location, "/login") {
		t.Errorf("GET /topics without a login: %d to %q, want 303 to /login", resp.code, resp.location)
	}
	if resp := post(t, anon, base+"/topics", url.Values{"name": {"made"}, "confirm": {"1"}}); resp.code != http.StatusForbidden {
		t.Errorf("create without a session: %d, want 403", resp.code)
	}
	if resp := post(t, anon, base+"/login", url.Values{"user": {"boss"}, "password": {"wrong"}}); resp.code != http.StatusUnauthorized {
		t.Errorf("a wrong password: %d, want 401", resp.code)
	}
	// The nodes' own API answers only requests carrying the cluster's console key.
	for _, path := range []string{"/v1/console/node?all_parts=1", "/v1/console/records?topic=made&partition=0&offset=0&max_bytes=1000"} {
		if resp := get(t, anon, base+path); resp.code != http.StatusForbidden {
			t.Errorf("GET %s without the console key: %d, want 403", path, resp.code)
		}
	}

	reader := login(t, base, "reader", "reader-pw")
	if resp := post(t, reader, base+"/topics", url.Values{"name": {"made"}, "confirm": {"1"}, "csrf": {csrfOf(t, reader, base+"/topics")}}); resp.code != http.StatusForbidden {
		t.Errorf("create by a user who is not an admin: %d, want 403", resp.code)
	}

	boss := login(t, base, "boss", "boss-pw")
	csrf := csrfOf(t, boss, base+"/topics")
	if resp := post(t, boss, base+"/topics", url.Values{"name": {"made"}, "partitions": {"2"}, "confirm": {"1"}}); resp.code != http.StatusForbidden {
		t.Errorf("create without the CSRF token: %d, want 403", resp.code)
	}
	if resp := post(t, boss, base+"/topics", url.Values{"name": {"made"}, "partitions": {"2"}, "confirm": {"1"}, "csrf": {"forged"}}); resp.code != http.StatusForbidden {
		t.Errorf("create with a forged CSRF token: %d, want 403", resp.code)
	}
	if resp := post(t, boss, base+"/topics", url.Values{"name": {"made"}, "partitions": {"2"}, "csrf": {csrf}}); resp.code != http.StatusOK || !strings.Contains(resp.body, `id="confirm"`) {
		t.Errorf("create without confirm: %d, want 200 and a confirmation page", resp.code)
	}
	topicExists(t, ctx, n.Listeners["PLAINTEXT"], "made", false)
	if resp := post(t, boss, base+"/topics", url.Values{"name": {"made"}, "partitions": {"2"}, "csrf": {csrf}, "confirm": {"1"}}); resp.code != http.StatusSeeOther {
		t.Fatalf("create, confirmed: %d, want 303: %s", resp.code, resp.body)
	}
	topicExists(t, ctx, n.Listeners["PLAINTEXT"], "made", true)

	post(t, boss, base+"/topics/made/config", url.Values{"name": {"retention.ms"}, "value": {"3600000"}, "csrf": {csrf}})
	if got := topicConfig(t, ctx, adm, "made", "retention.ms"); got == "3600000" {
		t.Error("the config changed before it was confirmed")
	}
	if resp := post(t, boss, base+"/topics/made/config", url.Values{"name": {"retention.ms"}, "value": {"3600000"}, "csrf": {csrf}, "confirm": {"1"}}); resp.code != http.StatusSeeOther {
		t.Fatalf("set a config, confirmed: %d: %s", resp.code, resp.body)
	}
	if got := topicConfig(t, ctx, adm, "made", "retention.ms"); got != "3600000" {
		t.Errorf("retention.ms is %s after the change, want 3600000", got)
	}

	// A group that committed offsets 5 of both partitions and has no members now.
	produce(t, ctx, cl, "made", 20)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "made", Partition: 0, At: 5, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "made", Partition: 1, At: 5, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g1", offsets); err != nil {
		t.Fatal(err)
	}
	gpath := base + "/groups/g1"
	dry := post(t, boss, gpath+"/reset", url.Values{"to": {"earliest"}, "csrf": {csrf}})
	if dry.code != http.StatusOK || !strings.Contains(dry.body, `id="dry-run"`) {
		t.Fatalf("reset dry run: %d: %s", dry.code, dry.body)
	}
	if rows := regexp.MustCompile(`data-figure="old">5<.*?data-figure="new">0<`).FindAllString(dry.body, -1); len(rows) != 2 {
		t.Errorf("the dry run shows %d partitions going from 5 to 0, want 2:\n%s", len(rows), dry.body)
	}
	committedAt(t, ctx, adm, "g1", 5)
	if resp := post(t, boss, gpath+"/reset", url.Values{"to": {"earliest"}, "csrf": {csrf}, "confirm": {"1"}}); resp.code != http.StatusSeeOther {
		t.Fatalf("reset, confirmed: %d: %s", resp.code, resp.body)
	}
	committedAt(t, ctx, adm, "g1", 0)

	post(t, boss, gpath+"/delete", url.Values{"csrf": {csrf}})
	committedAt(t, ctx, adm, "g1", 0)
	if resp := post(t, boss, gpath+"/delete", url.Values{"csrf": {csrf}, "confirm": {"1"}}); resp.code != http.StatusSeeOther {
		t.Fatalf("delete the group, confirmed: %d: %s", resp.code, resp.body)
	}
	if listed, err := adm.ListGroups(ctx); err != nil || len(listed) != 0 {
		t.Errorf("groups after the delete: %v, %v; want none", listed, err)
	}

	// A group of KIP-848's consumer protocol shows its type, member and assignment.
	member := newClient(t, n.Listeners["PLAINTEXT"], kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("made"),
		kgo.ServerSideBalancer(), kgo.ClientID("client-848"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 20; {
		fs := member.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume as g848: %v", err)
		}
		got += fs.NumRecords()
	}
	if row := regexp.MustCompile(`(?s)<tr data-group="g848">.*?</tr>`).FindString(get(t, boss, base+"/groups").body); !strings.Contains(row, "<td>consumer</td>") {
		t.Errorf("the groups page's row of g848 does not say consumer: %q", row)
	}
	if body := get(t, boss, base+"/groups/g848").body; !strings.Contains(body, "client-848") || !strings.Contains(body, `[0, 1]`) {
		t.Errorf("the page of g848 lacks its member client-848 assigned partitions 0 and 1:\n%s", body)
	}

	// The one node cannot remove itself: the refusal of remove-node comes through.
	if resp := post(t, boss, fmt.Sprintf("%s/nodes/%d/remove", base, n.ID), url.Values{"csrf": {csrf}, "confirm": {"1"}}); resp.code != http.StatusConflict {
		t.Errorf("remove the node answering: %d, want 409", resp.code)
	}
}

type answer struct {
	code           int
	location, body string
}

func newBrowserlessClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) answer {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}

func post(t *testing.T, c *http.Client, u string, form url.Values) answer {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}

func read(t *testing.T, resp *http.Response) answer {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{code: resp.StatusCode, location: resp.Header.Get("Location"), body: string(body)}
}

func login(t *testing.T, base, user, password string) *http.Client {
	t.Helper()
	c := newBrowserlessClient(t)
	resp := post(t, c, base+"/login", url.Values{"user": {user}, "password": {password}, "next": {"/"}})
	if resp.code != http.StatusSeeOther {
		t.Fatalf("login as %s: %d: %s", user, resp.code, resp.body)
	}
	return c
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(get(t, c, u).body)
	if m == nil {
		t.Fatalf("no CSRF token on %s", u)
	}
	return m[1]
}

// topicExists asks a new client: kgo answers a client's metadata requests from
// its cache for a few seconds.
func topicExists(t *testing.T, ctx context.Context, addr, topic string, want bool) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has(topic) != want {
		t.Errorf("topic %s exists: %v, want %v (topics: %v)", topic, topics.Has(topic), want, topics.Names())
	}
}

func topicConfig(t *testing.T, ctx context.Context, adm *kadm.Client, topic, name string) string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	return ""
}

func committedAt(t *testing.T, ctx context.Context, adm *kadm.Client, group string, want int64) {
	t.Helper()
	got, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int32{0, 1} {
		if o, ok := got.Lookup("made", p); !ok || o.At != want {
			t.Errorf("group %s, partition %d: committed %v (%v), want %d", group, p, o.At, ok, want)
		}
	}
}

// TestConsoleHTTPToken: a page loaded with the node's HTTP bearer token (the
// admin API's credentials) starts an admin session, whose actions still need the
// CSRF token; without the token the console stays read-only.
func TestConsoleHTTPToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := testnode.Start(t, "--http-token-file", tokenFile)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := "http://" + n.HTTPAddr

	anon := newBrowserlessClient(t)
	if body := get(t, anon, base+"/topics").body; csrfField.MatchString(body) {
		t.Error("without the token the topics page offers write actions")
	}
	// A write action without the token is refused, and writes nothing.
	if got := post(t, anon, base+"/topics", url.Values{"name": {"by-anon"}, "confirm": {"1"}}); got.code != http.StatusForbidden {
		t.Errorf("create without the token: %d, want 403", got.code)
	}
	admin := newBrowserlessClient(t)
	req, err := http.NewRequest(http.MethodGet, base+"/topics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer s3cret-token")
	resp, err := admin.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page := read(t, resp)
	m := csrfField.FindStringSubmatch(page.body)
	if page.code != http.StatusOK || m == nil {
		t.Fatalf("with the token: %d, CSRF token %v; want 200 and an admin's forms", page.code, m)
	}
	if got := post(t, admin, base+"/topics", url.Values{"name": {"by-token"}, "confirm": {"1"}}); got.code != http.StatusForbidden {
		t.Errorf("the token's session without the CSRF token: %d, want 403", got.code)
	}
	if got := post(t, admin, base+"/topics", url.Values{"name": {"by-token"}, "confirm": {"1"}, "csrf": {m[1]}}); got.code != http.StatusSeeOther {
		t.Fatalf("create in the token's session: %d: %s", got.code, got.body)
	}
	topicExists(t, ctx, n.Addr, "by-token", true)
	topicExists(t, ctx, n.Addr, "by-anon", false)
}
