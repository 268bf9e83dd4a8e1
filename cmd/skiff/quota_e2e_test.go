package main

import (
	"strings"
	"testing"

	"skiff/internal/testnode"
)

// TestQuotaCommands: skiff quota sets quotas of client ids, users and their
// defaults, lists them, deletes some or all of an entity's, and refuses wrong
// flags before anything is sent.
func TestQuotaCommands(t *testing.T) {
	n := testnode.Start(t)
	b := []string{"-b", n.Addr}
	run := func(args ...string) string { return skiffOK(t, nil, append(args, b...)...) }
	fail := func(args ...string) string { return skiffErr(t, nil, append(args, b...)...) }

	mustContain(t, "set client-id", run("quota", "set", "--client-id", "app", "--producer-byte-rate", "1048576", "--consumer-byte-rate", "2097152"),
		"set quotas of client-id=app")
	mustContain(t, "set user and default client id", run("quota", "set", "--quota-user", "alice", "--default", "--request-percentage", "12.5"),
		"set quotas of user=alice,client-id=<default>")
	mustContain(t, "set default user", run("quota", "set", "--default-user", "--producer-byte-rate", "100"),
		"set quotas of user=<default>")
	mustContain(t, "set controller mutation rate", run("quota", "set", "--client-id", "admin", "--controller-mutation-rate", "20"),
		"set quotas of client-id=admin")
	mustContain(t, "set ip", run("quota", "set", "--ip", "127.0.0.9", "--connection-creation-rate", "10"), "set quotas of ip=127.0.0.9")
	mustContain(t, "set default ip", run("quota", "set", "--ip-default", "--connection-creation-rate", "1000"), "set quotas of ip=<default>")
	list := run("quota", "list")
	mustContain(t, "list", list, "ENTITY", "client-id=app", "consumer_byte_rate=2097152, producer_byte_rate=1048576",
		"user=alice,client-id=<default>", "request_percentage=12.5", "user=<default>", "producer_byte_rate=100",
		"client-id=admin", "controller_mutation_rate=20", "ip=127.0.0.9", "connection_creation_rate=10", "ip=<default>", "connection_creation_rate=1000")
	run("quota", "delete", "--ip", "127.0.0.9")
	run("quota", "delete", "--ip-default", "--quota", "connection_creation_rate")
	if list := run("quota", "list"); strings.Contains(list, "ip=") {
		t.Fatalf("ip quotas left after deleting them:\n%s", list)
	}

	mustContain(t, "delete one", run("quota", "delete", "--client-id", "app", "--quota", "producer_byte_rate"), "deleted quotas of client-id=app")
	list = run("quota", "list")
	if strings.Contains(list, "producer_byte_rate=1048576") || !strings.Contains(list, "consumer_byte_rate=2097152") {
		t.Fatalf("after deleting app's producer_byte_rate:\n%s", list)
	}
	run("quota", "delete", "--client-id", "app")
	run("quota", "delete", "--default-user")
	list = run("quota", "list")
	if strings.Contains(list, "client-id=app") || strings.Contains(list, "user=<default>") || !strings.Contains(list, "user=alice") {
		t.Fatalf("after deleting app's and the default user's quotas:\n%s", list)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"quota", "set", "--producer-byte-rate", "1"}, "--client-id ID, --quota-user NAME, --default, --default-user, --ip ADDR or --ip-default"},
		{[]string{"quota", "set", "--client-id", "app"}, "give at least one quota"},
		{[]string{"quota", "set", "--client-id", "app", "--producer-byte-rate", "0"}, "must be at least 1"},
		{[]string{"quota", "set", "--client-id", "app", "--controller-mutation-rate", "0"}, "must be above 0"},
		{[]string{"quota", "set", "--ip", "127.0.0.1", "--client-id", "app", "--connection-creation-rate", "1"}, "the ip alone"},
		{[]string{"quota", "set", "--client-id", "app", "--default", "--producer-byte-rate", "1"}, "not both"},
		{[]string{"quota", "delete", "--client-id", "app", "--quota", "bogus"}, "not a quota"},
		{[]string{"quota", "list", "extra"}, "takes no arguments"},
	} {
		mustContain(t, strings.Join(c.args, " "), fail(c.args...), c.want)
	}
}
