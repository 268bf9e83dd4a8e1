package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skiff/internal/testnode"
)

// TestACLCommands: skiff acl creates, lists (with filters) and deletes ACLs on a
// node with the ACL authorizer; a user without rights is told what it lacks, a
// node without an authorizer that it enforces none, and wrong flags are refused
// before anything is sent.
func TestACLCommands(t *testing.T) {
	n := testnode.Start(t, "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"--authorizer", "acl", "--super-users", "User:ANONYMOUS")
	admin := []string{"-b", n.Listeners["PLAINTEXT"]}
	run := func(args ...string) string { return skiffOK(t, nil, append(args, admin...)...) }
	fail := func(args ...string) string { return skiffErr(t, nil, append(args, admin...)...) }

	mustContain(t, "acl create", run("acl", "create", "--principal", "User:alice", "--principal", "User:bob",
		"--operation", "Read", "--operation", "describe", "--topic", "orders"),
		"created ACL User:alice ALLOW READ on TOPIC LITERAL orders from *",
		"created ACL User:alice ALLOW DESCRIBE on TOPIC LITERAL orders from *",
		"created ACL User:bob ALLOW READ on TOPIC LITERAL orders from *",
		"created ACL User:bob ALLOW DESCRIBE on TOPIC LITERAL orders from *")
	mustContain(t, "acl create (flags after the first)", run("acl", "create", "--group", "etl-", "--pattern", "prefixed",
		"--principal", "User:alice", "--operation", "Read", "--host", "10.0.0.1"),
		"created ACL User:alice ALLOW READ on GROUP PREFIXED etl- from 10.0.0.1")
	mustContain(t, "acl create --deny", run("acl", "create", "--cluster", "--principal", "User:*", "--operation", "Alter", "--deny"),
		"created ACL User:* DENY ALTER on CLUSTER LITERAL kafka-cluster from *")
	mustContain(t, "acl create --transactional-id", run("acl", "create", "--transactional-id", "tx", "--principal", "User:alice", "--operation", "Write"),
		"created ACL User:alice ALLOW WRITE on TRANSACTIONAL_ID LITERAL tx from *")

	rows := func(out string) int { return len(strings.Split(strings.TrimSpace(out), "\n")) - 1 }
	all := run("acl", "list")
	if got := rows(all); got != 7 {
		t.Fatalf("acl list: %d ACLs, want 7:\n%s", got, all)
	}
	mustContain(t, "acl list", all, "PRINCIPAL", "PERMISSION", "TRANSACTIONAL_ID", "10.0.0.1", "DENY")
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--principal", "User:alice"}, 4},
		{[]string{"--operation", "Read"}, 3},
		{[]string{"--topic", "orders"}, 4},
		{[]string{"--group", "etl-"}, 1},
		{[]string{"--group", "etl-jobs", "--pattern", "match"}, 1},
		{[]string{"--group", "etl-jobs"}, 0},
		{[]string{"--cluster"}, 1},
		{[]string{"--deny"}, 1},
		{[]string{"--allow", "--principal", "User:bob"}, 2},
		{[]string{"--host", "10.0.0.1"}, 1},
	} {
		if got := rows(run(append([]string{"acl", "list"}, c.args...)...)); got != c.want {
			t.Errorf("acl list %s: %d ACLs, want %d", strings.Join(c.args, " "), got, c.want)
		}
	}

	mustContain(t, "acl delete", run("acl", "delete", "--principal", "User:bob"), "deleted 2 ACLs", "User:bob")
	mustContain(t, "acl delete again", run("acl", "delete", "--principal", "User:bob"), "deleted 0 ACLs")
	mustContain(t, "acl delete without a filter", fail("acl", "delete"), "no filter", "--all")
	mustContain(t, "acl delete --all", run("acl", "delete", "--all"), "deleted 5 ACLs")
	if got := rows(run("acl", "list")); got != 0 {
		t.Fatalf("%d ACLs left", got)
	}

	// Refused before anything is sent.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"acl", "create", "--principal", "User:a", "--operation", "Read"}, "missing resource"},
		{[]string{"acl", "create", "--principal", "User:a", "--operation", "Read", "--topic", "t", "--group", "g"}, "give one resource"},
		{[]string{"acl", "create", "--principal", "User:a", "--topic", "t"}, "missing --operation"},
		{[]string{"acl", "create", "--operation", "Read", "--topic", "t"}, "missing --principal"},
		{[]string{"acl", "create", "--principal", "User:a", "--operation", "IdempotentWrite", "--topic", "t"}, "a topic ACL supports READ, WRITE"},
		{[]string{"acl", "create", "--principal", "User:a", "--operation", "Fly", "--topic", "t"}, `--operation "Fly"`},
		{[]string{"acl", "create", "--principal", "User:a", "--operation", "Read", "--topic", "t", "--pattern", "match"}, "want literal or prefixed"},
		{[]string{"acl", "list", "--allow", "--deny"}, "not both"},
		{[]string{"acl", "list", "extra"}, `unexpected argument "extra"`},
	} {
		mustContain(t, strings.Join(c.args, " "), fail(c.args...), c.want)
	}
	// The broker refuses what it cannot store.
	mustContain(t, "a principal without a type", fail("acl", "create", "--principal", "alice", "--operation", "Read", "--topic", "t"),
		"INVALID_REQUEST", "TYPE:NAME")
	mustContain(t, "a host name", fail("acl", "create", "--principal", "User:a", "--operation", "Read", "--topic", "t", "--host", "example.com"),
		"INVALID_REQUEST", "IP address")

	// A user without rights on the cluster.
	skiffOK(t, []byte("secret\n"), append([]string{"user", "create", "carol", "--password-stdin"}, admin...)...)
	pw := filepath.Join(t.TempDir(), "carol.pw")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	carol := []string{"-b", n.Listeners["SASL_PLAINTEXT"], "--sasl-mechanism", "SCRAM-SHA-512", "--user", "carol", "--password-file", pw}
	mustContain(t, "acl list as carol", skiffErr(t, nil, append([]string{"acl", "list"}, carol...)...),
		"CLUSTER_AUTHORIZATION_FAILED", "managing ACLs needs ALTER")
	mustContain(t, "acl create as carol", skiffErr(t, nil, append([]string{"acl", "create", "--principal", "User:carol", "--operation", "All", "--cluster"}, carol...)...),
		"CLUSTER_AUTHORIZATION_FAILED")

	// A node without an authorizer.
	plain := testnode.Start(t)
	mustContain(t, "acl list without an authorizer", skiffErr(t, nil, "acl", "list", "-b", plain.Addr), "enforce no ACLs", "--authorizer acl")
}
