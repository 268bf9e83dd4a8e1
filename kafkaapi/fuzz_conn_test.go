package kafkaapi_test

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
	"skiff/kafkaapi"
)

// fuzzNode is the node FuzzConn talks to, one per test process: max.partitions.per.request
// is small so that fuzzed CreateTopics and Metadata requests stay cheap; it serves
// transaction version 2, whose versions are a superset of version 1's.
var fuzzNode struct {
	once sync.Once
	node *appliance.Node
	err  error
}

// fuzzConnWait is how long FuzzConn waits for answers: requests that park (Fetch,
// JoinGroup, Produce with acks=all) are left waiting, and the connection closed.
const fuzzConnWait = 300 * time.Millisecond

// fuzzServeWait is how soon a new connection must be served after any input.
const fuzzServeWait = 5 * time.Second

// FuzzConn sends one arbitrary request frame (the fuzzed bytes behind a correct size
// prefix, or with raw=true the bytes as they are) followed by an ApiVersions request
// over a real connection of an in-process node, and reads what comes back.
// Invariants:
//   - the node never panics (a panic in a connection ends the fuzzing process);
//   - the answers carry the correlation ids of the requests sent, in order, each
//     at most once, and parse as ApiVersions where they answer it; anything else
//     is a closed connection;
//   - afterwards a new connection is served (ApiVersions round trip).
func FuzzConn(f *testing.F) {
	fuzzNode.once.Do(func() {
		dir, err := os.MkdirTemp("", "kafkaapi-fuzz-")
		if err != nil {
			fuzzNode.err = err
			return
		}
		fuzzNode.node, fuzzNode.err = startNode(dir, func(c *appliance.Config) {
			c.MaxRequestBytes = 1 << 20
			c.MaxPartitionsPerRequest = 64
			c.ReadTimeout = time.Second
			c.Txn.Version = 2
		})
		fuzzCleanup = func() error {
			defer os.RemoveAll(dir)
			if fuzzNode.node != nil {
				return fuzzNode.node.Close()
			}
			return nil
		}
	})
	if fuzzNode.err != nil {
		f.Fatalf("start node: %v", fuzzNode.err)
	}
	addr := fuzzNode.node.KafkaAddr()
	for i, req := range kafkaapi.ServedRequestsTxnV2() {
		f.Add(kafkaapi.EncodeFrame(req, int32(i)), false)
	}
	f.Add([]byte{0, 0, 0, 0}, true)
	f.Add([]byte{0x80, 0, 0, 0}, true)
	f.Add([]byte{0, 0, 0, 12, 0, 18, 0, 3, 0, 0, 0, 1, 0, 0, 0}, true)
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		const apiVersionsCorr = -7
		stream := data
		if !raw {
			stream = binary.BigEndian.AppendUint32(nil, uint32(len(data)))
			stream = append(stream, data...)
			av := kmsg.NewPtrApiVersionsRequest()
			av.SetVersion(0)
			stream = append(stream, encodeRequest(av, apiVersionsCorr)...)
		}
		corrs := streamCorrelations(stream, 1<<20)
		nc, err := net.DialTimeout("tcp", addr, ioTimeout)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetWriteDeadline(time.Now().Add(fuzzConnWait))
		if _, err := nc.Write(stream); err == nil {
			nc.(*net.TCPConn).CloseWrite()
		}
		c := &kconn{t: t, nc: nc}
		for {
			frame, err := c.readFrame(fuzzConnWait)
			if err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					break // closed
				}
				break // parked: the request waits for data, members or replicas
			}
			corr := int32(binary.BigEndian.Uint32(frame))
			for len(corrs) > 0 && corrs[0] != corr {
				corrs = corrs[1:] // requests without an answer (acks=0 produce)
			}
			if len(corrs) == 0 {
				t.Fatalf("answer with correlation id %d: not one of the requests sent, or out of order", corr)
			}
			corrs = corrs[1:]
			if corr == apiVersionsCorr {
				if _, err := parseResponse(18, 0, corr, frame); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The node still serves a new connection, promptly.
		check := dial(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(0)
		corr := check.send(req)
		frame, err := check.readFrame(fuzzServeWait)
		if err != nil {
			t.Fatalf("a new connection is not served after this input: %v", err)
		}
		if _, err := parseResponse(18, 0, corr, frame); err != nil {
			t.Fatal(err)
		}
	})
}

// streamCorrelations returns the correlation ids of the whole request frames at the
// start of stream, up to the first the server must refuse (a size below 10 or above
// maxSize): the requests that may be answered, in order.
func streamCorrelations(stream []byte, maxSize int) []int32 {
	var corrs []int32
	for len(stream) >= 4 {
		size := int(int32(binary.BigEndian.Uint32(stream)))
		if size < 10 || size > maxSize || size > len(stream)-4 {
			break
		}
		corrs = append(corrs, int32(binary.BigEndian.Uint32(stream[8:])))
		stream = stream[4+size:]
	}
	return corrs
}
