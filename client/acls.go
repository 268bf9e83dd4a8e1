package client

// ACLs, as `skiff acl` administers them through the admin API (CreateAcls,
// DescribeAcls, DeleteAcls), as kafka-acls.sh does. The brokers enforce them
// with --authorizer acl (docs/security.md).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/acl"
)

// ACLCreation is one ACL for each principal and operation on one resource.
type ACLCreation struct {
	Principals []string // TYPE:NAME, such as User:alice
	Operations []acl.Operation
	Resource   acl.ResourceType
	Name       string // the resource's name or prefix
	Pattern    acl.PatternType
	Permission acl.Permission
	Host       string // the client address; acl.Wildcard: every host
}

// CreateACLs creates the ACLs of s and returns those created, as people read
// them; the error joins the failures of the others. Creating an ACL that
// exists is no error.
func (k *Client) CreateACLs(ctx context.Context, s ACLCreation) (created []string, err error) {
	req := kmsg.NewPtrCreateACLsRequest()
	var bindings []string
	for _, p := range s.Principals {
		for _, op := range s.Operations {
			cr := kmsg.NewCreateACLsRequestCreation()
			cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceType(s.Resource), s.Name, kmsg.ACLResourcePatternType(s.Pattern)
			cr.Principal, cr.Host = p, s.Host
			cr.Operation, cr.PermissionType = kmsg.ACLOperation(op), kmsg.ACLPermissionType(s.Permission)
			req.Creations = append(req.Creations, cr)
			bindings = append(bindings, fmt.Sprintf("%s %s %s on %s %s %s from %s", p, s.Permission, op, s.Resource, s.Pattern, s.Name, s.Host))
		}
	}
	resp, err := req.RequestWith(ctx, k.kafka)
	if err != nil {
		return nil, fmt.Errorf("create ACLs: %w", k.Explain(err))
	}
	var errs []error
	for i, r := range resp.Results {
		if i >= len(bindings) {
			break
		}
		if err := aclError(r.ErrorCode, r.ErrorMessage); err != nil {
			errs = append(errs, fmt.Errorf("create ACL %s: %w", bindings[i], err))
			continue
		}
		created = append(created, bindings[i])
	}
	return created, errors.Join(errs...)
}

// ListACLs writes a table of the ACLs that f matches to w.
func (k *Client) ListACLs(ctx context.Context, w io.Writer, f acl.Filter) error {
	rf := kmsgFilter(f)
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = rf.ResourceType, rf.ResourceName, rf.ResourcePatternType
	req.Principal, req.Host, req.Operation, req.PermissionType = rf.Principal, rf.Host, rf.Operation, rf.PermissionType
	resp, err := req.RequestWith(ctx, k.kafka)
	if err != nil {
		return fmt.Errorf("list ACLs: %w", k.Explain(err))
	}
	if err := aclError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return fmt.Errorf("list ACLs: %w", err)
	}
	var rows []aclRow
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			rows = append(rows, aclRow{a.Principal, acl.Permission(a.PermissionType).String(), acl.Operation(a.Operation).String(),
				acl.ResourceType(r.ResourceType).String(), acl.PatternType(r.ResourcePatternType).String(), r.ResourceName, a.Host})
		}
	}
	return writeACLs(w, rows)
}

// DeleteACLs deletes the ACLs that f matches and writes how many, and a table
// of them, to w.
func (k *Client) DeleteACLs(ctx context.Context, w io.Writer, f acl.Filter) error {
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Filters = append(req.Filters, kmsgFilter(f))
	resp, err := req.RequestWith(ctx, k.kafka)
	if err != nil {
		return fmt.Errorf("delete ACLs: %w", k.Explain(err))
	}
	if len(resp.Results) != 1 {
		return fmt.Errorf("delete ACLs: the broker answered %d results for one filter", len(resp.Results))
	}
	r := resp.Results[0]
	if err := aclError(r.ErrorCode, r.ErrorMessage); err != nil {
		return fmt.Errorf("delete ACLs: %w", err)
	}
	var rows []aclRow
	for _, m := range r.MatchingACLs {
		rows = append(rows, aclRow{m.Principal, acl.Permission(m.PermissionType).String(), acl.Operation(m.Operation).String(),
			acl.ResourceType(m.ResourceType).String(), acl.PatternType(m.ResourcePatternType).String(), m.ResourceName, m.Host})
	}
	fmt.Fprintf(w, "deleted %d ACLs\n", len(rows))
	if len(rows) == 0 {
		return nil
	}
	return writeACLs(w, rows)
}

// kmsgFilter is f as the protocol writes a filter (DeleteAcls' filter; the
// fields of DescribeAcls).
func kmsgFilter(f acl.Filter) kmsg.DeleteACLsRequestFilter {
	rf := kmsg.NewDeleteACLsRequestFilter()
	rf.ResourceType, rf.ResourceName, rf.ResourcePatternType = kmsg.ACLResourceType(f.Resource), f.Name, kmsg.ACLResourcePatternType(f.Pattern)
	rf.Principal, rf.Host = f.Principal, f.Host
	rf.Operation, rf.PermissionType = kmsg.ACLOperation(f.Operation), kmsg.ACLPermissionType(f.Permission)
	return rf
}

// aclRow is one ACL as list and delete print it.
type aclRow struct {
	principal, permission, operation, resource, pattern, name, host string
}

func writeACLs(w io.Writer, rows []aclRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tPERMISSION\tOPERATION\tRESOURCE\tPATTERN\tNAME\tHOST")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.principal, r.permission, r.operation, r.resource, r.pattern, r.name, r.host)
	}
	return tw.Flush()
}

// aclError words an ACL API's error for people.
func aclError(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	err := kerr.ErrorForCode(code)
	m := ""
	if msg != nil {
		m = *msg
	}
	switch {
	case errors.Is(err, kerr.SecurityDisabled):
		return errors.New("the brokers enforce no ACLs: start them with --authorizer acl (docs/security.md)")
	case errors.Is(err, kerr.ClusterAuthorizationFailed):
		return fmt.Errorf("%w: managing ACLs needs ALTER (listing them DESCRIBE) on the cluster, or a super user", err)
	}
	return fmt.Errorf("%w%s", err, BrokerSays(m))
}

// ParseACLOperations reads the operations of skiff acl's --operation, each
// checked against the operations Kafka checks on rt (as kafka-acls.sh does; ALL
// always).
func ParseACLOperations(names []string, rt acl.ResourceType) ([]acl.Operation, error) {
	var ops []acl.Operation
	for _, s := range names {
		op, err := acl.ParseOperation(s)
		if err != nil || op == acl.OpAny {
			return nil, fmt.Errorf("--operation %q: want Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All", s)
		}
		if supported := acl.SupportedOperations(rt); rt != acl.ResourceAny && op != acl.OpAll && !slices.Contains(supported, op) {
			return nil, fmt.Errorf("--operation %s: a %s ACL supports %s and All", s, strings.ToLower(rt.String()), opNames(supported))
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func opNames(ops []acl.Operation) string {
	var names []string
	for _, op := range ops {
		names = append(names, op.String())
	}
	return strings.Join(names, ", ")
}
