package kafkaapi_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
)

// openSegmentFiles counts this process's descriptors (/proc/self/fd) of
// segment files under dir.
func openSegmentFiles(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) && strings.HasSuffix(target, ".log") {
			n++
		}
	}
	return n
}

// TestFetchSealedFilesBounded: one Fetch of 40 partitions, each read from a
// sealed segment, on a node whose segment file cache holds 8 idle files. The
// answer holds its files until it is written, so the client reads only the
// answer's size and then counts the node's segment descriptors while the rest
// waits: the 40 active segments, the cache's 8 and the fetch's share (a
// quarter of the cache), not one more per partition read. The partitions left
// out answer no records, and fetching again from where each stopped reads
// every record once.
func TestFetchSealedFilesBounded(t *testing.T) {
	const (
		partitions = 40
		cacheSize  = 8
		share      = cacheSize / 4
		big        = 512 << 10 // 40 of them are more than the sockets' buffers
	)
	dir := t.TempDir()
	n := startCachedNode(t, dir, cacheSize)
	topics := filepath.Join(dir, "topics")
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	want := sealedPartitions(t, c, topic, partitions, big)

	// The whole answer would be about 20 MiB: with a small receive buffer the
	// node's write waits for this reader, holding the answer's files.
	fc := dial(t, n.KafkaAddr())
	if err := fc.nc.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	parts := make([]fetchPart, partitions)
	for p := range parts {
		parts[p] = fetchPart{topic: topic, partition: int32(p)}
	}
	req := fetchRequest(11, 0, 0, 64<<20, parts...)
	corr := fc.send(req)
	fc.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	var size [4]byte
	if _, err := io.ReadFull(fc.nc, size[:]); err != nil {
		t.Fatal(err)
	}
	// The node is writing the answer now: its files are held until it is done.
	held := openSegmentFiles(t, topics)
	bound := partitions + cacheSize + share
	t.Logf("answer of %d bytes; %d segment files open while it is written (at most %d)", binary.BigEndian.Uint32(size[:]), held, bound)
	if held > bound {
		t.Errorf("%d segment files open while a fetch answer is written, want at most %d (active segments, cache, the fetch's share)", held, bound)
	}
	if err := fc.nc.(*net.TCPConn).SetReadBuffer(8 << 20); err != nil {
		t.Fatal(err)
	}
	fc.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(fc.nc, frame); err != nil {
		t.Fatal(err)
	}
	r, err := parseResponse(req.Key(), req.GetVersion(), corr, frame)
	if err != nil {
		t.Fatal(err)
	}
	resp := r.(*kmsg.FetchResponse)
	withData := 0
	for p := range int32(partitions) {
		fp := fetchedPartition(t, resp, topic, p)
		wantCode(t, fmt.Sprintf("partition %d", p), fp.ErrorCode, 0)
		if len(fp.RecordBatches) > 0 {
			withData++
		}
	}
	if withData < 1 || withData > share {
		t.Errorf("%d partitions answered records, want 1 to %d (the fetch's share of sealed files)", withData, share)
	}

	// The rest come in the next fetches.
	readAll(t, c, topic, partitions, want)
}

// sealedPartitions creates topic with partitions partitions and gives each a
// first segment holding one batch of a record of size bytes, sealed by a second
// segment holding a small batch. It returns the values by partition.
func sealedPartitions(t *testing.T, c *kconn, topic string, partitions int32, size int) map[int32][]string {
	t.Helper()
	createTopic(t, c, topic, partitions, map[string]string{"internal.segment.bytes": "1"})
	want := make(map[int32][]string)
	for p := range partitions {
		// The big batch fills the first segment, the small one rolls a second:
		// the first is sealed.
		for _, v := range []string{fmt.Sprintf("%d-big-%s", p, strings.Repeat("b", size)), fmt.Sprintf("%d-small", p)} {
			mustProduce(t, c, topic, p, makeBatch(noProducer, v))
			want[p] = append(want[p], v)
		}
	}
	return want
}

// startCachedNode starts a node in dir whose segment file cache holds size
// files, closed when the test ends.
func startCachedNode(t *testing.T, dir string, size int) *appliance.Node {
	t.Helper()
	n, err := startNode(dir, func(c *appliance.Config) { c.SegmentFileCache = size })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// readAll fetches every partition of topic from its start, again from where
// each stopped, until all of want was read, and checks it came once, in order.
func readAll(t *testing.T, c *kconn, topic string, partitions int32, want map[int32][]string) {
	t.Helper()
	next := make([]int64, partitions)
	got := make(map[int32][]string)
	for fetches := 0; ; fetches++ {
		if fetches > int(partitions) {
			t.Fatalf("after %d fetches: %d of %d partitions read whole", fetches, len(got), partitions)
		}
		var ask []fetchPart
		for p := range partitions {
			if next[p] < int64(len(want[p])) {
				ask = append(ask, fetchPart{topic: topic, partition: p, offset: next[p]})
			}
		}
		if len(ask) == 0 {
			break
		}
		resp := fetchNow(t, c, 64<<20, ask...)
		for _, fp := range ask {
			got1 := fetchedPartition(t, resp, topic, fp.partition)
			wantCode(t, fmt.Sprintf("partition %d", fp.partition), got1.ErrorCode, 0)
			_, recs := decodeBatches(t, got1.RecordBatches)
			for _, rec := range recs {
				if rec.offset != next[fp.partition] {
					t.Fatalf("partition %d: offset %d, want %d", fp.partition, rec.offset, next[fp.partition])
				}
				got[fp.partition] = append(got[fp.partition], rec.value)
				next[fp.partition]++
			}
		}
	}
	for p := range partitions {
		if fmt.Sprint(got[p]) != fmt.Sprint(want[p]) {
			t.Fatalf("partition %d: read %d records that differ from the %d produced", p, len(got[p]), len(want[p]))
		}
	}
}

// TestFetchSealedFilesBoundedAcrossConnections: four connections each send a
// Fetch of 12 partitions read from sealed segments (of 512 KiB batches) and
// read only the answer's size, so the answers too big for the sockets' buffers
// wait, holding their files. With a cache of 40 a fetch may hold 10 sealed
// files and all answers together 20, each answer's first partition aside: at
// most 24 of the 48 partitions answer records (without the node-wide share, 40
// would). Fetching again reads every record once, and once all answers are
// written a fetch gets its whole share again.
func TestFetchSealedFilesBoundedAcrossConnections(t *testing.T) {
	const (
		conns, perConn = 4, 12
		partitions     = conns * perConn
		cacheSize      = 40
		nodeShare      = cacheSize / 2
		big            = 512 << 10 // 10 of them are more than the sockets' buffers
	)
	dir := t.TempDir()
	n := startCachedNode(t, dir, cacheSize)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	want := sealedPartitions(t, c, topic, partitions, big)

	type pending struct {
		fc   *kconn
		req  *kmsg.FetchRequest
		corr int32
		size uint32
	}
	var ps []pending
	for i := range conns {
		fc := dial(t, n.KafkaAddr())
		if err := fc.nc.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
			t.Fatal(err)
		}
		var parts []fetchPart
		for p := i * perConn; p < (i+1)*perConn; p++ {
			parts = append(parts, fetchPart{topic: topic, partition: int32(p)})
		}
		req := fetchRequest(11, 0, 0, 64<<20, parts...)
		corr := fc.send(req)
		fc.nc.SetReadDeadline(time.Now().Add(ioTimeout))
		var size [4]byte
		if _, err := io.ReadFull(fc.nc, size[:]); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, pending{fc, req, corr, binary.BigEndian.Uint32(size[:])})
	}
	t.Logf("%d segment files open while the answers are written", openSegmentFiles(t, filepath.Join(dir, "topics")))
	withData := 0
	for i, p := range ps {
		if err := p.fc.nc.(*net.TCPConn).SetReadBuffer(8 << 20); err != nil {
			t.Fatal(err)
		}
		p.fc.nc.SetReadDeadline(time.Now().Add(ioTimeout))
		frame := make([]byte, p.size)
		if _, err := io.ReadFull(p.fc.nc, frame); err != nil {
			t.Fatal(err)
		}
		r, err := parseResponse(p.req.Key(), p.req.GetVersion(), p.corr, frame)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rt := range r.(*kmsg.FetchResponse).Topics {
			for _, rp := range rt.Partitions {
				wantCode(t, fmt.Sprintf("partition %d", rp.Partition), rp.ErrorCode, 0)
				if len(rp.RecordBatches) > 0 {
					n++
				}
			}
		}
		t.Logf("connection %d: %d bytes, %d partitions with records", i, p.size, n)
		withData += n
	}
	if withData > nodeShare+conns {
		t.Errorf("%d partitions answered records while the answers waited, want at most %d (the node's share and each answer's first)", withData, nodeShare+conns)
	}
	readAll(t, c, topic, partitions, want)

	// Every answer let go of its files, and of its count: one fetch gets its
	// whole share again.
	var parts []fetchPart
	for p := range int32(perConn) {
		parts = append(parts, fetchPart{topic: topic, partition: p})
	}
	resp := fetchNow(t, c, 64<<20, parts...)
	got := 0
	for p := range int32(perConn) {
		if len(fetchedPartition(t, resp, topic, p).RecordBatches) > 0 {
			got++
		}
	}
	if got != cacheSize/4 {
		t.Errorf("a fetch after the others were answered: %d partitions with records, want the fetch's share, %d", got, cacheSize/4)
	}
}
