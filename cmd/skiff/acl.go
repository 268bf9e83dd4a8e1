package main

// skiff acl create|list|delete: the flags of ACLs (resource, principals,
// operations, filters); the operations are client's (client/acls.go).

import (
	"errors"
	"fmt"

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

func runACLCreate(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": skiff acl create takes flags only"); err != nil {
		return err
	}
	rt, name, err := aclResource(c, true)
	if err != nil {
		return err
	}
	ops, err := client.ParseACLOperations(c.StringSlice("operation"), rt)
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
	s := client.ACLCreation{Principals: principals, Operations: ops, Resource: rt, Name: *name,
		Pattern: acl.PatternLiteral, Permission: acl.Allow, Host: acl.Wildcard}
	if p := c.String("pattern"); p != "" {
		if s.Pattern, err = acl.ParsePatternType(p); err != nil || (s.Pattern != acl.PatternLiteral && s.Pattern != acl.PatternPrefixed) {
			return fmt.Errorf("--pattern %q: want literal or prefixed", p)
		}
	}
	if c.Bool("deny") {
		s.Permission = acl.Deny
	}
	if c.IsSet("host") {
		s.Host = c.String("host")
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	created, err := k.CreateACLs(ctx, s)
	for _, b := range created {
		fmt.Fprintf(c.App.Writer, "created ACL %s\n", b)
	}
	return err
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
	ops, err := client.ParseACLOperations(c.StringSlice("operation"), f.Resource)
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

func runACLList(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": skiff acl list takes flags only"); err != nil {
		return err
	}
	f, _, err := aclFilter(c)
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	return k.ListACLs(ctx, c.App.Writer, f)
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
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	return k.DeleteACLs(ctx, c.App.Writer, f)
}
