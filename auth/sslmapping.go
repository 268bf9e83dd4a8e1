package auth

// The principal of a client certificate, as Kafka's ssl.principal.mapping.rules
// make it from the certificate's subject.

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrNoMappingRule: no rule of ssl.principal.mapping.rules matches a
// certificate's subject; Kafka refuses such a client, and so does Skiff.
var ErrNoMappingRule = errors.New("auth: no principal mapping rule matches the certificate subject")

// SSLPrincipalMapper turns the distinguished name of a client certificate into
// a principal by Kafka's ssl.principal.mapping.rules: a comma-separated list of
// rules tried in order, each either DEFAULT (the DN unchanged) or
// RULE:pattern/replacement/ with an optional L or U after the last slash (lower
// or upper case the result). A rule applies when its pattern matches the whole
// DN; the result is the DN with every match of the pattern replaced ($1 and
// ${name} are groups, a backslash escapes the next character). Patterns are Go
// regular expressions (RE2), which read the rules of Kafka's documentation the
// same way; Java's lookarounds and backreferences are refused.
type SSLPrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault    bool
	whole, find  *regexp.Regexp // the pattern anchored at both ends, and as written
	replacement  string         // in Go's template syntax
	lower, upper bool
	text         string // as written, for errors
}

// DefaultMappingRules is Kafka's default: the DN as it is.
const DefaultMappingRules = "DEFAULT"

// ParseSSLPrincipalMappingRules reads rules in ssl.principal.mapping.rules
// syntax ("" is DEFAULT).
func ParseSSLPrincipalMappingRules(s string) (*SSLPrincipalMapper, error) {
	if strings.TrimSpace(s) == "" {
		s = DefaultMappingRules
	}
	m := &SSLPrincipalMapper{}
	for rest := s; ; {
		rest = strings.TrimLeft(rest, " \t\n")
		if rest == "" {
			break
		}
		var r mappingRule
		var err error
		at := rest
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r.isDefault = true
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			if r, rest, err = parseMappingRule(rest); err != nil {
				return nil, fmt.Errorf("ssl principal mapping rules %q: %w", s, err)
			}
		}
		tail, next, _ := strings.Cut(rest, ",")
		if at == rest || strings.TrimSpace(tail) != "" {
			return nil, fmt.Errorf("ssl principal mapping rules %q: invalid rule at %q: want DEFAULT or RULE:pattern/replacement/[LU]", s, at)
		}
		m.rules = append(m.rules, r)
		rest = next
	}
	return m, nil
}

// parseMappingRule reads RULE:pattern/replacement/[LU] at the start of s.
func parseMappingRule(s string) (mappingRule, string, error) {
	r := mappingRule{}
	body := s[len("RULE:"):]
	pattern, body, ok := cutUnescaped(body)
	if !ok {
		return r, "", fmt.Errorf("rule %q: want RULE:pattern/replacement/[LU]", s)
	}
	replacement, body, ok := cutUnescaped(body)
	if !ok {
		return r, "", fmt.Errorf("rule %q: want RULE:pattern/replacement/[LU]", s)
	}
	switch {
	case strings.HasPrefix(body, "L"):
		r.lower, body = true, body[1:]
	case strings.HasPrefix(body, "U"):
		r.upper, body = true, body[1:]
	}
	var err error
	if r.find, err = regexp.Compile(pattern); err != nil {
		return r, "", fmt.Errorf("rule pattern %q: %w", pattern, err)
	}
	// Anchored, the pattern nests one level deeper: one at Go's limit of
	// nesting compiles alone, not anchored.
	if r.whole, err = regexp.Compile("^(?:" + pattern + ")$"); err != nil {
		return r, "", fmt.Errorf("rule pattern %q: %w", pattern, err)
	}
	r.replacement = goTemplate(replacement)
	return r, body, nil
}

// cutUnescaped splits s at its first slash not escaped by a backslash.
func cutUnescaped(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// goTemplate turns a Java replacement ($1, ${name}, \x for a literal x) into
// Go's Expand syntax ($$ for a literal dollar).
func goTemplate(java string) string {
	var b strings.Builder
	for i := 0; i < len(java); i++ {
		c := java[i]
		switch {
		case c == '\\' && i+1 < len(java):
			i++
			if java[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(java[i])
			}
		case c == '$' && i+1 < len(java) && java[i+1] >= '0' && java[i+1] <= '9':
			j := i + 1
			for j < len(java) && java[j] >= '0' && java[j] <= '9' {
				j++
			}
			b.WriteString("${" + java[i+1:j] + "}")
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Name maps a distinguished name; it fails with ErrNoMappingRule when no rule
// applies.
func (m *SSLPrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.whole.MatchString(dn) {
			continue
		}
		out := r.find.ReplaceAllString(dn, r.replacement)
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w: %s", ErrNoMappingRule, dn)
}

// Principal is the principal of a verified client certificate: User: and its
// subject's DN, mapped. A nil mapper maps by DEFAULT.
func (m *SSLPrincipalMapper) Principal(cert *x509.Certificate) (Principal, error) {
	dn := SubjectDN(cert)
	if m == nil {
		return User(dn), nil
	}
	name, err := m.Name(dn)
	if err != nil {
		return Principal{}, err
	}
	return User(name), nil
}

// SubjectDN writes a certificate's subject in RFC 2253 form, in the order of
// the certificate (most specific first: CN=alice,OU=eng,O=Example,C=DE), as
// Java's X500Principal.getName() does for Kafka: the same text for CN, OU, O,
// L, ST, C and STREET; other attributes may be spelled differently (Go writes
// DC and UID as OID=#hex, and SERIALNUMBER and POSTALCODE by name, where Java
// does the opposite).
func SubjectDN(cert *x509.Certificate) string {
	var rdns pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &rdns); err != nil || len(rest) > 0 {
		return cert.Subject.String() // the parsed form, in Go's order of attributes
	}
	return rdns.String()
}
