package kafkaapi

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errTooManyPartitions: a request names more partitions than max.partitions.per.request.
var errTooManyPartitions = errors.New("kafkaapi: too many partitions in one request")

// errMalformed: a request body does not decode.
var errMalformed = errors.New("kafkaapi: malformed request")

// decodedRequest is a request frame taken apart by decodeFrame.
type decodedRequest struct {
	hdr RequestHeader
	// api is the key's entry, and req the decoded body; both nil when the key or
	// version is not served (the client gets UNSUPPORTED_VERSION).
	api *apiKey
	req kmsg.Request
	// entries counts the topics, partitions, groups... the request names
	// (apiKey.entries).
	entries int
}

// decodeFrame parses a request frame (without its size prefix) the way the
// connection loop does: the header, then for a served key and version the tagged
// fields of flexible requests and the body with kmsg. A key with a shape walk
// (Produce) has its body walked first, so that one naming more than maxEntries
// partitions is refused before it is decoded. An error means the connection must be
// closed. Nothing in the result aliases frame except byte fields of the request
// (Produce records, group member metadata and assignments).
func decodeFrame(frame []byte, maxEntries int) (decodedRequest, error) {
	return decodeFrameWith(frame, maxEntries, false)
}

// decodeFrameWith is decodeFrame serving the versions of transaction version 2
// too when txnV2 is set (Config.TxnV2).
func decodeFrameWith(frame []byte, maxEntries int, txnV2 bool) (decodedRequest, error) {
	var d decodedRequest
	hdr, body, err := parseHeaderPrefix(frame)
	if err != nil {
		return d, err
	}
	d.hdr = hdr
	a := servedWith(hdr.Key, hdr.Version, txnV2)
	if a == nil {
		return d, nil
	}
	req := kmsg.RequestForKey(hdr.Key)
	req.SetVersion(hdr.Version)
	if req.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			return d, fmt.Errorf("%s v%d: %w", a.name, hdr.Version, err)
		}
	}
	if a.shape != nil {
		n, err := a.shape(body, hdr.Version)
		if err != nil {
			return d, fmt.Errorf("decode %s v%d: %w", a.name, hdr.Version, err)
		}
		if maxEntries > 0 && n > maxEntries {
			return d, fmt.Errorf("%s v%d names %d partitions, more than %d: %w", a.name, hdr.Version, n, maxEntries, errTooManyPartitions)
		}
	}
	if err := req.ReadFrom(body); err != nil {
		return d, fmt.Errorf("decode %s v%d: %w: %v", a.name, hdr.Version, errMalformed, err)
	}
	d.entries = a.entries(req)
	if maxEntries > 0 && d.entries > maxEntries {
		return d, fmt.Errorf("%s v%d names %d partitions, more than %d: %w", a.name, hdr.Version, d.entries, maxEntries, errTooManyPartitions)
	}
	d.api, d.req = a, req
	return d, nil
}

// DecodeRequest parses a request frame (without its size prefix) as Server does: its
// header, and its body decoded by kmsg at the versions Server serves (nil when the
// key or version is not served). An error means the frame is malformed.
func DecodeRequest(frame []byte) (RequestHeader, kmsg.Request, error) {
	d, err := decodeFrame(frame, 0)
	return d.hdr, d.req, err
}
