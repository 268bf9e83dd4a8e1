package cluster

// ACLs, /skiff/acls/<id>: one key per ACL binding, named after its content, so
// that creating an ACL twice writes the same key (Kafka keeps an ACL once).
// What CreateAcls writes, DeleteAcls deletes, and every node's cache indexes
// for the authorizer. Keys, fields and the id's derivation must not change
// (docs/format/etcd-keys.md).

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/acl"
	"skiff/auth"
)

const prefixACLs = Prefix + "acls/"

// MaxACLsPerRequest bounds the ACLs one CreateACLs or DeleteACLs writes, as
// Kafka bounds the records of one operation.
const MaxACLsPerRequest = 10000

// ErrTooManyACLs: a creation or deletion of more than MaxACLsPerRequest ACLs.
var ErrTooManyACLs = errors.New("cluster: too many ACLs in one request")

// aclKey is the key of b: its id is the first 16 bytes of the SHA-256 of b's
// canonical form, in hex. The canonical form must not change: the operation,
// permission, resource type and pattern type as one byte each (their Kafka
// numbers), then the resource name, principal type, principal name and host,
// each as a uvarint length and its bytes.
func aclKey(b acl.Binding) string {
	buf := []byte{byte(b.Operation), byte(b.Permission), byte(b.Resource), byte(b.Pattern)}
	for _, s := range []string{b.Name, b.Principal.Type, b.Principal.Name, b.Host} {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	sum := sha256.Sum256(buf)
	return prefixACLs + hex.EncodeToString(sum[:16])
}

// aclValue is /skiff/acls/<id>: the binding, each enum in Kafka's name.
type aclValue struct {
	Version      int    `json:"version"`
	ResourceType string `json:"resource_type"` // TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"` // LITERAL, PREFIXED
	Principal    string `json:"principal"`    // TYPE:NAME
	Host         string `json:"host"`         // an IP address or *
	Operation    string `json:"operation"`    // READ, ..., ALL
	Permission   string `json:"permission"`   // ALLOW, DENY
}

func encodeACL(b acl.Binding) string {
	return encode(aclValue{Version: valueVersion, ResourceType: b.Resource.String(), ResourceName: b.Name,
		PatternType: b.Pattern.String(), Principal: b.Principal.String(), Host: b.Host,
		Operation: b.Operation.String(), Permission: b.Permission.String()})
}

// decodeACL reads the value of an ACL key. The binding must be valid and be
// the one the key is named after.
func decodeACL(key string, data []byte) (acl.Binding, error) {
	var v aclValue
	if err := decode(key, data, &v, func() int { return v.Version }); err != nil {
		return acl.Binding{}, err
	}
	corrupt := func(err error) (acl.Binding, error) {
		return acl.Binding{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
	}
	rt, err1 := acl.ParseResourceType(v.ResourceType)
	pt, err2 := acl.ParsePatternType(v.PatternType)
	p, err3 := auth.ParsePrincipal(v.Principal)
	op, err4 := acl.ParseOperation(v.Operation)
	perm, err5 := acl.ParsePermission(v.Permission)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return corrupt(err)
	}
	b := acl.Binding{Resource: rt, Name: v.ResourceName, Pattern: pt, Principal: p, Host: v.Host, Operation: op, Permission: perm}
	if err := b.Validate(); err != nil {
		return corrupt(err)
	}
	if aclKey(b) != key {
		return corrupt(fmt.Errorf("holds %v, whose key is %s", b, aclKey(b)))
	}
	return b, nil
}

// maxACLTxnBytes bounds the keys and values of one ACL transaction, well below
// what an etcd client sends in one message (2 MiB).
const maxACLTxnBytes = 1 << 20

// CreateACLs stores bindings (valid ones: acl.Binding.Validate) and returns
// the revision of the last write. An ACL that exists already is left as it is
// (a nested transaction puts each key only if it is absent), so creating it
// again changes nothing, not even its revision. They are written in one
// transaction, or in several of at most 1 MiB each when they are larger: if
// one of those fails, the ACLs of the earlier ones stay (creating them again is
// harmless). More than MaxACLsPerRequest: ErrTooManyACLs, nothing written.
func (s *Store) CreateACLs(ctx context.Context, bs []acl.Binding) (int64, error) {
	if len(bs) > MaxACLsPerRequest {
		return 0, fmt.Errorf("%w: %d, at most %d", ErrTooManyACLs, len(bs), MaxACLsPerRequest)
	}
	for _, b := range bs {
		if err := b.Validate(); err != nil {
			return 0, err
		}
	}
	seen := make(map[string]bool, len(bs))
	var ops []clientv3.Op
	var rev int64
	size := 0
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		resp, err := s.client.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("cluster: write %d ACLs: %w", len(ops), err)
		}
		rev, ops, size = resp.Header.Revision, nil, 0
		return nil
	}
	for _, b := range bs {
		key := aclKey(b)
		if seen[key] {
			continue
		}
		seen[key] = true
		value := encodeACL(b)
		if size += 2*len(key) + len(value); size > maxACLTxnBytes {
			if err := flush(); err != nil {
				return 0, err
			}
			size = 2*len(key) + len(value)
		}
		absent := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		ops = append(ops, clientv3.OpTxn([]clientv3.Cmp{absent}, []clientv3.Op{clientv3.OpPut(key, value)}, nil))
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return rev, nil
}

// DeleteACLs deletes every ACL one of filters matches, in one transaction, and
// returns what each filter matched and the revision. The ACLs are read and
// deleted under a compare of their revisions, so a deletion never reports an
// ACL that another request changed meanwhile (it reads again instead). More
// than MaxACLsPerRequest matched: ErrTooManyACLs, nothing deleted.
func (s *Store) DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, int64, error) {
	for attempt := 0; ; attempt++ {
		resp, err := s.client.Get(ctx, prefixACLs, clientv3.WithPrefix())
		if err != nil {
			return nil, 0, fmt.Errorf("cluster: list %s: %w", prefixACLs, err)
		}
		matched := make([][]acl.Binding, len(filters))
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		for _, kv := range resp.Kvs {
			b, err := decodeACL(string(kv.Key), kv.Value)
			if err != nil {
				continue // the cache ignores it too; it matches nothing
			}
			hit := false
			for i, f := range filters {
				if f.Matches(b) {
					matched[i] = append(matched[i], b)
					hit = true
				}
			}
			if hit {
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
				ops = append(ops, clientv3.OpDelete(string(kv.Key)))
			}
		}
		if len(ops) > MaxACLsPerRequest {
			return nil, 0, fmt.Errorf("%w: the filters match %d, at most %d", ErrTooManyACLs, len(ops), MaxACLsPerRequest)
		}
		if len(ops) == 0 {
			return matched, resp.Header.Revision, nil
		}
		tr, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return nil, 0, fmt.Errorf("cluster: delete %d ACLs: %w", len(ops), err)
		}
		if tr.Succeeded {
			return matched, tr.Header.Revision, nil
		}
		if attempt >= 10 {
			return nil, 0, fmt.Errorf("cluster: delete ACLs: changed concurrently %d times", attempt+1)
		}
	}
}

// parseACLKey reports whether key is an ACL key: the prefix and 32 lower-case
// hex digits.
func parseACLKey(key string) bool {
	id, ok := strings.CutPrefix(key, prefixACLs)
	if !ok || len(id) != 32 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
