package auth

import (
	"crypto/x509/pkix"
	"errors"
	"strings"
	"testing"

	"skiff/internal/testcerts"
)

// The rules and names of Kafka's documentation and SslPrincipalMapperTest.
func TestSSLPrincipalMapping(t *testing.T) {
	rules := `RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,
		RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,
		RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,
		DEFAULT`
	m, err := ParseSSLPrincipalMappingRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown": "serviceuser",
		"CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown":          "adminuser@admin",
		"CN=kafka1.example.com,O=x": "kafka1.example.com",
		"OU=nothing,O=x":            "OU=nothing,O=x",
	} {
		if got, err := m.Name(dn); err != nil || got != want {
			t.Errorf("%s -> %q, %v; want %q", dn, got, err, want)
		}
	}
	upper, err := ParseSSLPrincipalMappingRules(`RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := upper.Name("cn=a,ou=b,dc=c,dc=d"); err != nil || got != "A@B" {
		t.Errorf("upper: %q %v", got, err)
	}
	if _, err := upper.Name("CN=a"); !errors.Is(err, ErrNoMappingRule) {
		t.Errorf("no rule matches: %v", err)
	}
	escaped, err := ParseSSLPrincipalMappingRules(`RULE:^CN=([^,]*)\/x,.*$/\$$1\//`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := escaped.Name("CN=a/x,O=b"); err != nil || got != "$a/" {
		t.Errorf("escapes: %q %v", got, err)
	}
}

func TestSSLPrincipalMappingInvalid(t *testing.T) {
	for _, rules := range []string{
		"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1", "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U", "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U", "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		"RULE:^CN=(?=x).*$/$1/", // a Java lookahead: RE2 has none
		// Nested to Go's limit: it compiles, anchored it does not (this panicked).
		"RULE:" + strings.Repeat("(", 999) + "a" + strings.Repeat(")", 999) + "/$1/",
	} {
		if _, err := ParseSSLPrincipalMappingRules(rules); err == nil {
			t.Errorf("%q: accepted", rules)
		}
	}
	for _, rules := range []string{"", "DEFAULT", " DEFAULT , DEFAULT ", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT"} {
		if _, err := ParseSSLPrincipalMappingRules(rules); err != nil {
			t.Errorf("%q: %v", rules, err)
		}
	}
}

// TestSubjectDN: the DN is written in the certificate's order, most specific
// first, as Java writes it for Kafka.
func TestSubjectDN(t *testing.T) {
	ca := testcerts.NewCA(t, t.TempDir(), "ca")
	p := ca.Issue(t, "client", pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"},
		Organization: []string{"Example, Inc."}, Country: []string{"DE"}})
	if got, want := SubjectDN(p.Cert), `CN=alice,OU=eng,O=Example\, Inc.,C=DE`; got != want {
		t.Errorf("DN %q, want %q", got, want)
	}
	m, _ := ParseSSLPrincipalMappingRules(`RULE:^CN=([^,]*),.*$/$1/`)
	if pr, err := m.Principal(p.Cert); err != nil || pr.String() != "User:alice" {
		t.Errorf("principal %v %v", pr, err)
	}
	var none *SSLPrincipalMapper
	if pr, _ := none.Principal(p.Cert); !strings.HasPrefix(pr.String(), "User:CN=alice,") {
		t.Errorf("default principal %v", pr)
	}
}
