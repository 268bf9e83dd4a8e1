package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// TestSIGTERMDrains: a fetch parked for 30 s when SIGTERM arrives is answered at once
// (not cut off), and the node exits 0 well before the fetch would have expired.
func TestSIGTERMDrains(t *testing.T) {
	n := testnode.Start(t)
	createTopic(t, n.Addr, "drain", 1)

	conn, err := net.Dial("tcp", n.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 30_000, 1, 1<<20
	req.SessionEpoch = -1
	tp := kmsg.NewFetchRequestTopicPartition()
	tp.FetchOffset, tp.PartitionMaxBytes = 0, 1<<20
	req.Topics = []kmsg.FetchRequestTopic{{Topic: "drain", Partitions: []kmsg.FetchRequestTopicPartition{tp}}}
	const corr = 77
	frame := binary.BigEndian.AppendUint16(nil, 1)     // Fetch
	frame = binary.BigEndian.AppendUint16(frame, 11)   // version
	frame = binary.BigEndian.AppendUint32(frame, corr) // correlation id
	frame = binary.BigEndian.AppendUint16(frame, 0xffff)
	frame = req.AppendTo(frame)
	if _, err := conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)); err != nil {
		t.Fatal(err)
	}
	// Once the node has taken the fetch, it parks (there is no data): stop the node
	// under it. A request still unread in its socket is not in hand: the node closes
	// that connection unanswered (a reset).
	poll(t, 15*time.Second, "the node to take the fetch", func() bool {
		return strings.Contains(scrape(t, n.HTTPAddr), `skiff_requests_total{api="Fetch"} 1`)
	})
	start := time.Now()
	if err := n.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	r := bufio.NewReader(conn)
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		t.Fatalf("parked fetch was not answered: %v", err)
	}
	if got := binary.BigEndian.Uint32(hdr[4:]); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:4])-4)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(11)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode fetch response: %v", err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch response %+v", resp.Topics)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Wait(ctx); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("stopping took %v; the parked fetch held it up", took)
	}
	if !strings.Contains(n.Logs(), `"msg":"stopped"`) {
		t.Fatalf("no clean stop in the logs:\n%s", n.Logs())
	}
}

// scrape returns the node's /metrics page ("" if it cannot be read).
func scrape(t *testing.T, httpAddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
