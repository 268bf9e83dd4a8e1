// Package e2e runs real `skiff serve` processes and drives them with real Kafka
// clients (franz-go, kcat), as users do.
package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientOpts are added to every client the tests make; the network-partition test
// sets a dialer that connects from inside its own network namespace.
var clientOpts []kgo.Opt

// newClient returns a franz-go client with its defaults (idempotent producer) plus opts.
func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(addr)}, clientOpts...)
	cl, err := kgo.NewClient(append(all, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, addr, topic string, partitions int32) {
	createTopicB(t, addr, topic, partitions)
}

func createTopicB(t testing.TB, addr, topic string, partitions int32) {
	createTopicRF(t, addr, topic, partitions, 1)
}

// createTopicRF creates a topic with replication factor rf (min.insync.replicas 2 when
// rf > 1) and waits until every partition's ISR is complete.
func createTopicRF(t testing.TB, addr, topic string, partitions int32, rf int16) {
	t.Helper()
	var configs map[string]string
	if rf > 1 {
		configs = map[string]string{"min.insync.replicas": "2"}
	}
	createTopicWith(t, addr, topic, partitions, rf, configs)
}

// createTopicWith creates a topic with replication factor rf and configs, and waits
// until every partition has a leader and a complete ISR.
func createTopicWith(t testing.TB, addr, topic string, partitions int32, rf int16, configs map[string]string) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, clientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := map[string]*string{}
	for k, v := range configs {
		cs[k] = &v
	}
	resp, err := adm.CreateTopic(ctx, partitions, rf, cs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		full := len(md.Topics[topic].Partitions) == int(partitions)
		for _, p := range md.Topics[topic].Partitions {
			full = full && len(p.ISR) == int(rf) && p.Leader >= 0
		}
		if full {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ISRs of %s not complete", topic)
		case <-time.After(50 * time.Millisecond): // polling a condition with a deadline
		}
	}
}

// endOffsets returns the end offset of every partition of topic. kadm leaves a
// partition whose leader has just moved (NOT_LEADER_FOR_PARTITION, or
// LEADER_NOT_AVAILABLE while one is elected: a preferred leader back, a broker that
// briefly lost its session) to the caller to ask again, as a consumer does;
// endOffsets asks until ctx ends.
func endOffsets(t testing.TB, ctx context.Context, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil && (!retriable(err) || ctx.Err() != nil) {
			t.Fatalf("end offsets of %s: %v", topic, err)
		}
		out, retry := make(map[int32]int64), err != nil
		ends.Each(func(o kadm.ListedOffset) {
			switch {
			case o.Err == nil:
				out[o.Partition] = o.Offset
			case kerr.IsRetriable(o.Err) && ctx.Err() == nil:
				retry = true
			default:
				t.Fatalf("end offset of %s/%d: %v", topic, o.Partition, o.Err)
			}
		})
		if !retry {
			return out
		}
		time.Sleep(100 * time.Millisecond) // polling interval of a condition with a deadline
	}
}

// retriable reports whether err is a retriable Kafka error, or kadm's ShardErrors
// made only of such errors (the shards of a request whose leader was unknown).
func retriable(err error) bool {
	var se *kadm.ShardErrors
	if !errors.As(err, &se) {
		return kerr.IsRetriable(err)
	}
	for _, e := range se.Errs {
		if !kerr.IsRetriable(e.Err) {
			return false
		}
	}
	return len(se.Errs) > 0
}

// kadmCreate is a raw CreateTopics request for one topic, for checking the error
// message that kadm does not surface.
func kadmCreate(topic string, timeoutMs int32) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = timeoutMs
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, rt)
	return req
}

// rawRequest sends one request (a non-flexible version of it) on a new connection to
// addr, bypassing any client logic, and returns the decoded answer.
func rawRequest(t *testing.T, addr string, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	t.Helper()
	nc, err := sendRaw(addr, req, timeout)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return readRaw(nc, req)
}

// sendRaw dials addr and writes req (a non-flexible version of it) with a null client
// id; the connection's deadline is timeout from now. A process that is stopped
// (SIGSTOP) still accepts the connection and the request: its kernel queues them.
func sendRaw(addr string, req kmsg.Request, timeout time.Duration) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(time.Now().Add(timeout))
	if _, err := nc.Write(rawFrame(req, 1)); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// rawFrame is req framed with correlation id corr and a null client id (and an
// empty tag section for a flexible version).
func rawFrame(req kmsg.Request, corr int32) []byte {
	frame := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.GetVersion()))
	frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
	frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
	if req.IsFlexible() {
		frame = append(frame, 0)
	}
	frame = req.AppendTo(frame)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// readRaw reads the answer to req, sent by sendRaw, from nc.
func readRaw(nc net.Conn, req kmsg.Request) (kmsg.Response, error) {
	_, resp, err := readRawAnswer(nc, req)
	return resp, err
}

// readRawAnswer reads the next answer from nc, to a request like req: its
// correlation id and body.
func readRawAnswer(nc net.Conn, req kmsg.Request) (int32, kmsg.Response, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		return 0, nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:4])-4)
	if _, err := io.ReadFull(nc, body); err != nil {
		return 0, nil, err
	}
	resp := req.ResponseKind()
	if resp.IsFlexible() && req.Key() != 18 { // ApiVersions answers with no header tags
		var err error
		if body, err = skipHeaderTags(body); err != nil {
			return 0, nil, err
		}
	}
	return int32(binary.BigEndian.Uint32(hdr[4:])), resp, resp.ReadFrom(body)
}

// skipHeaderTags skips the tag section of a flexible response header.
func skipHeaderTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, io.ErrUnexpectedEOF
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, io.ErrUnexpectedEOF
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, io.ErrUnexpectedEOF
		}
		b = b[k+int(size):]
	}
	return b, nil
}
