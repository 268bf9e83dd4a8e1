package auth

// The server side of SASL: PLAIN (RFC 4616) and SCRAM (RFC 5802, RFC 7677, in
// scram_server.go), both checked against SCRAM credentials, with what Kafka
// asks: no SASLprep of passwords, no delegation tokens, an authorization id that
// is the user's own or empty, and the iteration bounds.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// ErrAuthenticationFailed: the client's credentials are wrong, or its messages
// malformed. Kafka answers SASL_AUTHENTICATION_FAILED and closes the connection.
var ErrAuthenticationFailed = errors.New("auth: authentication failed")

// CredentialLookup finds the SCRAM credential of a user for a mechanism; ok is
// false when the user has none.
type CredentialLookup func(ctx context.Context, user, mechanism string) (cred ScramCredential, ok bool, err error)

// SASLServer starts SASL exchanges against the credentials of Lookup.
type SASLServer struct {
	lookup CredentialLookup
	// decoyKey makes the credentials an unknown user is answered with, so that
	// a SCRAM exchange for an unknown user fails at the same step as one with a
	// wrong password, with a salt that is the same on every try (no user
	// enumeration), and PLAIN costs the same time either way.
	decoyKey []byte
}

// NewSASLServer returns a server checking logins against lookup.
func NewSASLServer(lookup CredentialLookup) *SASLServer {
	key := make([]byte, 32)
	rand.Read(key)
	return &SASLServer{lookup: lookup, decoyKey: key}
}

// Exchange is one SASL authentication in progress on a connection.
type Exchange struct {
	srv       *SASLServer
	mechanism string
	ctx       context.Context // of the Step in progress, for the SCRAM credential lookup
	scram     *scramServer    // nil for PLAIN
	user      string
	done      bool
}

// Start begins an exchange with mechanism (one of Mechanisms).
func (s *SASLServer) Start(mechanism string) (*Exchange, error) {
	x := &Exchange{srv: s, mechanism: mechanism}
	switch mechanism {
	case Plain:
	case ScramSHA256, ScramSHA512:
		h, _ := scramHash(mechanism)
		x.scram = &scramServer{h: h, lookup: x.scramCredential}
	default:
		return nil, fmt.Errorf("auth: unsupported SASL mechanism %q", mechanism)
	}
	return x, nil
}

// Mechanism is the exchange's mechanism.
func (x *Exchange) Mechanism() string { return x.mechanism }

// Step takes the client's next message and returns the server's answer; done
// is true once the client is authenticated (Principal is then its principal).
// A failure wraps ErrAuthenticationFailed, unless the credentials could not be
// read (the store's error); either ends the exchange.
func (x *Exchange) Step(ctx context.Context, msg []byte) (answer []byte, done bool, err error) {
	if x.done {
		return nil, false, fmt.Errorf("%w: the exchange is over", ErrAuthenticationFailed)
	}
	if x.scram == nil {
		x.done = true
		if err := x.plain(ctx, msg); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
	x.ctx = ctx
	defer func() { x.ctx = nil }()
	x.scram.step++
	if x.scram.step == 1 {
		first, err := x.scram.first(string(msg))
		if err != nil {
			x.done = true
			return nil, false, err
		}
		return []byte(first), false, nil
	}
	x.done = true
	final, err := x.scram.final(string(msg))
	if err != nil {
		return nil, false, err
	}
	x.user = x.scram.user
	return []byte(final), true, nil
}

// Principal is the authenticated client's principal, User:NAME.
func (x *Exchange) Principal() Principal { return User(x.user) }

// User is the user name the client gave (known after its first message), for
// logs.
func (x *Exchange) User() string {
	if x.scram != nil {
		return x.scram.user
	}
	return x.user
}

// scramCredential finds the credential of a SCRAM exchange's user: a decoy for
// an unknown user (or one whose credential has iterations out of bounds).
func (x *Exchange) scramCredential(user string) (ScramCredential, error) {
	cred, ok, err := x.srv.lookup(x.ctx, user, x.mechanism)
	if err != nil {
		return ScramCredential{}, fmt.Errorf("auth: read the credentials of %q: %w", user, err)
	}
	if !ok || cred.Iterations < MinIterations || cred.Iterations > MaxIterations {
		cred = x.srv.decoy(user, x.mechanism)
	}
	return cred, nil
}

// plain checks a PLAIN message: [authzid] NUL authcid NUL passwd.
func (x *Exchange) plain(ctx context.Context, msg []byte) error {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 || len(parts[2]) == 0 {
		return fmt.Errorf("%w: PLAIN: want authzid NUL user NUL password", ErrAuthenticationFailed)
	}
	authz, user, password := string(parts[0]), string(parts[1]), string(parts[2])
	x.user = user
	if authz != "" && authz != user {
		return fmt.Errorf("%w: authorization id %q is not the user %q", ErrAuthenticationFailed, authz, user)
	}
	for _, mech := range ScramMechanisms {
		cred, ok, err := x.srv.lookup(ctx, user, mech)
		if err != nil {
			return fmt.Errorf("auth: read the credentials of %q: %w", user, err)
		}
		if ok {
			if cred.Iterations >= MinIterations && cred.Iterations <= MaxIterations && cred.CheckPassword(password) {
				return nil
			}
			return fmt.Errorf("%w: PLAIN: wrong password for %q", ErrAuthenticationFailed, user)
		}
	}
	x.srv.decoy(user, ScramSHA512).CheckPassword(password) // the same cost as a wrong password
	return fmt.Errorf("%w: PLAIN: unknown user %q", ErrAuthenticationFailed, user)
}

// decoy is the credential an unknown user is checked against: derived from
// the user's name and the server's key, so it is the same on every try; no
// password matches it (its keys are not derived from one).
func (s *SASLServer) decoy(user, mechanism string) ScramCredential {
	derive := func(what string) []byte {
		m := hmac.New(sha256.New, s.decoyKey)
		m.Write([]byte(mechanism + "\x00" + what + "\x00" + user))
		return m.Sum(nil)
	}
	return ScramCredential{Mechanism: mechanism, Salt: derive("salt"), Iterations: MinIterations,
		StoredKey: derive("stored"), ServerKey: derive("server")}
}
