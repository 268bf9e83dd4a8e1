package e2e

// Transaction version 2 (KIP-890 part 2) end to end: clusters started with
// --transaction-version 2, and a dialer that counts the requests franz-go writes,
// to prove it switched (no AddPartitionsToTxn or AddOffsetsToTxn, Produce v12,
// EndTxn v5, TxnOffsetCommit v5).

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// eosTV2Args are eosArgs on a cluster serving transaction version 2.
var eosTV2Args = append([]string{"--transaction-version", "2"}, eosArgs...)

// Request keys counted by requestCounter.
const (
	keyProduce            = 0
	keyAddPartitionsToTxn = 24
	keyAddOffsetsToTxn    = 25
	keyEndTxn             = 26
	keyTxnOffsetCommit    = 28
)

// requestCounter counts the requests its clients write, by key and version.
type requestCounter struct {
	mu   sync.Mutex
	seen map[[2]int16]int
}

// opt is the dialer option of a counted client; it dials through labDial in a
// network lab test.
func (rc *requestCounter) opt() kgo.Opt {
	return kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		dial := labDial
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		nc, err := dial(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: nc, rc: rc}, nil
	})
}

// versions returns how many requests of key were written, by version.
func (rc *requestCounter) versions(key int16) map[int16]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[int16]int{}
	for kv, n := range rc.seen {
		if kv[0] == key {
			out[kv[1]] += n
		}
	}
	return out
}

func (rc *requestCounter) String() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var parts []string
	for kv, n := range rc.seen {
		parts = append(parts, fmt.Sprintf("%d v%d: %d", kv[0], kv[1], n))
	}
	sort.Strings(parts)
	return "key vVERSION: count " + strings.Join(parts, ", ")
}

// countingConn reads the key and version of each request written through it.
type countingConn struct {
	net.Conn
	rc   *requestCounter
	head []byte // the first bytes of a request whose key and version are not read yet
	skip int    // bytes of the current request still to come
}

func (c *countingConn) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		if c.skip > 0 {
			n := min(c.skip, len(rest))
			c.skip, rest = c.skip-n, rest[n:]
			continue
		}
		n := min(8-len(c.head), len(rest))
		c.head, rest = append(c.head, rest[:n]...), rest[n:]
		if len(c.head) < 8 {
			break
		}
		kv := [2]int16{int16(binary.BigEndian.Uint16(c.head[4:])), int16(binary.BigEndian.Uint16(c.head[6:]))}
		c.skip = int(binary.BigEndian.Uint32(c.head)) - 4
		c.head = c.head[:0]
		c.rc.mu.Lock()
		if c.rc.seen == nil {
			c.rc.seen = map[[2]int16]int{}
		}
		c.rc.seen[kv]++
		c.rc.mu.Unlock()
	}
	return c.Conn.Write(p)
}

// wantTV2 fails t unless the counted transactional clients used transaction
// version 2 only: Produce v12 and EndTxn v5 sent, no AddPartitionsToTxn or
// AddOffsetsToTxn, and no Produce, EndTxn or TxnOffsetCommit below those versions.
func (rc *requestCounter) wantTV2(t *testing.T) {
	t.Helper()
	only := func(name string, key, version int16, need bool) {
		t.Helper()
		vs := rc.versions(key)
		for v, n := range vs {
			if v != version {
				t.Errorf("%s v%d sent %d times, want only v%d (%v)", name, v, n, version, rc)
			}
		}
		if need && vs[version] == 0 {
			t.Errorf("no %s v%d sent (%v)", name, version, rc)
		}
	}
	only("Produce", keyProduce, 12, true)
	only("EndTxn", keyEndTxn, 5, true)
	only("TxnOffsetCommit", keyTxnOffsetCommit, 5, false)
	for key, name := range map[int16]string{keyAddPartitionsToTxn: "AddPartitionsToTxn", keyAddOffsetsToTxn: "AddOffsetsToTxn"} {
		if n := len(rc.versions(key)); n > 0 {
			t.Errorf("%s sent under transaction version 2 (%v)", name, rc)
		}
	}
	t.Logf("requests of the transactional clients: %v", rc)
}

// countTV2 makes the pipeline's members count their requests.
func (r *eosRun) countTV2() *requestCounter {
	rc := &requestCounter{}
	r.pipe.MemberOpts = append(r.pipe.MemberOpts, rc.opt())
	return rc
}

// TestEOSPipelineTV2 is TestEOSPipeline, with half its history, on a cluster
// serving transaction version 2, whose members must use it.
func TestEOSPipelineTV2(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, eosTV2Args...)
	r := newEOSRun(t, nodes, 1500)
	rc := r.countTV2()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := r.pipe.Run(ctx); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	r.check(ctx)
	rc.wantTV2(t)
}
