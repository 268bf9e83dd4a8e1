package cluster

// SCRAM credentials of users, /skiff/users/<user>/<mechanism>: what
// AlterUserScramCredentials writes and SASL logins read. Keys and fields must not
// change (docs/format/etcd-keys.md).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/auth"
)

// ErrNoCredential: a deletion names a SCRAM credential that does not exist.
var ErrNoCredential = errors.New("cluster: no such SCRAM credential")

const prefixUsers = Prefix + "users/"

// userKey is the key of a user's credential for a mechanism. A user name may
// hold any character: the mechanism is the last path element.
func userKey(user, mechanism string) string { return prefixUsers + user + "/" + mechanism }

// scramValue is /skiff/users/<user>/<mechanism>. Salt and keys are base64 in
// JSON; the password is never stored.
type scramValue struct {
	Version    int    `json:"version"`
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

func encodeScram(c auth.ScramCredential) string {
	return encode(scramValue{Version: valueVersion, Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey})
}

// decodeScram reads the value of a credential key; ok is false for a key that
// is not one (unknown mechanism).
func decodeScram(key string, data []byte) (user string, c auth.ScramCredential, ok bool, err error) {
	rest := strings.TrimPrefix(key, prefixUsers)
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 || !auth.IsScram(rest[i+1:]) {
		return "", c, false, nil
	}
	var v scramValue
	if err := decode(key, data, &v, func() int { return v.Version }); err != nil {
		return "", c, false, err
	}
	return rest[:i], auth.ScramCredential{Mechanism: rest[i+1:], Salt: v.Salt, Iterations: v.Iterations,
		StoredKey: v.StoredKey, ServerKey: v.ServerKey}, true, nil
}

// ScramCredential reads a user's credential for a mechanism, for a login. The
// read is served by this node's etcd member alone (serializable), so logins do
// not wait for quorum; a credential changed a moment ago may be read as it was.
func (s *Store) ScramCredential(ctx context.Context, user, mechanism string) (auth.ScramCredential, bool, error) {
	key := userKey(user, mechanism)
	resp, err := s.client.Get(ctx, key, clientv3.WithSerializable())
	if err != nil {
		return auth.ScramCredential{}, false, fmt.Errorf("cluster: read %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return auth.ScramCredential{}, false, nil
	}
	_, c, ok, err := decodeScram(key, resp.Kvs[0].Value)
	return c, ok, err
}

// UserCredentials are the SCRAM credentials of one user.
type UserCredentials struct {
	User  string
	Scram []auth.ScramCredential // in mechanism order
}

// ScramUsers lists every user with a SCRAM credential, by name.
func (s *Store) ScramUsers(ctx context.Context) ([]UserCredentials, error) {
	resp, err := s.client.Get(ctx, prefixUsers, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: list %s: %w", prefixUsers, err)
	}
	byUser := map[string]*UserCredentials{}
	var out []UserCredentials
	for _, kv := range resp.Kvs {
		user, c, ok, err := decodeScram(string(kv.Key), kv.Value)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		u := byUser[user]
		if u == nil {
			u = &UserCredentials{User: user}
			byUser[user] = u
		}
		u.Scram = append(u.Scram, c)
	}
	for _, u := range byUser {
		slices.SortFunc(u.Scram, func(a, b auth.ScramCredential) int { return strings.Compare(a.Mechanism, b.Mechanism) })
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b UserCredentials) int { return strings.Compare(a.User, b.User) })
	return out, nil
}

// AlterScramCredentials writes a user's new credentials and deletes the
// credentials of the mechanisms in deletions, in one transaction: if a deletion
// names a credential that does not exist, it fails with ErrNoCredential and
// changes nothing.
func (s *Store) AlterScramCredentials(ctx context.Context, user string, upserts []auth.ScramCredential, deletions []string) error {
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	for _, mech := range deletions {
		key := userKey(user, mech)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), ">", 0))
		ops = append(ops, clientv3.OpDelete(key))
	}
	for _, c := range upserts {
		ops = append(ops, clientv3.OpPut(userKey(user, c.Mechanism), encodeScram(c)))
	}
	resp, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("cluster: write the SCRAM credentials of %q: %w", user, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: user %q", ErrNoCredential, user)
	}
	return nil
}
