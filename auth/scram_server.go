package auth

// The server side of one SCRAM exchange (RFC 5802, RFC 7677), as Kafka's broker
// runs it. It is written here rather than taken from a library because Kafka's
// clients need one thing a strict RFC server refuses: librdkafka (2.0 and
// earlier) sends its own nonce twice in client-final-message, and Kafka's broker
// accepts a nonce that ends with the server's (the proof still covers the
// server's nonce, through server-first-message in AuthMessage, so replays stay
// impossible). The primitives are the standard library's (HMAC, SHA-2, PBKDF2
// in scram.go); github.com/xdg-go/scram's client cross-checks the keys in the
// tests, and franz-go's and librdkafka's clients the exchange.

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// scramServer is one SCRAM exchange: client-first-message, then
// client-final-message.
type scramServer struct {
	h      func() hash.Hash
	lookup func(user string) (ScramCredential, error)

	step            int
	gs2Header       string // "n,," or "n,a=user,": what c= must carry back
	clientFirstBare string
	serverFirst     string
	nonce           string // client nonce + server nonce
	user, authzID   string
	cred            ScramCredential
}

// first takes client-first-message and returns server-first-message.
func (s *scramServer) first(msg string) (string, error) {
	// gs2-header: cbind-flag "," [authzid] ","
	flag, rest, ok1 := strings.Cut(msg, ",")
	authz, bare, ok2 := strings.Cut(rest, ",")
	if !ok1 || !ok2 {
		return "", fail("client-first-message without a gs2 header")
	}
	switch flag {
	case "n", "y": // no channel binding ("y": the client could, but Skiff offers none)
	default:
		return "", fail("channel binding is not supported")
	}
	if authz != "" {
		a, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return "", fail("malformed authzid")
		}
		if s.authzID, ok = decodeSaslName(a); !ok {
			return "", fail("malformed authzid")
		}
	}
	fields := strings.Split(bare, ",")
	if len(fields) < 2 || strings.HasPrefix(fields[0], "m=") {
		return "", fail("malformed client-first-message")
	}
	name, ok := strings.CutPrefix(fields[0], "n=")
	if !ok {
		return "", fail("client-first-message without a user name")
	}
	if s.user, ok = decodeSaslName(name); !ok || s.user == "" {
		return "", fail("malformed user name")
	}
	clientNonce, ok := strings.CutPrefix(fields[1], "r=")
	if !ok || !printable(clientNonce) {
		return "", fail("malformed client nonce")
	}
	for _, ext := range fields[2:] {
		if ext == "tokenauth=true" {
			return "", fail("delegation tokens are not supported")
		}
	}
	if s.authzID != "" && s.authzID != s.user {
		return "", fail(fmt.Sprintf("authorization id %q is not the user %q", s.authzID, s.user))
	}
	cred, err := s.lookup(s.user)
	if err != nil {
		return "", err
	}
	s.cred, s.gs2Header, s.clientFirstBare = cred, flag+","+authz+",", bare
	r := make([]byte, 24)
	rand.Read(r)
	s.nonce = clientNonce + base64.RawStdEncoding.EncodeToString(r)
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return s.serverFirst, nil
}

// final takes client-final-message, checks its proof and returns
// server-final-message.
func (s *scramServer) final(msg string) (string, error) {
	withoutProof, proofField, ok := cutLast(msg, ",p=")
	if !ok {
		return "", fail("client-final-message without a proof")
	}
	fields := strings.Split(withoutProof, ",")
	if len(fields) < 2 {
		return "", fail("malformed client-final-message")
	}
	cbind, ok := strings.CutPrefix(fields[0], "c=")
	if !ok || cbind != base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) {
		return "", fail("channel binding does not match the gs2 header")
	}
	nonce, ok := strings.CutPrefix(fields[1], "r=")
	if !ok || !strings.HasSuffix(nonce, s.nonce) { // librdkafka repeats its nonce: Kafka accepts that
		return "", fail("nonce received did not match nonce sent")
	}
	proof, err := base64.StdEncoding.DecodeString(proofField)
	if err != nil || len(proof) != s.h().Size() {
		return "", fail("malformed proof")
	}
	authMsg := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	clientKey := xor(proof, mac(s.h, s.cred.StoredKey, authMsg))
	stored := s.h()
	stored.Write(clientKey)
	if !hmac.Equal(stored.Sum(nil), s.cred.StoredKey) {
		return "", fail("invalid proof")
	}
	return "v=" + base64.StdEncoding.EncodeToString(mac(s.h, s.cred.ServerKey, authMsg)), nil
}

func fail(why string) error { return fmt.Errorf("%w: SCRAM: %s", ErrAuthenticationFailed, why) }

// cutLast splits s around the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// decodeSaslName undoes RFC 5802's escaping of ',' (=2C) and '=' (=3D).
func decodeSaslName(s string) (string, bool) {
	if strings.ContainsRune(s, ',') {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// printable: a nonce is printable ASCII except ',' (RFC 5802), at least one.
func printable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

func xor(a, b []byte) []byte {
	out := make([]byte, len(a))
	for i := range a {
		out[i] = a[i] ^ b[i]
	}
	return out
}
