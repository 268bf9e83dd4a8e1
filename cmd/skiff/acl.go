package main

// skiff acl create|list|delete: ACLs through the Kafka admin API (CreateAcls,
// DescribeAcls, DeleteAcls), as kafka-acls.sh manages them. The brokers enforce
// them with --authorizer acl (docs/security.md).

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"

	"skiff/acl"
	"skiff/client"
)

func aclCommand() *cli.Command {
	return &cli.Command{
		Name:  "acl",
		Usage: "create, list and delete ACLs (what each principal may do)",
		Subcommands: []*cli.Command{
			flagsAnywhere(&cli.Command{
				Name:  "create",
				Usage: "allow (or --deny) principals operations on a resource",
				Description: "Creates an ACL for each --principal and --operation on the resource (one of\n" +
					"--topic, --group, --cluster, --transactional-id), matched literally or, with\n" +
					"--pattern prefixed, as a prefix of names; --topic '*' is every topic. Prints\n" +
					"the ACLs created. Creating an ACL that exists is no error.",
				HideHelpCommand: true,
				Flags:           append(clientFlags(), aclFlags(true)...),
				Action:          runACLCreate,
			}),
			flagsAnywhere(&cli.Command{
				Name:    "list",
				Aliases: []string{"ls"},
				Usage:   "list ACLs, all or those the filters match",
				Description: "Without flags lists every ACL. Each flag narrows the list: --principal,\n" +
					"--operation, --host, --allow or --deny, and a resource; --pattern match with\n" +
					"a resource name lists every ACL that applies to it (literal, '*' and prefixes).",
				HideHelpCommand: true,
				Flags:           append(clientFlags(), aclFlags(false)...),
				Action:          runACLList,
			}),
			flagsAnywhere(&cli.Command{
				Name:  "delete",
				Usage: "delete the ACLs the filters match",
				Description: "Takes the filters of list and deletes what they match, printing it; without\n" +
					"a filter it refuses, unless --all is given.",
				HideHelpCommand: true,
				Flags: append(append(clientFlags(), aclFlags(false)...),
					&cli.BoolFlag{Name: "all", Usage: "delete every ACL when no filter is given"}),
				Action: runACLDelete,
			}),
		},
	}
}

// aclFlags are the flags of create (one binding per principal and operation)
// and of list and delete (a filter).
func aclFlags(create bool) []cli.Flag {
	patternUsage := "how the resource name matches: `PATTERN` literal, prefixed, any or match (default: any)"
	if create {
		patternUsage = "how the resource name matches: `PATTERN` literal or prefixed (default: literal)"
	}
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "principal", Usage: "`TYPE:NAME`, such as User:alice; User:* is every principal (repeatable)"},
		&cli.StringSliceFlag{Name: "operation", Usage: "`OPERATION`: Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All (repeatable)"},
		&cli.StringFlag{Name: "topic", Usage: "the topic `NAME` (or prefix; * is every topic)"},
		&cli.StringFlag{Name: "group", Usage: "the consumer group `NAME` (or prefix; * is every group)"},
		&cli.BoolFlag{Name: "cluster", Usage: "the cluster (kafka-cluster)"},
		&cli.StringFlag{Name: "transactional-id", Usage: "the transactional id `NAME` (or prefix; * is every one)"},
		&cli.StringFlag{Name: "pattern", Usage: patternUsage},
		&cli.StringFlag{Name: "host", Usage: "the client `IP` address the ACL applies to (default: * every host)"},
		&cli.BoolFlag{Name: "deny", Usage: "a DENY ACL (DENY wins over ALLOW)"},
		&cli.BoolFlag{Name: "allow", Usage: "only ALLOW ACLs", Hidden: create},
	}
}

// aclResource reads the one resource flag: its type and name (nil: no
// resource flag, when allowed).
func aclResource(c *cli.Context, required bool) (acl.ResourceType, *string, error) {
	var rt acl.ResourceType
	var name *string
	n := 0
	for flag, t := range map[string]acl.ResourceType{"topic": acl.ResourceTopic, "group": acl.ResourceGroup, "transactional-id": acl.ResourceTransactionalID} {
		if c.IsSet(flag) {
			v := c.String(flag)
			rt, name, n = t, &v, n+1
		}
	}
	if c.Bool("cluster") {
		v := acl.ClusterName
		rt, name, n = acl.ResourceCluster, &v, n+1
	}
	switch {
	case n > 1:
		return 0, nil, errors.New("give one resource: --topic, --group, --cluster or --transactional-id")
	case n == 0 && required:
		return 0, nil, errors.New("missing resource: give --topic NAME, --group NAME, --cluster or --transactional-id NAME")
	case n == 0:
		return acl.ResourceAny, nil, nil
	}
	return rt, name, nil
}

// aclOperations reads --operation, each checked against the operations Kafka
// checks on rt (as kafka-acls.sh does; ALL always).
func aclOperations(c *cli.Context, rt acl.ResourceType) ([]acl.Operation, error) {
	var ops []acl.Operation
	for _, s := range c.StringSlice("operation") {
		op, err := acl.ParseOperation(s)
		if err != nil || op == acl.OpAny {
			return nil, fmt.Errorf("--operation %q: want Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All", s)
		}
		if supported := acl.SupportedOperations(rt); rt != acl.ResourceAny && op != acl.OpAll && !containsOp(supported, op) {
			return nil, fmt.Errorf("--operation %s: a %s ACL supports %s and All", s, strings.ToLower(rt.String()), opNames(supported))
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func containsOp(ops []acl.Operation, op acl.Operation) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

func opNames(ops []acl.Operation) string {
	var names []string
	for _, op := range ops {
		names = append(names, op.String())
	}
	return strings.Join(names, ", ")
}

func runACLCreate(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": skiff acl create takes flags only"); err != nil {
		return err
	}
	rt, name, err := aclResource(c, true)
	if err != nil {
		return err
	}
	ops, err := aclOperations(c, rt)
	if err != nil {
		return err
	}
	if len(ops) == 0 {
		return errors.New("missing --operation: what the principals may (or, with --deny, may not) do")
	}
	principals := c.StringSlice("principal")
	if len(principals) == 0 {
		return errors.New("missing --principal TYPE:NAME, such as User:alice")
	}
	pattern := acl.PatternLiteral
	if s := c.String("pattern"); s != "" {
		if pattern, err = acl.ParsePatternType(s); err != nil || (pattern != acl.PatternLiteral && pattern != acl.PatternPrefixed) {
			return fmt.Errorf("--pattern %q: want literal or prefixed", s)
		}
	}
	perm := acl.Allow
	if c.Bool("deny") {
		perm = acl.Deny
	}
	host := acl.Wildcard
	if c.IsSet("host") {
		host = c.String("host")
	}
	req := kmsg.NewPtrCreateACLsRequest()
	var bindings []string
	for _, p := range principals {
		for _, op := range ops {
			cr := kmsg.NewCreateACLsRequestCreation()
			cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceType(rt), *name, kmsg.ACLResourcePatternType(pattern)
			cr.Principal, cr.Host = p, host
			cr.Operation, cr.PermissionType = kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
			req.Creations = append(req.Creations, cr)
			bindings = append(bindings, fmt.Sprintf("%s %s %s on %s %s %s from %s", p, perm, op, rt, pattern, *name, host))
		}
	}
	resp, err := adminRequest[*kmsg.CreateACLsResponse](c, "create ACLs", req)
	if err != nil {
		return err
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
		fmt.Fprintf(c.App.Writer, "created ACL %s\n", bindings[i])
	}
	return errors.Join(errs...)
}

// aclFilter reads the filter flags of list and delete; none reports that no
// filter flag narrows it.
func aclFilter(c *cli.Context) (f acl.Filter, none bool, err error) {
	f = acl.Filter{Resource: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
	if f.Resource, f.Name, err = aclResource(c, false); err != nil {
		return f, false, err
	}
	if s := c.String("pattern"); s != "" {
		if f.Pattern, err = acl.ParsePatternType(s); err != nil {
			return f, false, fmt.Errorf("--pattern %q: want literal, prefixed, any or match", s)
		}
	}
	if ps := c.StringSlice("principal"); len(ps) > 1 {
		return f, false, errors.New("list and delete take one --principal")
	} else if len(ps) == 1 {
		f.Principal = &ps[0]
	}
	ops, err := aclOperations(c, f.Resource)
	switch {
	case err != nil:
		return f, false, err
	case len(ops) > 1:
		return f, false, errors.New("list and delete take one --operation")
	case len(ops) == 1:
		f.Operation = ops[0]
	}
	if c.IsSet("host") {
		h := c.String("host")
		f.Host = &h
	}
	switch {
	case c.Bool("allow") && c.Bool("deny"):
		return f, false, errors.New("give --allow or --deny, not both")
	case c.Bool("allow"):
		f.Permission = acl.Allow
	case c.Bool("deny"):
		f.Permission = acl.Deny
	}
	every := acl.Filter{Resource: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
	return f, f == every, nil
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

func printACLs(w io.Writer, rows []aclRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tPERMISSION\tOPERATION\tRESOURCE\tPATTERN\tNAME\tHOST")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.principal, r.permission, r.operation, r.resource, r.pattern, r.name, r.host)
	}
	return tw.Flush()
}

func runACLList(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": skiff acl list takes flags only"); err != nil {
		return err
	}
	f, _, err := aclFilter(c)
	if err != nil {
		return err
	}
	rf := kmsgFilter(f)
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = rf.ResourceType, rf.ResourceName, rf.ResourcePatternType
	req.Principal, req.Host, req.Operation, req.PermissionType = rf.Principal, rf.Host, rf.Operation, rf.PermissionType
	resp, err := adminRequest[*kmsg.DescribeACLsResponse](c, "list ACLs", req)
	if err != nil {
		return err
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
	return printACLs(c.App.Writer, rows)
}

func runACLDelete(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": skiff acl delete takes flags only"); err != nil {
		return err
	}
	f, none, err := aclFilter(c)
	if err != nil {
		return err
	}
	if none && !c.Bool("all") {
		return errors.New("no filter: give --principal, --operation, a resource, --host, --allow or --deny, or --all to delete every ACL")
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Filters = append(req.Filters, kmsgFilter(f))
	resp, err := adminRequest[*kmsg.DeleteACLsResponse](c, "delete ACLs", req)
	if err != nil {
		return err
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
	fmt.Fprintf(c.App.Writer, "deleted %d ACLs\n", len(rows))
	if len(rows) == 0 {
		return nil
	}
	return printACLs(c.App.Writer, rows)
}

// adminRequest sends req to a broker of the flags' cluster and returns its
// answer; what names the request in errors.
func adminRequest[R kmsg.Response](c *cli.Context, what string, req kmsg.Request) (R, error) {
	var none R
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return none, err
	}
	defer done()
	resp, err := k.Kafka().Request(ctx, req)
	if err != nil {
		return none, fmt.Errorf("%s: %w", what, k.Explain(err))
	}
	return resp.(R), nil
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
	return fmt.Errorf("%w%s", err, client.BrokerSays(m))
}
