package kafkaapi_test

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// httpGet fetches http://<addr><path> without keep-alives (no idle connection
// goroutines outlive the test).
func httpGet(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	cl := &http.Client{Timeout: ioTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(body)
}

// metric reads one unlabelled sample from /metrics.
func metric(t *testing.T, addr, name string) float64 {
	t.Helper()
	code, body := httpGet(t, addr, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d", code)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("/metrics: %q: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("/metrics has no sample %s", name)
	return 0
}

// TestMetricsAndHealth checks that acks=all produce requests are counted in
// skiff_produce_ack_wait_seconds, that a Fetch that returns records sends them with
// sendfile (counted in skiff_fetch_bytes_sendfile_total, none copied through user
// space) once the frame is larger than smallFrame, and that /healthz and /readyz
// answer 200 on a serving node.
func TestMetricsAndHealth(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	waitsBefore := metric(t, n.HTTPAddr(), "skiff_produce_ack_wait_seconds_count")
	mustProduce(t, c, topic, 0, makeBatch(noProducer, "zero", "copy"))
	mustProduce(t, c, topic, 0, makeBatch(noProducer, strings.Repeat("s", 40<<10))) // over smallFrame (32 KiB): sendfile
	// Both are acks=all: each wait is observed before its answer is written.
	if waits := metric(t, n.HTTPAddr(), "skiff_produce_ack_wait_seconds_count"); waits < waitsBefore+2 {
		t.Errorf("skiff_produce_ack_wait_seconds_count went from %v to %v over two acks=all produce requests", waitsBefore, waits)
	}

	sentBefore := metric(t, n.HTTPAddr(), "skiff_fetch_bytes_sendfile_total")
	copiedBefore := metric(t, n.HTTPAddr(), "skiff_fetch_bytes_copied_total")
	p := fetchedPartition(t, fetchNow(t, c, 1<<20, fetchPart{topic: topic}), topic, 0)
	wantCode(t, "fetch", p.ErrorCode, 0)
	if _, recs := decodeBatches(t, p.RecordBatches); len(recs) != 3 {
		t.Fatalf("fetched %d records, want 3", len(recs))
	}
	// The counter is added once sendfile returns, which can be after the client
	// has read the answer: wait for it.
	var sent float64
	waitFor(t, 10*time.Second, "skiff_fetch_bytes_sendfile_total to count the fetch", func() bool {
		sent = metric(t, n.HTTPAddr(), "skiff_fetch_bytes_sendfile_total")
		return sent > 0 && sent-sentBefore >= float64(len(p.RecordBatches))
	})
	if copied := metric(t, n.HTTPAddr(), "skiff_fetch_bytes_copied_total"); copied != copiedBefore {
		t.Errorf("skiff_fetch_bytes_copied_total went from %v to %v: record bytes were copied through user space", copiedBefore, copied)
	}
	if got := metric(t, n.HTTPAddr(), "skiff_connections"); got < 1 {
		t.Errorf("skiff_connections = %v with a client connected", got)
	}

	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := httpGet(t, n.HTTPAddr(), path)
		if code != http.StatusOK {
			t.Errorf("%s: status %d (%q), want 200", path, code, body)
		}
	}
}
