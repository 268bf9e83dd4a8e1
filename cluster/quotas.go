package cluster

// Client quotas, /skiff/quotas/...: one key per quota entity (a user, a client
// id, or both; either may be the default), holding that entity's quotas by
// key. What AlterClientQuotas writes, and what every node's cache indexes for
// DescribeClientQuotas and the quota manager. Keys and fields must not change
// (docs/format/etcd-keys.md).

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/quota"
)

const (
	prefixQuotas = Prefix + "quotas/"
	// quotaDefault stands for the default of an entity part in a key; a name
	// is path-escaped, so no name is written this way.
	quotaDefault = "<default>"
)

// quotaKey is the key of e: /skiff/quotas/user/<user>/client-id/<client-id>,
// with only the parts e has, or /skiff/quotas/ip/<ip>, each name path-escaped
// (a name may hold '/'), <default> for a default.
func quotaKey(e quota.Entity) string {
	part := func(n quota.Name) string {
		if n.IsDefault() {
			return quotaDefault
		}
		return url.PathEscape(n.Value())
	}
	var parts []string
	if e.User.Set() {
		parts = append(parts, quota.TypeUser, part(e.User))
	}
	if e.ClientID.Set() {
		parts = append(parts, quota.TypeClientID, part(e.ClientID))
	}
	if e.IP.Set() {
		parts = append(parts, quota.TypeIP, part(e.IP))
	}
	return prefixQuotas + strings.Join(parts, "/")
}

// parseQuotaKey is quotaKey's inverse; ok is false for a key quotaKey does
// not write.
func parseQuotaKey(key string) (e quota.Entity, ok bool) {
	parts := strings.Split(strings.TrimPrefix(key, prefixQuotas), "/")
	if len(parts) != 2 && len(parts) != 4 {
		return e, false
	}
	name := func(s string) (quota.Name, bool) {
		if s == quotaDefault {
			return quota.Default, true
		}
		n, err := url.PathUnescape(s)
		if err != nil || n == "" || url.PathEscape(n) != s {
			return quota.Name{}, false
		}
		return quota.Named(n), true
	}
	for i := 0; i < len(parts); i += 2 {
		n, good := name(parts[i+1])
		switch {
		case !good:
			return e, false
		case parts[i] == quota.TypeUser && i == 0:
			e.User = n
		case parts[i] == quota.TypeClientID && !e.ClientID.Set():
			e.ClientID = n
		case parts[i] == quota.TypeIP && i == 0 && len(parts) == 2:
			e.IP = n
		default:
			return e, false
		}
	}
	return e, quotaKey(e) == key
}

// quotaValue is /skiff/quotas/<entity>.
type quotaValue struct {
	Version int                `json:"version"`
	Quotas  map[string]float64 `json:"quotas"`
}

func decodeQuotas(key string, data []byte) (quota.Values, error) {
	var v quotaValue
	if err := decode(key, data, &v, func() int { return v.Version }); err != nil {
		return nil, err
	}
	e, ok := parseQuotaKey(key)
	if !ok {
		return nil, fmt.Errorf("%w: %s: not a quota entity", ErrCorrupt, key)
	}
	for k, x := range v.Quotas {
		if err := quota.Validate(e, k, x); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
		}
	}
	return v.Quotas, nil
}

// AlterClientQuotas sets the quotas of e in set and removes those of the keys
// in remove, in one transaction; an entity left without quotas loses its key.
// The values must be valid (quota.Validate). It returns the revision written
// (or read, when nothing changed).
func (s *Store) AlterClientQuotas(ctx context.Context, e quota.Entity, set quota.Values, remove []string) (int64, error) {
	if why := e.Valid(); why != "" {
		return 0, fmt.Errorf("cluster: quota entity %s: %s", e, why)
	}
	for k, v := range set {
		if err := quota.Validate(e, k, v); err != nil {
			return 0, fmt.Errorf("cluster: quota of %s: %w", e, err)
		}
	}
	key := quotaKey(e)
	for attempt := 0; ; attempt++ {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("cluster: read %s: %w", key, err)
		}
		cur := quota.Values{}
		var modRev int64
		if len(resp.Kvs) > 0 {
			if cur, err = decodeQuotas(key, resp.Kvs[0].Value); err != nil {
				return 0, err
			}
			modRev = resp.Kvs[0].ModRevision
		}
		next := maps.Clone(cur)
		if next == nil {
			next = quota.Values{}
		}
		for _, k := range remove {
			delete(next, k)
		}
		maps.Copy(next, set)
		if maps.Equal(next, cur) {
			return resp.Header.Revision, nil
		}
		op := clientv3.OpDelete(key)
		if len(next) > 0 {
			op = clientv3.OpPut(key, encode(quotaValue{Version: valueVersion, Quotas: next}))
		}
		tr, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).Then(op).Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: write %s: %w", key, err)
		}
		if tr.Succeeded {
			return tr.Header.Revision, nil
		}
		if attempt >= 10 {
			return 0, fmt.Errorf("cluster: write %s: changed concurrently %d times", key, attempt+1)
		}
	}
}
