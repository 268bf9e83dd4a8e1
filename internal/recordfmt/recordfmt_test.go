package recordfmt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// jsonRecord is the documented shape of --format json.
type jsonRecord struct {
	Topic         string       `json:"topic"`
	Partition     int32        `json:"partition"`
	Offset        int64        `json:"offset"`
	Timestamp     string       `json:"timestamp"`
	TimestampMs   int64        `json:"timestamp_ms"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding"`
	Headers       []jsonHeader `json:"headers"`
}

type jsonHeader struct {
	Key           string  `json:"key"`
	KeyEncoding   string  `json:"key_encoding"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding"`
}

// decodeField undoes the encoding of a key or value field: nil for null.
func decodeField(t testing.TB, s *string, encoding string) []byte {
	t.Helper()
	switch {
	case s == nil:
		return nil
	case encoding == "base64":
		b, err := base64.StdEncoding.DecodeString(*s)
		if err != nil {
			t.Fatalf("bad base64 %q: %v", *s, err)
		}
		return b
	case encoding != "":
		t.Fatalf("unknown encoding %q", encoding)
	}
	return []byte(*s)
}

// parseJSONLine decodes one output line strictly: exactly one object, no
// unknown fields, ending in '\n'.
func parseJSONLine(t testing.TB, line []byte) jsonRecord {
	t.Helper()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", line)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var jr jsonRecord
	if err := dec.Decode(&jr); err != nil {
		t.Fatalf("invalid JSON %q: %v", line, err)
	}
	return jr
}

func TestJSONRecord(t *testing.T) {
	ts := time.Date(2024, 5, 1, 14, 0, 0, 123_456_789, time.FixedZone("CEST", 2*3600))
	r := &kgo.Record{
		Topic:     "orders",
		Partition: 3,
		Offset:    42,
		Timestamp: ts,
		Key:       []byte("k\"ey\n"),
		Value:     []byte{0xff, 0x00, 'a'},
		Headers: []kgo.RecordHeader{
			{Key: "trace", Value: []byte("abc")},
			{Key: "bin", Value: []byte{0xc3}},
			{Key: "null", Value: nil},
			{Key: "trace", Value: []byte("")},
		},
	}
	got := string(AppendJSON(nil, r))
	want := `{"topic":"orders","partition":3,"offset":42,"timestamp":"2024-05-01T12:00:00.123Z","timestamp_ms":1714564800123,` +
		`"key":"k\"ey\n","value":"/wBh","value_encoding":"base64","headers":[{"key":"trace","value":"abc"},` +
		`{"key":"bin","value":"ww==","value_encoding":"base64"},{"key":"null","value":null},{"key":"trace","value":""}]}` + "\n"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}

	jr := parseJSONLine(t, []byte(got))
	if tm, err := time.Parse(time.RFC3339, jr.Timestamp); err != nil || tm.UnixMilli() != jr.TimestampMs {
		t.Errorf("timestamp %q (%v) disagrees with timestamp_ms %d", jr.Timestamp, err, jr.TimestampMs)
	}

	// Null and empty stay distinct.
	r = &kgo.Record{Topic: "t", Key: nil, Value: []byte{}, Timestamp: time.UnixMilli(0)}
	got = string(AppendJSON(nil, r))
	if !strings.Contains(got, `"key":null,"value":"","headers":[]}`) {
		t.Errorf("null key / empty value: %s", got)
	}
}

// checkJSONRoundTrip formats a record with the given key and value and checks
// that decoding the line gives them back exactly.
func checkJSONRoundTrip(t testing.TB, key, value []byte, hkey string) {
	r := &kgo.Record{
		Topic: "t", Key: key, Value: value, Timestamp: time.UnixMilli(1),
		Headers: []kgo.RecordHeader{{Key: hkey, Value: value}},
	}
	jr := parseJSONLine(t, AppendJSON(nil, r))
	if k := decodeField(t, jr.Key, jr.KeyEncoding); !bytes.Equal(k, key) || (k == nil) != (key == nil) {
		t.Fatalf("key %q came back as %q", key, k)
	}
	if v := decodeField(t, jr.Value, jr.ValueEncoding); !bytes.Equal(v, value) || (v == nil) != (value == nil) {
		t.Fatalf("value %q came back as %q", value, v)
	}
	h := jr.Headers[0]
	if hk := decodeField(t, &h.Key, h.KeyEncoding); string(hk) != hkey {
		t.Fatalf("header key %q came back as %q", hkey, hk)
	}
	if hv := decodeField(t, h.Value, h.ValueEncoding); !bytes.Equal(hv, value) {
		t.Fatalf("header value %q came back as %q", value, hv)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, s := range []string{
		"", "plain", "quote\" backslash\\ slash/", "\x00\x01\x1f\x7f", "tab\tnl\ncr\r",
		"héllo wörld ✓ 🎉", "\u2028\u2029", "<script>&amp;", "\xff", "a\xc3", string(all[:128]), string(all),
	} {
		checkJSONRoundTrip(t, []byte(s), []byte(s), s)
	}
	checkJSONRoundTrip(t, nil, nil, "")
}

// FuzzJSONRecord checks that any key, value and header key produce one line
// of valid JSON that decodes back to exactly the input bytes.
func FuzzJSONRecord(f *testing.F) {
	f.Add([]byte("k"), []byte("v"), "h")
	f.Add([]byte{0xff}, []byte("\n\"\\"), "\x00")
	f.Fuzz(func(t *testing.T, key, value []byte, hkey string) {
		checkJSONRoundTrip(t, key, value, hkey)
	})
}

func TestAppend(t *testing.T) {
	r := &kgo.Record{Topic: "t", Key: []byte("k"), Value: []byte("v\x00"), Timestamp: time.UnixMilli(1)}
	if got, want := string(Append([]byte("x"), JSON, r, []byte("="))), "x"+string(AppendJSON(nil, r)); got != want {
		t.Errorf("json: %q; want %q", got, want)
	}
	if got := string(Append(nil, Value, r, nil)); got != "v\x00\n" {
		t.Errorf("value: %q", got)
	}
	if got := string(Append(nil, Value, r, []byte(" => "))); got != "k => v\x00\n" {
		t.Errorf("value with key: %q", got)
	}
	if got := string(Append(nil, Value, &kgo.Record{}, []byte("="))); got != "=\n" {
		t.Errorf("null key and value: %q", got)
	}
}
