package main

import (
	"strings"
	"testing"
)

// TestConsumeFlagErrors checks that conflicting or bad flags are refused
// before any connection (the broker address is unroutable).
func TestConsumeFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"consume"}, "missing --topic"},
		{[]string{"consume", "-t", "x", "--from-beginning", "--offset", "3"}, "--from-beginning and --offset conflict"},
		{[]string{"consume", "-t", "x", "--offset", "-1", "--from-beginning"}, "--from-beginning and --offset conflict"},
		{[]string{"consume", "-t", "x", "-n", "0"}, "-n (--count) must be at least 1"},
		{[]string{"consume", "-t", "x", "--format", "xml"}, "invalid --format"},
		{[]string{"consume", "-t", "x", "--format", "json", "-K", ":"}, "--key-separator only applies to --format value"},
		{[]string{"consume", "-t", "x", "-p", "-2"}, "invalid --partition -2"},
		{[]string{"consume", "-t", "x", "-g", "g", "--offset", "1"}, "--offset cannot be used with --group"},
		{[]string{"consume", "-t", "x", "-g", "g", "-p", "1"}, "--partition cannot be used with --group"},
		{[]string{"consume", "-t", "x", "-g", ""}, "--group must not be empty"},
		{[]string{"consume", "-t", "x", "extra"}, `unexpected argument "extra"`},
		{[]string{"consume", "-t", "x", "-g", "g", "--group-protocol", "next"}, "invalid group protocol"},
		{[]string{"consume", "-t", "x", "--group-protocol", "consumer"}, "--group-protocol needs --group"},
	} {
		_, _, err := runApp(nil, append(tc.args, "-b", "192.0.2.1:9")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v; want it to contain %q", tc.args, err, tc.want)
		}
	}
}
