package kafkaapi

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/cluster"
)

// errTooManyPartitions: a request names more partitions than max.partitions.per.request.
var errTooManyPartitions = errors.New("kafkaapi: too many partitions in one request")

// errMalformed: a request body does not decode.
var errMalformed = errors.New("kafkaapi: malformed request")

// decodedRequest is a request frame taken apart by decodeFrame.
type decodedRequest struct {
	hdr requestHeader
	// req is the decoded body, nil when the key or version is not served (the
	// client gets UNSUPPORTED_VERSION).
	req kmsg.Request
	// entries counts the topics, partitions, groups... the request names
	// (requestEntries).
	entries int
}

// decodeFrame parses a request frame (without its size prefix) the way the
// connection loop does: the header, then for a served key and version the tagged
// fields of flexible requests and the body with kmsg. Produce bodies are walked first
// (produceShape), so that one naming more than maxEntries partitions is refused
// before it is decoded. An error means the connection must be closed. Nothing in
// the result aliases frame except byte fields of the request (Produce records,
// group member metadata and assignments).
func decodeFrame(frame []byte, maxEntries int) (decodedRequest, error) {
	var d decodedRequest
	hdr, body, err := parseHeaderPrefix(frame)
	if err != nil {
		return d, err
	}
	d.hdr = hdr
	if !supported(hdr.key, hdr.version) {
		return d, nil
	}
	name := kmsg.NameForKey(hdr.key)
	req := kmsg.RequestForKey(hdr.key)
	req.SetVersion(hdr.version)
	if req.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			return d, fmt.Errorf("%s v%d: %w", name, hdr.version, err)
		}
	}
	if hdr.key == 0 {
		n, err := produceShape(body)
		if err != nil {
			return d, fmt.Errorf("decode %s v%d: %w", name, hdr.version, err)
		}
		if maxEntries > 0 && n > maxEntries {
			return d, fmt.Errorf("%s v%d names %d partitions, more than %d: %w", name, hdr.version, n, maxEntries, errTooManyPartitions)
		}
	}
	if err := req.ReadFrom(body); err != nil {
		return d, fmt.Errorf("decode %s v%d: %w: %v", name, hdr.version, errMalformed, err)
	}
	d.entries = requestEntries(req)
	if maxEntries > 0 && d.entries > maxEntries {
		return d, fmt.Errorf("%s v%d names %d partitions, more than %d: %w", name, hdr.version, d.entries, maxEntries, errTooManyPartitions)
	}
	d.req = req
	return d, nil
}

// produceShape walks a Produce body of a served version (v3..v7 share one layout:
// transactional_id nullable string, acks int16, timeout_ms int32, topics array of
// {name string, partitions array of {index int32, records nullable bytes}}) without
// allocating, and returns requestEntries of it. It fails where the body is cut short,
// so an array length is never believed before its elements are there.
func produceShape(b []byte) (int, error) {
	short := fmt.Errorf("%w: produce body cut short", errMalformed)
	take := func(n int) bool {
		if n < 0 || n > len(b) {
			return false
		}
		b = b[n:]
		return true
	}
	i16 := func() (int, bool) {
		if len(b) < 2 {
			return 0, false
		}
		v := int16(binary.BigEndian.Uint16(b))
		b = b[2:]
		return int(v), true
	}
	i32 := func() (int, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		return int(v), true
	}
	// transactional_id (nullable), acks, timeout_ms
	if n, ok := i16(); !ok || !take(max(n, 0)+6) {
		return 0, short
	}
	topics, ok := i32()
	if !ok {
		return 0, short
	}
	entries := 0
	for range max(topics, 0) {
		if n, ok := i16(); !ok || !take(n) {
			return 0, short
		}
		parts, ok := i32()
		if !ok {
			return 0, short
		}
		entries += max(parts, 1)
		for range max(parts, 0) {
			if !take(4) {
				return 0, short
			}
			if n, ok := i32(); !ok || !take(max(n, 0)) {
				return 0, short
			}
		}
	}
	return entries, nil
}

// requestEntries counts what a request names, the quantity max.partitions.per.request
// bounds: for each topic its partitions (at least 1), plus groups, protocols, config
// resources and members. It also estimates the decoded request's size
// (entryBytes per entry).
func requestEntries(req kmsg.Request) int {
	n := 0
	parts := func(k int) { n += max(k, 1) }
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		for _, t := range r.Topics {
			parts(len(t.Partitions))
		}
	case *kmsg.FetchRequest:
		for _, t := range r.Topics {
			parts(len(t.Partitions))
		}
		for _, t := range r.ForgottenTopics {
			parts(len(t.Partitions))
		}
	case *kmsg.ListOffsetsRequest:
		for _, t := range r.Topics {
			parts(len(t.Partitions))
		}
	case *kmsg.MetadataRequest:
		n = len(r.Topics)
	case *kmsg.OffsetCommitRequest:
		for _, t := range r.Topics {
			parts(len(t.Partitions))
		}
	case *kmsg.OffsetFetchRequest:
		for _, t := range r.Topics {
			parts(len(t.Partitions))
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		for _, t := range r.Topics {
			parts(len(t.Partitions))
		}
	case *kmsg.OffsetDeleteRequest:
		for _, t := range r.Topics {
			parts(len(t.Partitions))
		}
	case *kmsg.CreateTopicsRequest:
		// The partitions a request would create count too (up to the most a topic
		// may have: more is answered INVALID_PARTITIONS).
		for _, t := range r.Topics {
			parts(min(max(int(t.NumPartitions), len(t.ReplicaAssignment)), cluster.MaxPartitions+1))
			n += len(t.Configs)
		}
	case *kmsg.CreatePartitionsRequest:
		for _, t := range r.Topics {
			parts(len(t.Assignment))
		}
	case *kmsg.DeleteTopicsRequest:
		n = len(r.TopicNames) + len(r.Topics)
	case *kmsg.DescribeConfigsRequest:
		for _, res := range r.Resources {
			parts(len(res.ConfigNames))
		}
	case *kmsg.DescribeGroupsRequest:
		n = len(r.Groups)
	case *kmsg.DeleteGroupsRequest:
		n = len(r.Groups)
	case *kmsg.JoinGroupRequest:
		n = len(r.Protocols)
	case *kmsg.SyncGroupRequest:
		n = len(r.GroupAssignment)
	case *kmsg.LeaveGroupRequest:
		n = len(r.Members)
	}
	return n
}
