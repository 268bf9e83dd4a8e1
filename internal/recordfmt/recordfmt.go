// Package recordfmt prints Kafka records as `skiff consume` does: one line per
// record, either the value bytes or a JSON object. The JSON encoder is
// hand-written for speed (no reflection, no per-record allocation) and tested
// against encoding/json.
package recordfmt

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Format is how a record is printed.
type Format int

const (
	Value Format = iota // the value bytes, then '\n'
	JSON                // one JSON object (AppendJSON), then '\n'
)

// Append appends r's output line, including its '\n', to dst. keySep is only
// used by Value: when non-nil the line is KEY SEP VALUE.
func Append(dst []byte, f Format, r *kgo.Record, keySep []byte) []byte {
	if f == JSON {
		return AppendJSON(dst, r)
	}
	if keySep != nil {
		dst = append(dst, r.Key...)
		dst = append(dst, keySep...)
	}
	dst = append(dst, r.Value...)
	return append(dst, '\n')
}

// jsonTimeLayout is RFC 3339 with milliseconds; records are printed in UTC.
const jsonTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// AppendJSON appends r as one line of JSON:
//
//	{"topic":"t","partition":0,"offset":7,"timestamp":"2024-05-01T12:00:00.123Z",
//	 "timestamp_ms":1714564800123,"key":null,"value":"hello",
//	 "headers":[{"key":"trace","value":"abc"}]}
//
// key, value and header values are JSON strings when they are valid UTF-8;
// otherwise they are base64 (standard, padded) and followed by a field
// "key_encoding":"base64" (or "value_encoding"). A null key or value (not the
// same as an empty one) is null. Header keys are handled the same way.
func AppendJSON(dst []byte, r *kgo.Record) []byte {
	dst = append(dst, `{"topic":`...)
	dst = appendJSONString(dst, r.Topic)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(r.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, r.Offset, 10)
	dst = append(dst, `,"timestamp":"`...)
	dst = r.Timestamp.UTC().AppendFormat(dst, jsonTimeLayout)
	dst = append(dst, `","timestamp_ms":`...)
	dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
	dst = append(dst, ',')
	dst = appendJSONBytesField(dst, "key", r.Key)
	dst = append(dst, ',')
	dst = appendJSONBytesField(dst, "value", r.Value)
	dst = append(dst, `,"headers":[`...)
	for i, h := range r.Headers {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		if utf8.ValidString(h.Key) {
			dst = append(dst, `"key":`...)
			dst = appendJSONString(dst, h.Key)
		} else {
			dst = appendJSONBytesField(dst, "key", []byte(h.Key))
		}
		dst = append(dst, ',')
		dst = appendJSONBytesField(dst, "value", h.Value)
		dst = append(dst, '}')
	}
	return append(dst, "]}\n"...)
}

// appendJSONBytesField appends "name":VALUE for b: null, a string, or base64
// followed by "name_encoding":"base64".
func appendJSONBytesField(dst []byte, name string, b []byte) []byte {
	dst = append(dst, '"')
	dst = append(dst, name...)
	dst = append(dst, `":`...)
	switch {
	case b == nil:
		return append(dst, "null"...)
	case utf8.Valid(b):
		return appendJSONString(dst, b)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	dst = append(dst, `","`...)
	dst = append(dst, name...)
	return append(dst, `_encoding":"base64"`...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s, which must be valid UTF-8, as a JSON string.
// Only '"', '\\' and control characters are escaped.
func appendJSONString[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
