package auth

// The server side of SASL: PLAIN (RFC 4616) and SCRAM (RFC 5802, RFC 7677), both
// checked against SCRAM credentials. The SCRAM exchange itself (message syntax,
// nonces, proof and signature) is github.com/xdg-go/scram's, a small library
// that is widely used (MongoDB's Go driver), checks the proof in constant time
// and implements RFC 5802's name encoding; Skiff adds what Kafka asks: no
// SASLprep of passwords, no delegation tokens, an authorization id that is the
// user's own or empty, and the iteration bounds.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/xdg-go/scram"
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
	ctx       context.Context // of the Step in progress, for the SCRAM credential callback
	lookupErr error           // a failure of the credential store during that Step
	conv      *scram.ServerConversation
	steps     int // SCRAM messages taken
	user      string
	done      bool
}

// Start begins an exchange with mechanism (one of Mechanisms).
func (s *SASLServer) Start(mechanism string) (*Exchange, error) {
	x := &Exchange{srv: s, mechanism: mechanism}
	switch mechanism {
	case Plain:
	case ScramSHA256, ScramSHA512:
		h := scram.SHA256
		if mechanism == ScramSHA512 {
			h = scram.SHA512
		}
		server, err := h.NewServer(x.scramCredential)
		if err != nil {
			return nil, err
		}
		x.conv = server.NewConversation()
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
	if x.mechanism == Plain {
		x.done = true
		if err := x.plain(ctx, msg); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
	x.steps++
	first := x.steps == 1
	if first {
		if err := checkClientFirst(msg); err != nil {
			x.done = true
			return nil, false, err
		}
	}
	x.ctx, x.lookupErr = ctx, nil
	resp, err := x.conv.Step(string(msg))
	x.ctx = nil
	switch {
	case x.lookupErr != nil:
		x.done = true
		return nil, false, x.lookupErr
	case err != nil:
		x.done = true
		return nil, false, fmt.Errorf("%w: %s: %v", ErrAuthenticationFailed, x.mechanism, err)
	case first && x.conv.AuthzID() != "" && x.conv.AuthzID() != x.conv.Username():
		x.done = true
		return nil, false, fmt.Errorf("%w: authorization id %q is not the user %q", ErrAuthenticationFailed, x.conv.AuthzID(), x.conv.Username())
	}
	if x.conv.Done() {
		x.done = true
		if !x.conv.Valid() {
			return nil, false, fmt.Errorf("%w: %s: invalid proof", ErrAuthenticationFailed, x.mechanism)
		}
		x.user = x.conv.Username()
		return []byte(resp), true, nil
	}
	return []byte(resp), false, nil
}

// Principal is the authenticated client's principal, User:NAME.
func (x *Exchange) Principal() Principal { return User(x.user) }

// User is the user name the client gave (known after its first message), for
// logs.
func (x *Exchange) User() string {
	if x.conv != nil {
		return x.conv.Username()
	}
	return x.user
}

// checkClientFirst refuses what Kafka refuses in a client-first message before
// the library reads it: delegation tokens (tokenauth=true), which Skiff does not
// have.
func checkClientFirst(msg []byte) error {
	fields := strings.Split(string(msg), ",")
	for _, f := range fields[min(4, len(fields)):] { // after gs2 header, n= and r=
		if f == "tokenauth=true" {
			return fmt.Errorf("%w: delegation tokens are not supported", ErrAuthenticationFailed)
		}
	}
	return nil
}

// scramCredential is the SCRAM library's credential callback.
func (x *Exchange) scramCredential(user string) (scram.StoredCredentials, error) {
	cred, ok, err := x.srv.lookup(x.ctx, user, x.mechanism)
	if err != nil {
		x.lookupErr = fmt.Errorf("auth: read the credentials of %q: %w", user, err)
		return scram.StoredCredentials{}, err
	}
	if !ok || cred.Iterations < MinIterations || cred.Iterations > MaxIterations {
		cred = x.srv.decoy(user, x.mechanism)
	}
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations},
		StoredKey:  cred.StoredKey,
		ServerKey:  cred.ServerKey,
	}, nil
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
