package pki

// Join tokens: what a node needs to join a cluster formed with --secure. A token
// names the cluster's CA by its fingerprint (so the joiner knows it talks to the
// right cluster before it sends anything) and carries a single-use secret, which
// the cluster keeps only hashed (cluster.JoinToken). Its text form, which must
// not change:
//
//	skiff1.<CA fingerprint: 43 chars base64url>.<id: 16 hex digits>.<secret: 22 chars base64url>

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
)

// tokenPrefix starts every token; the digit is the version of its form.
const tokenPrefix = "skiff1"

// Token is a join token.
type Token struct {
	// CA is the fingerprint of the cluster's CA.
	CA Fingerprint
	// ID names the token in the cluster (the key of its record); Secret proves
	// that the joiner was given it.
	ID, Secret string
}

// ErrBadToken: a text is not a join token.
var ErrBadToken = errors.New("pki: not a join token (skiff1.<CA fingerprint>.<id>.<secret>, as skiff serve --secure or skiff cluster join-token print it)")

// NewToken makes a token for the CA of fingerprint ca: a random id (8 bytes)
// and secret (16 bytes).
func NewToken(ca Fingerprint) Token {
	id, secret := make([]byte, 8), make([]byte, 16)
	rand.Read(id)
	rand.Read(secret)
	return Token{CA: ca, ID: hex.EncodeToString(id), Secret: base64.RawURLEncoding.EncodeToString(secret)}
}

// String is the token's text form.
func (t Token) String() string {
	return strings.Join([]string{tokenPrefix, t.CA.String(), t.ID, t.Secret}, ".")
}

// ParseToken reads a token's text form (surrounding blanks ignored).
func ParseToken(s string) (Token, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 4 || parts[0] != tokenPrefix {
		return Token{}, ErrBadToken
	}
	ca, err := ParseFingerprint(parts[1])
	if err != nil {
		return Token{}, ErrBadToken
	}
	id, err := hex.DecodeString(parts[2])
	if err != nil || len(id) != 8 || parts[2] != strings.ToLower(parts[2]) {
		return Token{}, ErrBadToken
	}
	secret, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil || len(secret) != 16 {
		return Token{}, ErrBadToken
	}
	return Token{CA: ca, ID: parts[2], Secret: parts[3]}, nil
}

// SecretHash is what the cluster keeps of a token's secret: its SHA-256. The
// secret is 128 random bits, so a plain hash is enough (no password stretching).
func SecretHash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// SecretMatches reports, in constant time, whether secret hashes to hash.
func SecretMatches(secret string, hash []byte) bool {
	return subtle.ConstantTimeCompare(SecretHash(secret), hash) == 1
}
