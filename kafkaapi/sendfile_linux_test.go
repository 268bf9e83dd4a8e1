package kafkaapi_test

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchLargeResponse fetches ~10 MB in one response through a client whose
// receive buffer is 4 KiB, so the server's sendfile meets a full socket (EAGAIN) many
// times and resumes mid-range; every byte must still arrive, in order.
func TestFetchLargeResponse(t *testing.T) {
	n := sharedNode(t)
	admin := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, admin, topic, 1, map[string]string{"segment.bytes": "4000000"})
	var want []string
	for i := range 12 {
		v := fmt.Sprintf("%02d%s", i, strings.Repeat(string(rune('a'+i)), 800_000))
		mustProduce(t, admin, topic, 0, makeBatch(noProducer, v))
		want = append(want, v)
	}

	// The buffer is set before connecting: shrinking it afterwards, below the window
	// already announced, makes loopback TCP itself crawl.
	d := net.Dialer{Timeout: ioTimeout, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err == nil {
			err = serr
		}
		return err
	}}
	nc, err := d.Dial("tcp", n.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &kconn{t: t, nc: nc}
	resp := c.do(fetchRequest(11, 0, 0, 32<<20, fetchPart{topic: topic, maxBytes: 32 << 20}))
	_, recs := decodeBatches(t, fetchedPartition(t, resp.(*kmsg.FetchResponse), topic, 0).RecordBatches)
	if !slices.Equal(values(recs), want) {
		t.Fatalf("read back %d records, want %d intact ones", len(recs), len(want))
	}
}
