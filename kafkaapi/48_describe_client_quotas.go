package kafkaapi

// DescribeClientQuotas, key 48, versions 0-1 (v1 flexible).
//
// Behaviour: the quotas of the entities the filter matches, as Kafka's
// ClientQuotasImage matches them: each component names an entity type
// (user, client-id, ip) and matches its name exactly (0), its default (1), or
// any entity that has the type (2); strict also requires that the entity has
// no other type. Answered from this node's metadata cache (the quotas in
// etcd, /skiff/quotas/..., docs/format/etcd-keys.md), entities in name order.
// A filter naming a type twice, with an empty type, with a match string where
// none belongs (or none where one does) or with an unknown match type answers
// INVALID_REQUEST; an unknown type UNSUPPORTED_VERSION; ip with user or
// client-id INVALID_REQUEST, as in Kafka. No ip quotas exist, so an ip filter
// matches nothing.
//
// Authorization: DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED),
// as in Kafka.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
	"skiff/quota"
)

func init() {
	register(api[*kmsg.DescribeClientQuotasRequest]{
		min: 0, max: 1,
		handle:  (*Server).handleDescribeClientQuotas,
		entries: func(r *kmsg.DescribeClientQuotasRequest) int { return len(r.Components) },
	})
}

// quotaFilter is a DescribeClientQuotas filter: per entity type, the name it
// must have (exact, or quota.Default), or any (typed).
type quotaFilter struct {
	exact  map[string]quota.Name
	typed  map[string]bool
	strict bool
}

// errUnsupportedType marks a filter's unknown entity type (UNSUPPORTED_VERSION).
var errUnsupportedType = errors.New("unsupported entity type")

func newQuotaFilter(req *kmsg.DescribeClientQuotasRequest) (*quotaFilter, error) {
	f := &quotaFilter{exact: map[string]quota.Name{}, typed: map[string]bool{}, strict: req.Strict}
	for _, c := range req.Components {
		_, dupExact := f.exact[c.EntityType]
		switch {
		case c.EntityType == "":
			return nil, fmt.Errorf("Invalid empty entity type.")
		case dupExact || f.typed[c.EntityType]:
			return nil, fmt.Errorf("Entity type %s cannot appear more than once in the filter.", c.EntityType)
		case c.EntityType != quota.TypeUser && c.EntityType != quota.TypeClientID && c.EntityType != quota.TypeIP:
			return nil, fmt.Errorf("%w %s", errUnsupportedType, c.EntityType)
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return nil, fmt.Errorf("Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			f.exact[c.EntityType] = quota.Named(*c.Match)
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return nil, fmt.Errorf("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			f.exact[c.EntityType] = quota.Default
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return nil, fmt.Errorf("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			f.typed[c.EntityType] = true
		default:
			return nil, fmt.Errorf("Unknown match type %d", c.MatchType)
		}
	}
	_, ipExact := f.exact[quota.TypeIP]
	if (ipExact || f.typed[quota.TypeIP]) && len(f.exact)+len(f.typed) > 1 {
		return nil, fmt.Errorf("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	return f, nil
}

func (f *quotaFilter) matches(e quota.Entity) bool {
	parts := map[string]quota.Name{}
	if e.User.Set() {
		parts[quota.TypeUser] = e.User
	}
	if e.ClientID.Set() {
		parts[quota.TypeClientID] = e.ClientID
	}
	if e.IP.Set() {
		parts[quota.TypeIP] = e.IP
	}
	if f.strict && len(parts) != len(f.exact)+len(f.typed) {
		return false
	}
	for typ, want := range f.exact {
		if got, ok := parts[typ]; !ok || got != want {
			return false
		}
	}
	for typ := range f.typed {
		if _, ok := parts[typ]; !ok {
			return false
		}
	}
	return true
}

func (s *Server) handleDescribeClientQuotas(c *conn, _ *RequestHeader, req *kmsg.DescribeClientQuotasRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(code *kerr.Error, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code.Code, &msg
		return resp
	}
	if !c.allowedCluster(acl.OpDescribeConfigs) {
		return fail(kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Description)
	}
	f, err := newQuotaFilter(req)
	switch {
	case errors.Is(err, errUnsupportedType):
		return fail(kerr.UnsupportedVersion, err.Error())
	case err != nil:
		return fail(kerr.InvalidRequest, err.Error())
	}
	set := s.cache.Snapshot().Quotas()
	var matched []quota.Entity
	for e := range set {
		if f.matches(e) {
			matched = append(matched, e)
		}
	}
	slices.SortFunc(matched, func(a, b quota.Entity) int { return strings.Compare(a.String(), b.String()) })
	for _, e := range matched {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		add := func(typ string, n quota.Name) {
			if n.Set() {
				ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
				ee.Type, ee.Name = typ, n.Ptr()
				entry.Entity = append(entry.Entity, ee)
			}
		}
		add(quota.TypeUser, e.User)
		add(quota.TypeClientID, e.ClientID)
		add(quota.TypeIP, e.IP)
		vals := set[e]
		for _, k := range quota.Keys() {
			if v, ok := vals[k]; ok {
				ev := kmsg.NewDescribeClientQuotasResponseEntryValue()
				ev.Key, ev.Value = k, v
				entry.Values = append(entry.Values, ev)
			}
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp
}
