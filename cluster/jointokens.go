package cluster

// A cluster formed with --secure (docs/security.md): /skiff/secure marks it and
// names its CA; /skiff/join-tokens/<id> are the join tokens, each kept with the
// hash of its secret only, consumed at most once by a transaction. Keys and
// fields must not change (docs/format/etcd-keys.md).

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/auth"
)

const (
	keySecure        = Prefix + "secure"
	prefixJoinTokens = Prefix + "join-tokens/"
	// joinTokenKeep is how long a token's record stays after it expired, so
	// that a late joiner is told "expired" rather than "unknown".
	joinTokenKeep = 24 * time.Hour
)

// Refusals of ConsumeJoinToken; the error wrapping one says when.
var (
	ErrJoinTokenWrong   = errors.New("the join token is not one of this cluster's (mistyped, or made for another cluster)")
	ErrJoinTokenUsed    = errors.New("the join token was already used: each token admits one node")
	ErrJoinTokenExpired = errors.New("the join token has expired")
)

// JoinToken is the record of a join token.
type JoinToken struct {
	ID string
	// SecretHash is the SHA-256 of the token's secret.
	SecretHash []byte
	Created    time.Time
	Expires    time.Time
	// CreatedBy is the node that made it.
	CreatedBy int32
	// Used is when a node joined with it (zero: not yet), UsedBy that node's
	// name as it asked to join.
	Used   time.Time
	UsedBy string
}

// joinTokenValue is /skiff/join-tokens/<id>.
type joinTokenValue struct {
	Version    int       `json:"version"`
	SecretHash []byte    `json:"secret_sha256"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`
	CreatedBy  int32     `json:"created_by"`
	Used       time.Time `json:"used,omitzero"`
	UsedBy     string    `json:"used_by,omitempty"`
}

func joinTokenKey(id string) string { return prefixJoinTokens + id }

func encodeJoinToken(t JoinToken) string {
	return encode(joinTokenValue{Version: valueVersion, SecretHash: t.SecretHash, Created: t.Created.UTC(), Expires: t.Expires.UTC(),
		CreatedBy: t.CreatedBy, Used: t.Used.UTC(), UsedBy: t.UsedBy})
}

func decodeJoinToken(key string, data []byte) (JoinToken, error) {
	var v joinTokenValue
	if err := decode(key, data, &v, func() int { return v.Version }); err != nil {
		return JoinToken{}, err
	}
	// encodeJoinToken writes the times in UTC, which JSON allows in years 0
	// to 9999 only: a time with an offset may read but not write back.
	for _, at := range []time.Time{v.Created, v.Expires, v.Used} {
		if y := at.UTC().Year(); y < 0 || y > 9999 {
			return JoinToken{}, fmt.Errorf("%w: %s: time %s is out of range in UTC", ErrCorrupt, key, at.Format(time.RFC3339))
		}
	}
	return JoinToken{ID: key[len(prefixJoinTokens):], SecretHash: v.SecretHash, Created: v.Created, Expires: v.Expires,
		CreatedBy: v.CreatedBy, Used: v.Used, UsedBy: v.UsedBy}, nil
}

// CreateJoinToken stores a new token (refused if its id exists) and deletes the
// records of tokens that expired more than a day ago.
func (s *Store) CreateJoinToken(ctx context.Context, t JoinToken) error {
	key := joinTokenKey(t.ID)
	resp, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, encodeJoinToken(t))).Commit()
	if err != nil {
		return fmt.Errorf("cluster: store join token: %w", err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("cluster: join token %s exists", t.ID)
	}
	return s.deleteOldJoinTokens(ctx, t.Created)
}

// deleteOldJoinTokens deletes the records of tokens expired more than
// joinTokenKeep before now.
func (s *Store) deleteOldJoinTokens(ctx context.Context, now time.Time) error {
	resp, err := s.client.Get(ctx, prefixJoinTokens, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("cluster: list join tokens: %w", err)
	}
	var ops []clientv3.Op
	for _, kv := range resp.Kvs {
		t, err := decodeJoinToken(string(kv.Key), kv.Value)
		if err == nil && now.Sub(t.Expires) > joinTokenKeep {
			ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if _, err := s.client.Txn(ctx).Then(ops...).Commit(); err != nil {
		return fmt.Errorf("cluster: delete expired join tokens: %w", err)
	}
	return nil
}

// ConsumeJoinToken admits one node with token id: matches must accept the
// record's secret hash, the token must not be used or expired at now, and it is
// then marked used by usedBy, in a transaction that fails if another node used
// it first. The refusals wrap ErrJoinTokenWrong, ErrJoinTokenUsed and
// ErrJoinTokenExpired; whether a token is used or expired is told only to a
// caller with its secret.
func (s *Store) ConsumeJoinToken(ctx context.Context, id string, matches func(secretHash []byte) bool, now time.Time, usedBy string) (JoinToken, error) {
	key := joinTokenKey(id)
	for {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return JoinToken{}, fmt.Errorf("cluster: read join token: %w", err)
		}
		if len(resp.Kvs) == 0 {
			return JoinToken{}, ErrJoinTokenWrong
		}
		kv := resp.Kvs[0]
		t, err := decodeJoinToken(key, kv.Value)
		if err != nil {
			return JoinToken{}, err
		}
		switch {
		case !matches(t.SecretHash):
			return JoinToken{}, ErrJoinTokenWrong
		case !t.Used.IsZero():
			return t, fmt.Errorf("%w (by %s at %s); make a new one with skiff cluster join-token", ErrJoinTokenUsed, t.UsedBy, t.Used.UTC().Format(time.RFC3339))
		case !now.Before(t.Expires):
			return t, fmt.Errorf("%w (at %s); make a new one with skiff cluster join-token", ErrJoinTokenExpired, t.Expires.UTC().Format(time.RFC3339))
		}
		t.Used, t.UsedBy = now, usedBy
		txn, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpPut(key, encodeJoinToken(t))).Commit()
		if err != nil {
			return JoinToken{}, fmt.Errorf("cluster: consume join token: %w", err)
		}
		if txn.Succeeded {
			return t, nil
		}
		// Changed since read (another joiner was first): read it again.
	}
}

// secureValue is /skiff/secure.
type secureValue struct {
	Version       int       `json:"version"`
	CAFingerprint string    `json:"ca_fingerprint"`
	Created       time.Time `json:"created"`
}

// SecureUser is a user a secure cluster is formed with.
type SecureUser struct {
	Name  string
	Scram []auth.ScramCredential
}

// FormSecure marks the cluster as formed with --secure under the CA of
// fingerprint caFingerprint and creates users, in one transaction that does
// nothing if the cluster is marked already. It reports whether this call marked
// it (a first bootstrap, not a restart).
func (s *Store) FormSecure(ctx context.Context, caFingerprint string, now time.Time, users []SecureUser) (bool, error) {
	ops := []clientv3.Op{clientv3.OpPut(keySecure, encode(secureValue{Version: valueVersion, CAFingerprint: caFingerprint, Created: now.UTC()}))}
	for _, u := range users {
		for _, c := range u.Scram {
			ops = append(ops, clientv3.OpPut(userKey(u.Name, c.Mechanism), encodeScram(c)))
		}
	}
	resp, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(keySecure), "=", 0)).Then(ops...).Commit()
	if err != nil {
		return false, fmt.Errorf("cluster: form the secure cluster: %w", err)
	}
	return resp.Succeeded, nil
}

// SecureCA is the fingerprint of the CA the cluster was formed with ("" for a
// cluster not formed with --secure).
func (s *Store) SecureCA(ctx context.Context) (string, error) {
	resp, err := s.client.Get(ctx, keySecure)
	if err != nil {
		return "", fmt.Errorf("cluster: read %s: %w", keySecure, err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	var v secureValue
	if err := decode(keySecure, resp.Kvs[0].Value, &v, func() int { return v.Version }); err != nil {
		return "", err
	}
	return v.CAFingerprint, nil
}
