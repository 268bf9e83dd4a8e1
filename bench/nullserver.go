package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/kafkaapi"
)

// NullServer is the least a Kafka server can do for a producer and a consumer:
// it answers ApiVersions, Metadata (itself, the leader of every partition),
// CreateTopics, InitProducerId and Produce, and appends each produced partition's
// batches to a file of that partition with their base offsets set, without
// checking their CRCs, indexing more than their positions in memory, or syncing
// them, and with no replication, sessions or metadata store. It answers
// ListOffsets and Fetch from those files (nullserver_fetch.go), with the broker's
// frame decoder and response writers (package kafkaapi). skiff bench
// produce|consume --baseline runs its own load against one, so that a broker's
// throughput can be read as a ratio of what the same client reaches against a
// server that does no broker work.
type NullServer struct {
	ln  net.Listener
	dir string       // holds the partitions' files, removed by Close
	pid atomic.Int64 // the last producer id handed out
	// metrics count the fetched bytes sent with sendfile and copied; nobody reads them.
	metrics *kafkaapi.Metrics

	mu     sync.Mutex
	topics map[string][]*nullPartition
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

type nullPartition struct {
	file    *os.File
	mu      sync.Mutex
	next    int64       // offset of the next record
	end     int64       // bytes in file
	batches []nullBatch // every batch in the file, in offset order
}

// nullBatch is where a batch starts in its partition's file.
type nullBatch struct{ base, pos int64 }

// nullServerMaxRequest is the largest request frame a NullServer reads: as much as
// a broker reads by default.
const nullServerMaxRequest = kafkaapi.DefaultMaxRequestBytes

// nullServerWriteTimeout bounds the writing of one fetch answer.
const nullServerWriteTimeout = time.Minute

// nullServerKeys are the APIs a NullServer answers, at the versions a broker serves
// (kafkaapi.APIVersions).
var nullServerKeys = []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata,
	kmsg.ApiVersions, kmsg.CreateTopics, kmsg.InitProducerID}

// StartNullServer listens on 127.0.0.1 (a port the kernel chooses) and appends to
// files in a new directory in dir, removed by Close.
func StartNullServer(dir string) (*NullServer, error) {
	d, err := os.MkdirTemp(dir, ".skiff-null-server-*")
	if err != nil {
		return nil, fmt.Errorf("null server: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(d)
		return nil, fmt.Errorf("null server: %w", err)
	}
	s := &NullServer{ln: ln, dir: d, topics: map[string][]*nullPartition{}, conns: map[net.Conn]struct{}{},
		metrics: kafkaapi.NewMetrics(nil)}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the server's HOST:PORT.
func (s *NullServer) Addr() string { return s.ln.Addr().String() }

// Close stops the server, closes its connections and removes its files.
func (s *NullServer) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	errs := []error{s.ln.Close()}
	s.wg.Wait()
	for _, parts := range s.topics {
		for _, p := range parts {
			errs = append(errs, p.file.Close())
		}
	}
	return errors.Join(append(errs, os.RemoveAll(s.dir))...)
}

func (s *NullServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// serve answers one connection's requests in order until it closes or sends
// something a NullServer does not answer.
func (s *NullServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	var size [4]byte
	var fw kafkaapi.FrameWriter
	var frame, out []byte // reused: the requests of a connection come one at a time
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 0 || n > nullServerMaxRequest {
			return
		}
		frame = slices.Grow(frame[:0], int(n))[:n]
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		hdr, req, err := kafkaapi.DecodeRequest(frame)
		if err != nil {
			return
		}
		var resp kmsg.Response
		switch req := req.(type) {
		case *kmsg.FetchRequest: // written straight to c, with sendfile
			if err := s.fetch(c, &fw, &hdr, req); err != nil {
				return
			}
			continue
		case nil:
			if hdr.Key == kmsg.ApiVersions.Int16() { // a newer ApiVersions: say which versions to use
				resp = nullApiVersions(0, kerr.UnsupportedVersion.Code)
			}
		default:
			resp = s.handle(req) // produced records alias frame
		}
		if resp == nil {
			return
		}
		out = kafkaapi.AppendResponse(out[:0], &hdr, resp)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// handle answers req, or returns nil for an API a NullServer does not serve.
func (s *NullServer) handle(req kmsg.Request) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		return nullApiVersions(req.Version, 0)
	case *kmsg.MetadataRequest:
		return s.metadata(req)
	case *kmsg.CreateTopicsRequest:
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, max(t.NumPartitions, 1), 1
			if _, ok := s.topics[t.Topic]; ok {
				rt.ErrorCode = kerr.TopicAlreadyExists.Code
			} else {
				rt.ErrorCode = s.create(t.Topic, rt.NumPartitions)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.InitProducerIDRequest:
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = s.pid.Add(1), 0
		return resp
	case *kmsg.ProduceRequest:
		return s.produce(req)
	case *kmsg.ListOffsetsRequest:
		return s.listOffsets(req)
	}
	return nil
}

// create makes a topic's partition files; s.mu is held.
func (s *NullServer) create(topic string, partitions int32) int16 {
	parts := make([]*nullPartition, partitions)
	for i := range parts {
		f, err := os.CreateTemp(s.dir, "partition-*.log")
		if err != nil {
			for _, p := range parts[:i] {
				p.file.Close()
			}
			return kerr.KafkaStorageError.Code
		}
		parts[i] = &nullPartition{file: f}
	}
	s.topics[topic] = parts
	return 0
}

// nullApiVersions is an ApiVersions answer listing the NullServer's APIs.
func nullApiVersions(version, errorCode int16) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	resp.ErrorCode = errorCode
	for _, k := range kafkaapi.APIVersions() {
		if slices.Contains(nullServerKeys, kmsg.Key(k.ApiKey)) {
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
	}
	return resp
}

func (s *NullServer) metadata(req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, port, _ := net.SplitHostPort(s.Addr())
	p, _ := strconv.Atoi(port)
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: host, Port: int32(p)}}
	resp.ControllerID = 0
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	if req.Topics == nil {
		for name := range s.topics {
			names = append(names, name)
		}
	}
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		parts, ok := s.topics[name]
		if !ok {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		for i := range parts {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition, rp.Leader, rp.Replicas, rp.ISR = int32(i), 0, []int32{0}, []int32{0}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// produce appends every partition's record bytes to the file and answers with
// the offsets they would have had.
func (s *NullServer) produce(req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.ErrorCode = s.append(t.Topic, p.Partition, p.Records)
			rp.LogAppendTime = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// append writes records, a run of batches, at the end of the partition's file
// with their base offsets set (records is the request's buffer, so it is
// patched in place), and returns the first one's.
func (s *NullServer) append(topic string, partition int32, records []byte) (int64, int16) {
	p := s.partition(topic, partition)
	if p == nil {
		return -1, kerr.UnknownTopicOrPartition.Code
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.batches)
	next, pos := p.next, p.end
	for b := records; len(b) > 0; {
		h, err := batch.ParseHeader(b)
		if err != nil || h.Size() > int64(len(b)) {
			p.batches = p.batches[:n]
			return -1, kerr.CorruptMessage.Code
		}
		binary.BigEndian.PutUint64(b, uint64(next))
		p.batches = append(p.batches, nullBatch{base: next, pos: pos})
		next += int64(h.LastOffsetDelta) + 1
		pos += h.Size()
		b = b[h.Size():]
	}
	if _, err := p.file.WriteAt(records, p.end); err != nil {
		p.batches = p.batches[:n]
		return -1, kerr.KafkaStorageError.Code
	}
	base := p.next
	p.next, p.end = next, pos
	return base, 0
}

// partition is the topic's partition, or nil when there is none.
func (s *NullServer) partition(topic string, partition int32) *nullPartition {
	s.mu.Lock()
	parts := s.topics[topic]
	s.mu.Unlock()
	if partition < 0 || int(partition) >= len(parts) {
		return nil
	}
	return parts[partition]
}
