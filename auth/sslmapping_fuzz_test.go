package auth

import (
	"errors"
	"strings"
	"testing"
)

// FuzzSSLPrincipalMappingRules reads ssl.principal.mapping.rules and maps a
// distinguished name with them. Invariants:
//   - neither ParseSSLPrincipalMappingRules nor Name panics, whatever the rules
//     (a rule that cannot be used is an error of the parse);
//   - parsing is deterministic, and so is mapping: the same rules and DN give
//     the same name or the same error;
//   - Name fails only with ErrNoMappingRule;
//   - rules that parsed still parse with ",DEFAULT" after them, and then map
//     every DN: to what the rules alone make of it, or to the DN itself when
//     no rule of theirs applies.
//
// Seeds are the rules of Kafka's documentation and of TestSSLPrincipalMapping,
// escaped slashes and dollars, case flags, and DNs of Kafka's tests.
func FuzzSSLPrincipalMappingRules(f *testing.F) {
	for _, s := range []struct{ rules, dn string }{
		{"DEFAULT", "CN=alice,OU=eng,O=Example,C=DE"},
		{"", "CN=kafka1,OU=ServiceUsers,O=Org,C=US"},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L, DEFAULT`,
			"CN=duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US"},
		{`RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U`, "cn=a,ou=b,dc=c,dc=d"},
		{`RULE:^CN=([^,]*)\/x,.*$/\$$1\//`, "CN=a/x,O=b"},
		{`RULE:^CN=(?P<user>[^,]*),.*$/${user}/`, "CN=client,OU=tests,O=Skiff"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U", "CN=x"},
		{"RULE:^CN=(?=x).*$/$1/", "CN=x"},
		{"RULE:(a*)*/$1$2$/", "aaa"},
		{" DEFAULT , DEFAULT ", ""},
	} {
		f.Add(s.rules, s.dn)
	}
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := ParseSSLPrincipalMappingRules(rules)
		m2, err2 := ParseSSLPrincipalMappingRules(rules)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("rules %q parse once (%v), not twice (%v)", rules, err, err2)
		}
		if err != nil {
			return
		}
		name, err := m.Name(dn)
		name2, err2 := m2.Name(dn)
		if name != name2 || (err == nil) != (err2 == nil) {
			t.Fatalf("rules %q map %q to %q (%v), then to %q (%v)", rules, dn, name, err, name2, err2)
		}
		if err != nil && !errors.Is(err, ErrNoMappingRule) {
			t.Fatalf("rules %q, DN %q: %v, want ErrNoMappingRule", rules, dn, err)
		}
		// A trailing comma ends the list; one more would be an empty rule.
		withDefault := strings.TrimRight(rules, " \t\n")
		if strings.HasSuffix(withDefault, ",") || strings.TrimSpace(rules) == "" {
			return
		}
		md, errp := ParseSSLPrincipalMappingRules(withDefault + ",DEFAULT")
		if errp != nil {
			t.Fatalf("rules %q parse, not with DEFAULT after them: %v", rules, errp)
		}
		got, errd := md.Name(dn)
		want := name
		if err != nil {
			want = dn
		}
		if errd != nil || got != want {
			t.Fatalf("rules %q then DEFAULT map %q to %q (%v), want %q", rules, dn, got, errd, want)
		}
	})
}
