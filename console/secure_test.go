package console_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"skiff/internal/testnode"
)

// TestConsoleSecureCluster: on a cluster formed with --secure, every node's
// console is served over HTTPS only, needs a login, and shows what the other
// nodes hold: the figures of every node and of partitions led elsewhere, and
// their records, come console-to-console over HTTPS with the cluster's
// certificates. A node whose peers did not answer would show "not answering".
func TestConsoleSecureCluster(t *testing.T) {
	nodes := testnode.StartSecureCluster(t, 3)
	first := nodes[0]
	pw, err := os.ReadFile(filepath.Join(first.DataDir, "initial-admin-password"))
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(pw))
	caPEM, err := os.ReadFile(filepath.Join(first.DataDir, "secure", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := newClient(t, first.Addr, kgo.DialTLSConfig(&tls.Config{RootCAs: roots}),
		kgo.SASL(scram.Auth{User: "admin", Pass: password}.AsSha512Mechanism()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	// One partition per node (RF 1): a node's pages can show the other two only
	// by asking their consoles.
	const topic = "tls-pages"
	if res, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil || res.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, res.Err)
	}
	leaders := map[int32]int32{}
	for p := range int32(3) {
		r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "secret-%d", p)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range td[topic].Partitions {
		leaders[p.Partition] = p.Leader
	}

	for _, n := range nodes {
		plain := fmt.Sprintf("http://%s/", n.HTTPAddr)
		if resp, err := http.Get(plain); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("node %d serves its console over plain HTTP", n.ID)
			}
		}
		base := "https://" + n.HTTPAddr
		anonymous := httpsClient(t, roots)
		if a := get(t, anonymous, base+"/topics"); a.code != http.StatusSeeOther || !strings.HasPrefix(a.location, "/login") {
			t.Errorf("node %d /topics without a login: %d %q, want a redirect to /login", n.ID, a.code, a.location)
		}
		admin := httpsClient(t, roots)
		if a := post(t, admin, base+"/login", url.Values{"user": {"admin"}, "password": {password}, "next": {"/"}}); a.code != http.StatusSeeOther {
			t.Fatalf("node %d login: %d: %s", n.ID, a.code, a.body)
		}
		// Other nodes' figures arrive after their first answer: poll.
		var overview, topicPage string
		deadline := time.Now().Add(30 * time.Second)
		for {
			overview, topicPage = get(t, admin, base+"/").body, get(t, admin, base+"/topics/"+topic).body
			if !strings.Contains(overview, "not answering") && !strings.Contains(topicPage, "leader not answering") &&
				strings.Count(overview, `data-state="up"`) == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: its console does not show the other nodes over HTTPS:\n%s\n%s", n.ID, overview, topicPage)
			}
			time.Sleep(200 * time.Millisecond) // polling a condition with a deadline
		}
		for p := range int32(3) {
			if got := partitionRow(topicPage, p); !strings.Contains(got, `data-figure="hwm">1<`) {
				t.Errorf("node %d: partition %d (leader %d) row %q, want high watermark 1", n.ID, p, leaders[p], got)
			}
			msgs := get(t, admin, fmt.Sprintf("%s/topics/%s/messages?partition=%d&offset=0", base, topic, p))
			if msgs.code != http.StatusOK || !strings.Contains(msgs.body, fmt.Sprintf("secret-%d", p)) {
				t.Errorf("node %d: records of partition %d (leader %d): %d, value missing:\n%s", n.ID, p, leaders[p], msgs.code, msgs.body)
			}
		}
	}
}

// partitionRow is the <tr> of partition p on a topic page.
func partitionRow(page string, p int32) string {
	_, row, ok := strings.Cut(page, fmt.Sprintf(`<tr data-partition="%d">`, p))
	if !ok {
		return ""
	}
	row, _, _ = strings.Cut(row, "</tr>")
	return row
}

// httpsClient trusts roots, keeps cookies and does not follow redirects.
func httpsClient(t *testing.T, roots *x509.CertPool) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
