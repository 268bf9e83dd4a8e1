package auth

import "testing"

func TestParsePrincipal(t *testing.T) {
	for in, want := range map[string]Principal{
		"User:alice":      User("alice"),
		"User:ANONYMOUS":  Anonymous,
		"User:CN=a,O=b:c": {Type: "User", Name: "CN=a,O=b:c"},
		"Group:ops":       {Type: "Group", Name: "ops"},
	} {
		got, err := ParsePrincipal(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParsePrincipal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "alice", ":alice", "User:"} {
		if p, err := ParsePrincipal(bad); err == nil {
			t.Errorf("ParsePrincipal(%q) = %v, want an error", bad, p)
		}
	}
}
