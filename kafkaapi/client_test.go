package kafkaapi_test

// A raw Kafka client for the protocol tests: it frames kmsg requests itself (request
// header v1, plus an empty tag section for flexible requests), reads frames off the
// socket and parses each response at the request's version, checking that the body
// is exactly one response (re-encoding it gives the same bytes), so a field missing,
// extra or at the wrong version fails the test.

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ioTimeout bounds every read and write of the test client. It only turns a hang
// into a failure; no test relies on it for timing.
const ioTimeout = 20 * time.Second

const clientID = "kafkaapi-test"

// kconn is one raw Kafka connection.
type kconn struct {
	t    testing.TB
	nc   net.Conn
	corr int32
	id   string // client id of its requests; "": clientID
}

// dialAs dials a connection whose requests carry client id id.
func dialAs(t testing.TB, addr, id string) *kconn {
	c := dial(t, addr)
	c.id = id
	return c
}

func dial(t testing.TB, addr string) *kconn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &kconn{t: t, nc: nc, corr: 100}
}

// encodeRequest frames req: size, request header (v1, or v2 with an empty tag
// section for flexible versions), body.
func encodeRequest(req kmsg.Request, corr int32) []byte {
	return encodeRequestAs(req, corr, clientID)
}

// encodeRequestAs is encodeRequest with client id id.
func encodeRequestAs(req kmsg.Request, corr int32, id string) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// rawHeader frames a request header for key/version followed by body, for keys and
// versions kmsg cannot build.
func rawFrame(key, version int16, corr int32, body []byte) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (c *kconn) nextCorr() int32 {
	c.corr++
	return c.corr
}

// send writes req and returns its correlation id.
func (c *kconn) send(req kmsg.Request) int32 {
	c.t.Helper()
	corr := c.nextCorr()
	id := c.id
	if id == "" {
		id = clientID
	}
	c.write(encodeRequestAs(req, corr, id))
	return corr
}

func (c *kconn) write(b []byte) {
	c.t.Helper()
	if err := c.tryWrite(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *kconn) tryWrite(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	_, err := c.nc.Write(b)
	return err
}

// readFrame reads one response frame and returns it without its size prefix.
func (c *kconn) readFrame(timeout time.Duration) ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("response frame size %d", n)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(c.nc, frame); err != nil {
		return nil, fmt.Errorf("read %d-byte frame: %w", n, err)
	}
	return frame, nil
}

// recv reads the response to req sent with corr and parses it.
func (c *kconn) recv(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	frame, err := c.readFrame(ioTimeout)
	if err != nil {
		c.t.Fatalf("%s v%d: read response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	resp, err := parseResponse(req.Key(), req.GetVersion(), corr, frame)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// do sends req and returns its parsed response.
func (c *kconn) do(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	return c.recv(req, c.send(req))
}

// parseResponse checks the correlation id and parses frame as the response to key at
// version: the response header (no tag section for ApiVersions), then a body that
// must be exactly one response.
func parseResponse(key, version int16, wantCorr int32, frame []byte) (kmsg.Response, error) {
	name := fmt.Sprintf("%s v%d", kmsg.NameForKey(key), version)
	if len(frame) < 4 {
		return nil, fmt.Errorf("%s: %d-byte frame", name, len(frame))
	}
	if corr := int32(binary.BigEndian.Uint32(frame)); corr != wantCorr {
		return nil, fmt.Errorf("%s: correlation id %d, want %d", name, corr, wantCorr)
	}
	body := frame[4:]
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	if resp.IsFlexible() && key != 18 {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, fmt.Errorf("%s: response header tags: %v", name, err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s: parse %d-byte body: %v", name, len(body), err)
	}
	if re := resp.AppendTo(nil); !bytes.Equal(re, body) {
		return nil, fmt.Errorf("%s: body is not exactly one response: %d bytes, re-encoded %d bytes\nbody %x\nre   %x",
			name, len(body), len(re), body, re)
	}
	return resp, nil
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("truncated tag count")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("truncated tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, errors.New("truncated tag value")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// expectClosed asserts that the server closes the connection without answering.
func (c *kconn) expectClosed(what string) {
	c.t.Helper()
	frame, err := c.readFrame(ioTimeout)
	switch {
	case err == nil:
		c.t.Fatalf("%s: got a %d-byte response %x, want the connection closed", what, len(frame), frame[:min(len(frame), 64)])
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.t.Fatalf("%s: connection still open after %v, want it closed", what, ioTimeout)
	default:
		c.t.Fatalf("%s: read: %v, want the connection closed (EOF or reset)", what, err)
	}
}

// closedOrAnswered reads what the server does with a request it may refuse: it
// either closes the connection (nil, true) or answers (frame, false).
func (c *kconn) closedOrAnswered(what string) (frame []byte, closed bool) {
	c.t.Helper()
	frame, err := c.readFrame(ioTimeout)
	switch {
	case err == nil:
		return frame, false
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return nil, true
	default:
		c.t.Fatalf("%s: read: %v, want an answer or the connection closed", what, err)
		return nil, false
	}
}

// topicSeq makes topic names unique within the test process (-count=N reuses the
// shared node).
var topicSeq atomic.Int64

// topicName derives a valid topic name from the test name, unique on each call.
func topicName(t testing.TB, suffix string) string {
	name := t.Name()
	if suffix != "" {
		name += "-" + suffix
	}
	name += fmt.Sprintf("-%d", topicSeq.Add(1))
	var b strings.Builder
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

func errName(code int16) string {
	if code == 0 {
		return "no error (0)"
	}
	return fmt.Sprintf("%v (%d)", kerr.ErrorForCode(code), code)
}

// wantCode fails the test unless got is want.
func wantCode(t testing.TB, what string, got int16, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error %s, want %s", what, errName(got), errName(want))
	}
}

// --- record batches ---

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchOpts are the producer fields of a batch; noProducer is a plain producer.
type batchOpts struct {
	producerID int64
	epoch      int16
	seq        int32
	timestamp  int64 // first record's timestamp; 0 means now
}

var noProducer = batchOpts{producerID: -1, epoch: -1, seq: -1}

// makeBatch builds an uncompressed RecordBatch v2 holding values, one record each,
// with record i at timestamp+i.
func makeBatch(o batchOpts, values ...string) []byte { return makeBatchAttrs(o, 0, values...) }

// makeBatchAttrs builds a batch with the given attributes; codec 1 (gzip) compresses
// the records.
func makeBatchAttrs(o batchOpts, attrs int16, values ...string) []byte {
	deltas := make([]int64, len(values))
	for i := range deltas {
		deltas[i] = int64(i)
	}
	return makeBatchTimed(o, attrs, deltas, values...)
}

// makeBatchTimed is makeBatchAttrs with record i at timestamp delta deltas[i].
func makeBatchTimed(o batchOpts, attrs int16, deltas []int64, values ...string) []byte {
	ts := o.timestamp
	if ts == 0 {
		ts = time.Now().UnixMilli()
	}
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{TimestampDelta64: deltas[i], OffsetDelta: int32(i), Value: []byte(v)}
		body := r.AppendTo(nil)[1:] // Length 0 is a one-byte varint
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	if attrs&7 == 1 {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		zw.Write(recs)
		zw.Close()
		recs = zb.Bytes()
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(values) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts + slices.Max(deltas),
		ProducerID:           o.producerID,
		ProducerEpoch:        o.epoch,
		FirstSequence:        o.seq,
		NumRecords:           int32(len(values)),
		Records:              recs,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	fixCRC(b)
	return b
}

// fixCRC recomputes the CRC32C of a batch (bytes 21..end).
func fixCRC(b []byte) { binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli)) }

// fetchedRecord is one record read back, with its absolute offset.
type fetchedRecord struct {
	offset    int64
	timestamp int64
	value     string
}

// decodeBatches splits fetched record bytes into whole batches (Skiff never sends a
// partial batch), checks each batch's magic and CRC, and returns every record.
func decodeBatches(t testing.TB, b []byte) (batches []kmsg.RecordBatch, recs []fetchedRecord) {
	t.Helper()
	for len(b) > 0 {
		if len(b) < 61 {
			t.Fatalf("%d trailing bytes: a partial batch header", len(b))
		}
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:])))
		if size < 61 || size > len(b) {
			t.Fatalf("batch of %d bytes with %d left: a partial batch", size, len(b))
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			t.Fatalf("decode batch: %v", err)
		}
		if rb.Magic != 2 {
			t.Fatalf("batch magic %d", rb.Magic)
		}
		if crc := crc32.Checksum(b[21:size], castagnoli); crc != uint32(rb.CRC) {
			t.Fatalf("batch at offset %d: CRC %08x, computed %08x", rb.FirstOffset, uint32(rb.CRC), crc)
		}
		rs := rb.Records
		switch rb.Attributes & 7 {
		case 0:
		case 1:
			zr, err := gzip.NewReader(bytes.NewReader(rs))
			if err == nil {
				rs, err = io.ReadAll(zr)
			}
			if err != nil {
				t.Fatalf("batch at offset %d: gunzip: %v", rb.FirstOffset, err)
			}
		default:
			t.Fatalf("batch at offset %d: codec %d; tests produce none or gzip", rb.FirstOffset, rb.Attributes&7)
		}
		for i := int32(0); i < rb.NumRecords; i++ {
			n, k := binary.Varint(rs)
			if k <= 0 || int(n) > len(rs)-k {
				t.Fatalf("batch at offset %d: record %d truncated", rb.FirstOffset, i)
			}
			var r kmsg.Record
			if err := r.ReadFrom(rs[:k+int(n)]); err != nil {
				t.Fatalf("batch at offset %d: record %d: %v", rb.FirstOffset, i, err)
			}
			rs = rs[k+int(n):]
			recs = append(recs, fetchedRecord{
				offset:    rb.FirstOffset + int64(r.OffsetDelta),
				timestamp: rb.FirstTimestamp + r.TimestampDelta64,
				value:     string(r.Value),
			})
		}
		if len(rs) != 0 {
			t.Fatalf("batch at offset %d: %d bytes after its %d records", rb.FirstOffset, len(rs), rb.NumRecords)
		}
		batches = append(batches, rb)
		b = b[size:]
	}
	return batches, recs
}

// --- request helpers (current versions, errors checked) ---

func createTopic(t testing.TB, c *kconn, name string, partitions int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(4)
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp := c.do(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("create %s: %d topics in the answer", name, len(resp.Topics))
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		msg := ""
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg = *m
		}
		t.Fatalf("create %s: %s %s", name, errName(code), msg)
	}
}

func produceRequest(version int16, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produce sends one batch with acks=-1 at v7 and returns the partition's answer.
func produce(t testing.TB, c *kconn, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	return produceAt(t, c, 7, topic, partition, records)
}

func produceAt(t testing.TB, c *kconn, version int16, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp := c.do(produceRequest(version, -1, topic, partition, records)).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != partition {
		t.Fatalf("produce %s/%d: answer %+v names other partitions", topic, partition, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// mustProduce produces a batch and returns its base offset.
func mustProduce(t testing.TB, c *kconn, topic string, partition int32, records []byte) int64 {
	t.Helper()
	p := produce(t, c, topic, partition, records)
	wantCode(t, fmt.Sprintf("produce %s/%d", topic, partition), p.ErrorCode, 0)
	return p.BaseOffset
}

func listOffsetsRequest(version int16, topic string, partition int32, timestamp int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(version)
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func listOffsetsAt(t testing.TB, c *kconn, version int16, topic string, partition int32, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	resp := c.do(listOffsetsRequest(version, topic, partition, timestamp)).(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != partition {
		t.Fatalf("list offsets %s/%d: answer %+v names other partitions", topic, partition, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// logEnd is the partition's high watermark (ListOffsets -1), its log end on one node.
func logEnd(t testing.TB, c *kconn, topic string, partition int32) int64 {
	t.Helper()
	p := listOffsetsAt(t, c, 5, topic, partition, -1)
	wantCode(t, fmt.Sprintf("list offsets %s/%d", topic, partition), p.ErrorCode, 0)
	return p.Offset
}

// logStart is the partition's log start offset (ListOffsets -2).
func logStart(t testing.TB, c *kconn, topic string, partition int32) int64 {
	t.Helper()
	p := listOffsetsAt(t, c, 5, topic, partition, -2)
	wantCode(t, fmt.Sprintf("list offsets %s/%d", topic, partition), p.ErrorCode, 0)
	return p.Offset
}

// fetchPart is one partition to fetch.
type fetchPart struct {
	topic       string
	partition   int32
	offset      int64
	maxBytes    int32 // partition_max_bytes; 0 means 1 MiB
	leaderEpoch int32 // current_leader_epoch (v9+); 0 means -1 (no check)
}

func fetchRequest(version int16, maxWait, minBytes, maxBytes int32, parts ...fetchPart) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, maxBytes
	for _, p := range parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.topic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = p.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.partition, p.offset, p.maxBytes
		if rp.PartitionMaxBytes == 0 {
			rp.PartitionMaxBytes = 1 << 20
		}
		if p.leaderEpoch != 0 {
			rp.CurrentLeaderEpoch = p.leaderEpoch
		}
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

// fetchNow fetches without waiting (max_wait 0) at v11 and returns the answer.
func fetchNow(t testing.TB, c *kconn, maxBytes int32, parts ...fetchPart) *kmsg.FetchResponse {
	t.Helper()
	return c.do(fetchRequest(11, 0, 0, maxBytes, parts...)).(*kmsg.FetchResponse)
}

// fetchedPartition finds a partition in a fetch answer.
func fetchedPartition(t testing.TB, resp *kmsg.FetchResponse, topic string, partition int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	for _, rt := range resp.Topics {
		if rt.Topic != topic {
			continue
		}
		for _, rp := range rt.Partitions {
			if rp.Partition == partition {
				return rp
			}
		}
	}
	t.Fatalf("fetch answer has no %s/%d", topic, partition)
	return kmsg.FetchResponseTopicPartition{}
}

func values(recs []fetchedRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.value
	}
	return out
}

// metadataTopic asks Metadata v8 about one topic, without creating it.
func metadataTopic(t testing.TB, c *kconn, topic string) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(8)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := c.do(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != topic {
		t.Fatalf("metadata for %s: answer names %+v", topic, resp.Topics)
	}
	return resp.Topics[0]
}

func initProducerID(t testing.TB, c *kconn) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(1)
	resp := c.do(req).(*kmsg.InitProducerIDResponse)
	wantCode(t, "init producer id", resp.ErrorCode, 0)
	return resp.ProducerID, resp.ProducerEpoch
}

// waitFor polls cond every 10 ms until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not synchronising
	}
}

// readFull reads exactly len(b) bytes from the connection.
func (c *kconn) readFull(b []byte) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	if _, err := io.ReadFull(c.nc, b); err != nil {
		c.t.Fatalf("read %d bytes: %v", len(b), err)
	}
}

// binaryLen is the INT32 length prefix of b.
func binaryLen(b []byte) []byte { return binary.BigEndian.AppendUint32(nil, uint32(len(b))) }

// portOf is the port of HOST:PORT.
func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}
