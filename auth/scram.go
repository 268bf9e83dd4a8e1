package auth

// SCRAM credentials (RFC 5802, RFC 7677) as Kafka keeps them: per user and
// mechanism, a salt, an iteration count and the two keys derived from the
// salted password. The password itself is never kept: AlterUserScramCredentials
// carries the salted password, from which the keys are derived here.

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
)

// The SASL mechanisms Skiff serves.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	Plain       = "PLAIN"
)

// Mechanisms are the mechanisms Skiff serves, in its order of preference.
var Mechanisms = []string{ScramSHA512, ScramSHA256, Plain}

// ScramMechanisms are the SCRAM mechanisms, in the order PLAIN tries their
// credentials.
var ScramMechanisms = []string{ScramSHA512, ScramSHA256}

// Iteration bounds of SCRAM credentials, Kafka's: fewer is too cheap to
// guess, more makes every login costly for the broker.
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// ScramCredential is what the broker keeps of a password for one mechanism.
type ScramCredential struct {
	Mechanism  string // ScramSHA256 or ScramSHA512
	Salt       []byte
	Iterations int
	StoredKey  []byte // H(HMAC(SaltedPassword, "Client Key"))
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// scramHash is the hash function of a SCRAM mechanism.
func scramHash(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("auth: %q is not a SCRAM mechanism (SCRAM-SHA-256, SCRAM-SHA-512)", mechanism)
}

// IsScram reports whether mechanism is one of the SCRAM mechanisms.
func IsScram(mechanism string) bool { _, err := scramHash(mechanism); return err == nil }

// NewScramCredential derives the credential of a salted password
// (Hi(password, salt, iterations), as AlterUserScramCredentials carries it).
func NewScramCredential(mechanism string, salt, saltedPassword []byte, iterations int) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	clientKey := mac(h, saltedPassword, []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	return ScramCredential{
		Mechanism:  mechanism,
		Salt:       append([]byte(nil), salt...),
		Iterations: iterations,
		StoredKey:  stored.Sum(nil),
		ServerKey:  mac(h, saltedPassword, []byte("Server Key")),
	}, nil
}

// SaltedPassword is Hi(password, salt, iterations) of RFC 5802: PBKDF2 with the
// mechanism's HMAC. The password is used as given, without SASLprep, as Kafka's
// clients do.
func SaltedPassword(mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return nil, err
	}
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// NewSalt is a random salt for a new credential.
func NewSalt() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

// ScramCredentialFromPassword makes a credential of password with a new salt.
func ScramCredentialFromPassword(mechanism, password string, iterations int) (ScramCredential, error) {
	salt := NewSalt()
	salted, err := SaltedPassword(mechanism, password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return NewScramCredential(mechanism, salt, salted, iterations)
}

// CheckPassword reports whether password is the one the credential was made
// from (PLAIN logins are checked this way), in time that does not depend on
// how much of it matches.
func (c ScramCredential) CheckPassword(password string) bool {
	salted, err := SaltedPassword(c.Mechanism, password, c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	derived, err := NewScramCredential(c.Mechanism, c.Salt, salted, c.Iterations)
	return err == nil && hmac.Equal(derived.StoredKey, c.StoredKey)
}

func mac(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}
