package kafkaapi

import (
	"encoding/binary"
	"errors"
)

var errShortHeader = errors.New("kafkaapi: request header truncated")

// RequestHeader is the Kafka request header, v1 (and v2 for flexible requests, which
// adds a tagged-field section after the client id).
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      string
}

// parseHeaderPrefix reads key, version, correlation id and client id; it returns the
// remaining bytes, which start with the tagged fields for flexible requests.
func parseHeaderPrefix(b []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(b) < 10 {
		return h, nil, errShortHeader
	}
	h.Key = int16(binary.BigEndian.Uint16(b[0:]))
	h.Version = int16(binary.BigEndian.Uint16(b[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(b[4:]))
	n := int16(binary.BigEndian.Uint16(b[8:]))
	b = b[10:]
	if n > 0 {
		if int(n) > len(b) {
			return h, nil, errShortHeader
		}
		h.ClientID = string(b[:n])
		b = b[n:]
	}
	return h, b, nil
}

// skipTags skips a tagged-field section (KIP-482): an unsigned varint count, then for
// each field an unsigned varint tag, an unsigned varint size and that many bytes.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errShortHeader
	}
	b = b[k:]
	for i := uint64(0); i < n; i++ {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errShortHeader
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, errShortHeader
		}
		b = b[k+int(size):]
	}
	return b, nil
}
