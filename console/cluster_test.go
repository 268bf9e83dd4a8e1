package console_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// Strings that would run if a page printed them unescaped; each alert says where.
const (
	xssKey      = `<script>alert("key")</script>`
	xssValue    = `<img src=x onerror=alert("value")>`
	xssHeader   = `<svg onload=alert("header")>`
	xssHeaderV  = `<script>alert("header value")</script>`
	xssClientID = `<script>alert("client id")</script>`
	xssGroup    = `g<img src=x onerror=alert("group")>`
)

// TestConsoleInBrowser drives a headless chromium through the console of a
// three-node cluster with topics, a group and traffic: every page loads without
// console errors; the figures equal kadm's; keys, values, headers, a group name and
// a client id holding HTML are shown as text; the live chart updates; a killed
// node shows down within its session timeout and up after its restart.
func TestConsoleInBrowser(t *testing.T) {
	nodes := testnode.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := newClient(t, nodes[0].Addr)
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"orders", "xss"} {
		res, err := adm.CreateTopic(ctx, 3, 3, nil, topic)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	produce(t, ctx, cl, "orders", 300)
	xss := &kgo.Record{Topic: "xss", Key: []byte(xssKey), Value: []byte(xssValue),
		Headers: []kgo.RecordHeader{{Key: xssHeader, Value: []byte(xssHeaderV)}}}
	if err := cl.ProduceSync(ctx, xss).FirstErr(); err != nil {
		t.Fatal(err)
	}
	xssMessages := fmt.Sprintf("/topics/xss/messages?partition=%d&offset=0", xss.Partition) // ProduceSync set it
	// A member of xssGroup (client id xssClientID) consumes orders and commits; then
	// 40 more records give it a lag while it stays a member.
	member := newClient(t, nodes[1].Addr, kgo.ConsumerGroup(xssGroup), kgo.ConsumeTopics("orders"),
		kgo.ClientID(xssClientID), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 300; {
		fs := member.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		got += fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	produce(t, ctx, cl, "orders", 40)
	// A well-named group for the screenshots, its member still in it.
	billing := newClient(t, nodes[2].Addr, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ClientID("billing-service"), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 250; {
		fs := billing.PollRecords(ctx, 250-got)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		got += fs.NumRecords()
	}
	if err := billing.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	b := startBrowser(t)
	base := "http://" + nodes[0].HTTPAddr
	for _, path := range []string{"/", "/topics", "/topics?internal=1", "/topics/orders", "/topics/orders/messages?partition=1&last=20",
		"/topics/orders/messages?partition=0&offset=0&format=hex", "/topics/orders/messages?partition=2&timestamp=0",
		"/groups", "/groups/" + url.PathEscape(xssGroup), fmt.Sprintf("/nodes/%d", nodes[2].ID)} {
		b.open(base + path)
		if h1 := eval[string](b, `document.querySelector("h1").textContent`); strings.Contains(h1, "Not Found") || strings.Contains(h1, "Error") {
			t.Errorf("%s: heading %q", path, h1)
		}
		b.checkClean(path)
	}

	t.Run("figures", func(t *testing.T) { checkFigures(t, ctx, b, base, adm) })
	t.Run("escaped", func(t *testing.T) { checkEscaped(t, b, base, xssMessages) })
	t.Run("live", func(t *testing.T) { checkLive(t, ctx, b, base, cl) })
	t.Run("screenshots", func(t *testing.T) { screenshots(t, b, base) })
	t.Run("down and up", func(t *testing.T) { checkDownUp(t, b, base, nodes[2]) })
	b.checkClean("the end")
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n int) {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"order":%d}`, i)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// pagePartition is one row of a topic page's partitions table.
type pagePartition struct {
	Partition int32  `json:"partition"`
	Leader    string `json:"leader"`
	ISR       string `json:"isr"`
	HWM       string `json:"hwm"`
}

// checkFigures compares the topic and group pages with kadm's answers, with no
// traffic meanwhile.
func checkFigures(t *testing.T, ctx context.Context, b *browser, base string, adm *kadm.Client) {
	md, err := adm.Metadata(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	b.open(base + "/topics/orders")
	rows := eval[[]pagePartition](b, `[...document.querySelectorAll("#partitions tbody tr")].map(tr => ({
		partition: +tr.dataset.partition,
		leader: tr.querySelector("[data-figure=leader]").textContent.trim(),
		isr: tr.querySelector("[data-figure=isr]").textContent.trim(),
		hwm: (tr.querySelector("[data-figure=hwm]") || {textContent: "?"}).textContent.trim()}))`)
	parts := md.Topics["orders"].Partitions
	if len(rows) != len(parts) {
		t.Fatalf("the page shows %d partitions, kadm %d", len(rows), len(parts))
	}
	for _, r := range rows {
		p := parts[r.Partition]
		end, _ := ends.Lookup("orders", r.Partition)
		want := pagePartition{Partition: r.Partition, Leader: fmt.Sprint(p.Leader), ISR: joinSorted(p.ISR), HWM: fmt.Sprint(end.Offset)}
		got := r
		got.ISR = joinSorted(parseInts(r.ISR))
		if got != want {
			t.Errorf("partition %d: page %+v, kadm %+v", r.Partition, got, want)
		}
	}

	lags, err := adm.Lag(ctx, xssGroup)
	if err != nil {
		t.Fatal(err)
	}
	lag := lags[xssGroup]
	if lag.Error() != nil {
		t.Fatal(lag.Error())
	}
	b.open(base + "/groups/" + url.PathEscape(xssGroup))
	type row struct {
		TP        string `json:"tp"`
		Committed string `json:"committed"`
		End       string `json:"end"`
		Lag       string `json:"lag"`
	}
	got := eval[[]row](b, `[...document.querySelectorAll("#group-offsets tbody tr[data-tp]")].map(tr => ({
		tp: tr.dataset.tp,
		committed: tr.querySelector("[data-figure=committed]").textContent.trim(),
		end: tr.querySelector("[data-figure=end]").textContent.trim(),
		lag: tr.querySelector("[data-figure=lag]").textContent.trim()}))`)
	var want []row
	for _, l := range lag.Lag.Sorted() {
		want = append(want, row{TP: fmt.Sprintf("%s/%d", l.Topic, l.Partition), Committed: fmt.Sprint(l.Commit.At), End: fmt.Sprint(l.End.Offset), Lag: fmt.Sprint(l.Lag)})
	}
	if !slices.Equal(got, want) {
		t.Errorf("group offsets: page %+v, kadm %+v", got, want)
	}
	total := eval[string](b, `document.querySelector("[data-figure=total-lag]").textContent.trim()`)
	if want := fmt.Sprint(lag.Lag.Total()); total != want || want != "40" {
		t.Errorf("total lag: page %s, kadm %s (want 40)", total, want)
	}
	b.checkClean("figures")
}

// checkEscaped looks for the strings holding HTML as text, and for any element
// they could have injected.
func checkEscaped(t *testing.T, b *browser, base, messages string) {
	b.open(base + messages)
	text := eval[string](b, `document.querySelector("#records").textContent`)
	for _, s := range []string{xssKey, xssValue, xssHeader, xssHeaderV} {
		if !strings.Contains(text, s) {
			t.Errorf("the messages page does not show %q as text; it shows:\n%s", s, eval[string](b, `document.querySelector("main").innerText`))
		}
	}
	b.open(base + "/groups/" + url.PathEscape(xssGroup))
	text = eval[string](b, `document.querySelector("main").textContent`)
	for _, s := range []string{xssGroup, xssClientID} {
		if !strings.Contains(text, s) {
			t.Errorf("the group page does not show %q as text", s)
		}
	}
	for _, path := range []string{messages, messages + "&format=hex", messages + "&format=text", messages + "&format=json", "/groups/" + url.PathEscape(xssGroup), "/groups"} {
		b.open(base + path)
		injected := eval[int](b, `document.querySelectorAll("main script, main img, main svg:not(.chart):not(.spark), [onerror], [onload]").length`)
		scripts := eval[[]string](b, `[...document.scripts].map(s => s.src)`)
		if injected != 0 {
			t.Errorf("%s: %d injected elements", path, injected)
		}
		for _, src := range scripts {
			if !strings.HasSuffix(src, "/static/live.js") {
				t.Errorf("%s: a script that is not the console's: %q", path, src)
			}
		}
		b.checkClean(path) // an alert would be reported as a dialog
	}
}

// checkLive keeps traffic going on orders and waits for the topic page's script
// to replace its chart with one showing it (the page is not reloaded).
func checkLive(t *testing.T, ctx context.Context, b *browser, base string, cl *kgo.Client) {
	b.open(base + "/topics/orders")
	eval[bool](b, `window.notReloaded = true`)
	before := eval[string](b, `document.getElementById("topic-chart").innerHTML`)
	deadline := time.Now().Add(45 * time.Second)
	for {
		produce(t, ctx, cl, "orders", 50)
		now := eval[string](b, `document.getElementById("topic-chart").innerHTML`)
		if now != before && strings.Contains(now, "<polyline") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chart did not change in 45 s:\n%s", now)
		}
		time.Sleep(500 * time.Millisecond) // traffic for the chart, while polling for the change
	}
	if !eval[bool](b, `window.notReloaded === true && document.body.dataset.updated !== undefined`) {
		t.Error("the chart changed by a reload, not by the live script")
	}
	b.checkClean("live")
}

// screenshots saves PNGs of the overview, a topic, a group and the message
// browser into $SKIFF_CONSOLE_SHOTS (make screenshots: docs/console/), or a
// temporary directory, and checks each is a PNG.
func screenshots(t *testing.T, b *browser, base string) {
	dir := os.Getenv("SKIFF_CONSOLE_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	for name, path := range map[string]string{
		"overview": "/", "topic": "/topics/orders", "group": "/groups/billing",
		"messages": "/topics/orders/messages?partition=0&last=12",
	} {
		b.open(base + path)
		png := b.screenshot()
		if !bytes.HasPrefix(png, []byte("\x89PNG\r\n")) {
			t.Fatalf("the screenshot of %s is not a PNG", path)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.checkClean("screenshots")
}

// checkDownUp kills a node and watches the overview: down within the session
// timeout (6 s, plus the time the page takes), up again after its restart.
func checkDownUp(t *testing.T, b *browser, base string, n *testnode.Node) {
	state := func() string {
		b.open(base + "/")
		return eval[string](b, fmt.Sprintf(`(document.querySelector('tr[data-node="%d"] [data-state]') || {dataset: {state: "missing"}}).dataset.state`, n.ID))
	}
	if s := state(); s != "up" {
		t.Fatalf("node %d shows %s before it is killed", n.ID, s)
	}
	n.Kill()
	killed := time.Now()
	waitState(t, state, "down", 20*time.Second)
	t.Logf("node %d shown down %v after it was killed", n.ID, time.Since(killed).Round(100*time.Millisecond))
	n.Restart()
	waitState(t, state, "up", 30*time.Second)
	b.checkClean("down and up")
}

func waitState(t *testing.T, state func() string, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := state()
		if s == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node shows %s, not %s, after %v", s, want, within)
		}
		time.Sleep(200 * time.Millisecond) // polling the page with a deadline
	}
}

func joinSorted(s []int32) string {
	s = slices.Clone(s)
	slices.Sort(s)
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}

func parseInts(s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		var v int32
		if _, err := fmt.Sscan(strings.TrimSpace(f), &v); err == nil {
			out = append(out, v)
		}
	}
	return out
}
