package cluster

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// FuzzDecodeJoinToken checks the record of a join token,
// /skiff/join-tokens/<id> (docs/format/etcd-keys.md). Invariants:
//   - decodeJoinToken never panics, and every failure is ErrCorrupt or
//     ErrUnsupportedFormat;
//   - a record that decodes is named after its key, and encodeJoinToken
//     (which ConsumeJoinToken uses to mark it used) writes it again, without a
//     panic, as a record that decodes to the same token.
//
// Seeds are records as CreateJoinToken and ConsumeJoinToken write them (unused,
// used), and near misses: a higher version, no version, the wrong types, a
// secret that is not base64, times with an offset.
func FuzzDecodeJoinToken(f *testing.F) {
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	hash := bytes.Repeat([]byte{0xab}, 32)
	for _, v := range []string{
		encodeJoinToken(JoinToken{ID: "x", SecretHash: hash, Created: created, Expires: created.Add(time.Hour), CreatedBy: 1}),
		encodeJoinToken(JoinToken{ID: "x", SecretHash: hash, Created: created, Expires: created.Add(time.Hour), CreatedBy: 2,
			Used: created.Add(time.Minute), UsedBy: "skiff-2"}),
		`{"version":2,"secret_sha256":"q6urqw==","created":"2026-12-01T10:00:00Z","expires":"2026-12-01T11:00:00Z","created_by":1}`,
		`{"secret_sha256":"q6urqw==","created":"2026-12-01T10:00:00Z","expires":"2026-12-01T11:00:00Z"}`,
		`{"version":1,"secret_sha256":"not base64!","created":"2026-12-01T10:00:00Z"}`,
		`{"version":"1","created_by":"one"}`,
		`{"version":1,"created":"2026-12-01T10:00:00+02:00","expires":"2026-12-01T11:00:00-05:00","used_by":""}`,
		`{"version":1}`, `null`, `[]`, ``,
	} {
		f.Add("3f2a9c", []byte(v))
	}
	f.Fuzz(func(t *testing.T, id string, data []byte) {
		key := joinTokenKey(id)
		tok, err := decodeJoinToken(key, data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedFormat) {
				t.Fatalf("%q: %v, want ErrCorrupt or ErrUnsupportedFormat", data, err)
			}
			return
		}
		if tok.ID != id {
			t.Fatalf("the record under %q is named %q", key, tok.ID)
		}
		again, err := decodeJoinToken(key, []byte(encodeJoinToken(tok)))
		if err != nil {
			t.Fatalf("%q decodes, its encoding does not: %v", data, err)
		}
		if again.ID != tok.ID || !bytes.Equal(again.SecretHash, tok.SecretHash) || !again.Created.Equal(tok.Created) ||
			!again.Expires.Equal(tok.Expires) || again.CreatedBy != tok.CreatedBy || !again.Used.Equal(tok.Used) || again.UsedBy != tok.UsedBy {
			t.Fatalf("%q decodes to %+v, encoded again to %+v", data, tok, again)
		}
	})
}

// TestDecodeJoinTokenTimeRange: a record whose time has an offset that puts it
// past year 9999 in UTC is corrupt, not a token that ConsumeJoinToken cannot
// write back (encodeJoinToken panicked on it).
func TestDecodeJoinTokenTimeRange(t *testing.T) {
	for _, v := range []string{
		`{"version":1,"secret_sha256":"q6urqw==","created":"2026-12-01T10:00:00Z","expires":"9999-12-31T23:59:59-05:00","created_by":1}`,
		`{"version":1,"secret_sha256":"q6urqw==","created":"0000-01-01T00:00:00+01:00","expires":"2026-12-01T11:00:00Z","created_by":1}`,
	} {
		if _, err := decodeJoinToken(joinTokenKey("x"), []byte(v)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", v, err)
		}
	}
}
