package acl

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
)

// Set is an immutable collection of bindings, indexed for Authorize: by
// resource type, then literal name (the wildcard "*" is one) or prefix. A nil
// or empty Set holds no ACL. Safe for concurrent use.
type Set struct {
	all    []Binding // sorted, without repeats
	byType map[ResourceType]*typeIndex
}

// typeIndex holds the ACLs of one resource type.
type typeIndex struct {
	literal  map[string][]entry // by name; "*" holds the wildcard ACLs
	prefixed map[string][]entry // by prefix
	// prefixLens are the lengths of the prefixes, ascending, so that finding the
	// prefixed ACLs of a name takes one map lookup per distinct length.
	prefixLens []int
}

// entry is a binding with its host parsed once.
type entry struct {
	b    Binding
	addr netip.Addr // invalid for the host "*"
}

// NewSet indexes bs. Invalid bindings (see Binding.Validate) are dropped;
// repeats are kept once.
func NewSet(bs []Binding) *Set {
	s := &Set{byType: map[ResourceType]*typeIndex{}}
	for _, b := range bs {
		if b.Validate() == nil {
			s.all = append(s.all, b)
		}
	}
	slices.SortFunc(s.all, compare)
	s.all = slices.Compact(s.all)
	for _, b := range s.all {
		idx := s.byType[b.Resource]
		if idx == nil {
			idx = &typeIndex{literal: map[string][]entry{}, prefixed: map[string][]entry{}}
			s.byType[b.Resource] = idx
		}
		e := entry{b: b}
		if b.Host != Wildcard {
			e.addr, _ = netip.ParseAddr(b.Host)
			e.addr = e.addr.Unmap()
		}
		if b.Pattern == PatternLiteral {
			idx.literal[b.Name] = append(idx.literal[b.Name], e)
			continue
		}
		if len(idx.prefixed[b.Name]) == 0 && !slices.Contains(idx.prefixLens, len(b.Name)) {
			idx.prefixLens = append(idx.prefixLens, len(b.Name))
		}
		idx.prefixed[b.Name] = append(idx.prefixed[b.Name], e)
	}
	for _, idx := range s.byType {
		slices.Sort(idx.prefixLens)
	}
	return s
}

// compare orders bindings by resource type, name, pattern, principal, host,
// operation and permission: the order of Bindings and of DescribeAcls answers.
func compare(a, b Binding) int {
	return cmp.Or(
		cmp.Compare(a.Resource, b.Resource),
		strings.Compare(a.Name, b.Name),
		cmp.Compare(a.Pattern, b.Pattern),
		strings.Compare(a.Principal.Type, b.Principal.Type),
		strings.Compare(a.Principal.Name, b.Principal.Name),
		strings.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Permission, b.Permission),
	)
}

// Len is the number of ACLs.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.all)
}

// Bindings returns every ACL, sorted. The slice is shared: do not modify it.
func (s *Set) Bindings() []Binding {
	if s == nil {
		return nil
	}
	return s.all
}

// Select returns the ACLs f matches, sorted.
func (s *Set) Select(f Filter) []Binding {
	var out []Binding
	for _, b := range s.Bindings() {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// forResource calls fn with every ACL that applies to the resource (t, name):
// literal ACLs of the name, the wildcard's, and prefixed ACLs whose prefix
// starts the name, until fn returns false.
func (s *Set) forResource(t ResourceType, name string, fn func(*entry) bool) {
	if s == nil {
		return
	}
	idx := s.byType[t]
	if idx == nil {
		return
	}
	each := func(es []entry) bool {
		for i := range es {
			if !fn(&es[i]) {
				return false
			}
		}
		return true
	}
	if !each(idx.literal[name]) {
		return
	}
	if name != Wildcard && !each(idx.literal[Wildcard]) {
		return
	}
	for _, n := range idx.prefixLens {
		if n > len(name) {
			return
		}
		if !each(idx.prefixed[name[:n]]) {
			return
		}
	}
}
