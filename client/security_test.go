package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadProperties(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		want       Security
		err        string
	}{
		{name: "librdkafka", text: "security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=alice\nsasl.password=s3cret\nssl.ca.location=/etc/ca.pem\n",
			want: Security{TLS: true, Mechanism: "SCRAM-SHA-512", User: "alice", Password: "s3cret", CAFile: "/etc/ca.pem"}},
		{name: "java", text: "# a comment\n! another\nsecurity.protocol : sasl_plaintext\nsasl.mechanism=SCRAM-SHA-256\n" +
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n    username=\"bob\" password=\"p\\\"w\";\n",
			want: Security{Mechanism: "SCRAM-SHA-256", User: "bob", Password: `p"w`}},
		{name: "ssl", text: "security.protocol=SSL\nssl.certificate.location=c.pem\nssl.key.location=k.pem\nclient.id=x\n",
			want: Security{TLS: true, CertFile: "c.pem", KeyFile: "k.pem"}},
		{name: "plaintext ignores sasl", text: "sasl.mechanism=PLAIN\n", want: Security{}},
		{name: "default GSSAPI", text: "security.protocol=SASL_SSL\n", err: `SASL mechanism "GSSAPI"`},
		{name: "bad protocol", text: "security.protocol=TLS\n", err: "security.protocol"},
		{name: "not a property", text: "security.protocol\n", err: ":1: want KEY=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".properties")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := ReadProperties(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

func TestWithSecurity(t *testing.T) {
	for _, tc := range []struct {
		s   Security
		err string
	}{
		{Security{}, ""},
		{Security{Mechanism: "SCRAM-SHA-512", User: "a", Password: "b"}, ""},
		{Security{TLS: true}, ""},
		{Security{Mechanism: "SCRAM-SHA-512", User: "a"}, "no password for a"},
		{Security{Mechanism: "SCRAM-SHA-512"}, "needs --user"},
		{Security{User: "a"}, "--user needs --sasl-mechanism"},
		{Security{Mechanism: "OAUTHBEARER", User: "a", Password: "b"}, "want SCRAM-SHA-512"},
		{Security{CAFile: "ca.pem"}, "need --tls"},
		{Security{TLS: true, CAFile: "/nonexistent.pem"}, "--tls-ca"},
		{Security{TLS: true, CertFile: "c.pem"}, "go together"},
	} {
		cfg, err := Config{Brokers: []string{"h:1"}}.WithSecurity(tc.s)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%+v: %v", tc.s, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%+v: error %v, want %q", tc.s, err, tc.err)
		case err == nil && (cfg.TLS != nil) != tc.s.TLS:
			t.Errorf("%+v: TLS %v", tc.s, cfg.TLS)
		case err == nil && (cfg.SASL != nil) != (tc.s.Mechanism != ""):
			t.Errorf("%+v: SASL %v", tc.s, cfg.SASL)
		}
	}
	if p := (Security{TLS: true, Mechanism: "PLAIN"}).Protocol(); p != "SASL_SSL" {
		t.Errorf("protocol %s", p)
	}
}
