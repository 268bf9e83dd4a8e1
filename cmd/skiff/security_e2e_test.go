package main

import (
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skiff/internal/testcerts"
	"skiff/internal/testnode"
)

// secureTestNode starts a node with a PLAINTEXT listener (for administration),
// SSL with mutual TLS and SASL_SSL offering every mechanism, and returns it
// with its CA and a client certificate of it.
func secureTestNode(t *testing.T) (*testnode.Node, *testcerts.CA, *testcerts.Pair) {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	server := ca.Issue(t, "server", pkix.Name{CommonName: "server"})
	cert := ca.Issue(t, "client", pkix.Name{CommonName: "client"})
	n := testnode.Start(t, "--listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"--tls-cert", server.CertFile, "--tls-key", server.KeyFile, "--tls-client-ca", ca.File,
		"--sasl-mechanisms", "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN")
	return n, ca, cert
}

// TestSecureClientCommands: skiff user creates, lists and deletes users; every
// client command reaches a SASL_SSL or SSL listener with the security flags, the
// password from --password-file or SKIFF_PASSWORD, or a Kafka client properties
// file.
func TestSecureClientCommands(t *testing.T) {
	n, ca, cert := secureTestNode(t)
	admin := []string{"-b", n.Listeners["PLAINTEXT"]}
	mustContain(t, "user create", skiffOK(t, []byte("wonderland\n"), append([]string{"user", "create", "alice", "--password-stdin"}, admin...)...),
		"created user alice (SCRAM-SHA-512)")
	mustContain(t, "user create", skiffOK(t, []byte("builder\n"), append([]string{"user", "create", "--mechanism", "SCRAM-SHA-256,SCRAM-SHA-512", "bob", "--password-stdin"}, admin...)...),
		"created user bob (SCRAM-SHA-256, SCRAM-SHA-512)")
	mustContain(t, "user create without the password on stdin", skiffErr(t, nil, append([]string{"user", "create", "carol"}, admin...)...),
		"--password-stdin")
	list := skiffOK(t, nil, append([]string{"user", "list"}, admin...)...)
	mustContain(t, "user list", list, "USER", "alice", "SCRAM-SHA-512 (8192 iterations)", "bob", "SCRAM-SHA-256 (8192 iterations), SCRAM-SHA-512 (8192 iterations)")

	dir := t.TempDir()
	pwFile := filepath.Join(dir, "alice.pw")
	if err := os.WriteFile(pwFile, []byte("wonderland\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	saslSSL := []string{"-b", n.Listeners["SASL_SSL"], "--tls", "--tls-ca", ca.File}
	alice := append(saslSSL, "--sasl-mechanism", "SCRAM-SHA-512", "--user", "alice", "--password-file", pwFile)
	topic := uniqueTopic("secure")
	mustContain(t, "topic create over SASL_SSL", skiffOK(t, nil, append([]string{"topic", "create", topic}, alice...)...), "created topic "+topic)
	skiffOK(t, []byte("one\ntwo\n"), append([]string{"produce", "-t", topic}, alice...)...)

	// The password from SKIFF_PASSWORD, SCRAM-SHA-256.
	t.Setenv("SKIFF_PASSWORD", "builder")
	bob := append(saslSSL, "--sasl-mechanism", "SCRAM-SHA-256", "--user", "bob")
	if got := skiffOK(t, nil, append([]string{"consume", "-t", topic, "--from-beginning", "--exit-at-end"}, bob...)...); got != "one\ntwo\n" {
		t.Errorf("consumed %q", got)
	}

	// A Kafka client properties file, PLAIN.
	props := filepath.Join(dir, "client.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=alice\nsasl.password=wonderland\nssl.ca.location="+ca.File+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SKIFF_PASSWORD", "")
	mustContain(t, "topic list with --command-config", skiffOK(t, nil, "topic", "list", "-b", n.Listeners["SASL_SSL"], "--command-config", props), topic)

	// SSL with a client certificate.
	ssl := []string{"-b", n.Listeners["SSL"], "--tls", "--tls-ca", ca.File, "--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile}
	mustContain(t, "topic describe over SSL", skiffOK(t, nil, append([]string{"topic", "describe", topic}, ssl...)...), topic)

	// skiff bench connect opens connections with the same flags, and counts
	// the ones refused.
	mustContain(t, "bench connect over SASL_SSL", skiffOK(t, nil, append([]string{"bench", "connect", "-n", "20", "-c", "4"}, alice...)...),
		"20 connections to "+n.Listeners["SASL_SSL"], "SASL_SSL SCRAM-SHA-512", "/s, 0 failed")
	mustContain(t, "bench connect over PLAINTEXT", skiffOK(t, nil, append([]string{"bench", "connect", "-n", "5"}, admin...)...),
		"PLAINTEXT", "/s, 0 failed")

	// Refusals: a wrong password, no client certificate, plaintext on TLS.
	t.Setenv("SKIFF_PASSWORD", "wrong")
	mustContain(t, "wrong password", skiffErr(t, nil, append([]string{"topic", "list", "--timeout", "5s"}, bob...)...), "SASL_AUTHENTICATION_FAILED")
	mustContain(t, "bench connect with a wrong password", skiffOK(t, nil, append([]string{"bench", "connect", "-n", "2", "-c", "2", "--timeout", "5s"}, bob...)...),
		"/s, 2 failed", "SASL_AUTHENTICATION_FAILED")
	skiffErr(t, nil, "topic", "list", "--timeout", "3s", "-b", n.Listeners["SSL"], "--tls", "--tls-ca", ca.File)
	skiffErr(t, nil, "topic", "list", "--timeout", "3s", "-b", n.Listeners["SASL_SSL"])

	mustContain(t, "user delete", skiffOK(t, nil, append([]string{"user", "delete", "alice"}, admin...)...), "deleted user alice (SCRAM-SHA-512)")
	mustContain(t, "user delete again", skiffErr(t, nil, append([]string{"user", "delete", "alice"}, admin...)...), `user "alice" does not exist`)
	mustContain(t, "deleted user logs in", skiffErr(t, nil, append([]string{"topic", "list", "--timeout", "5s"}, alice...)...), "SASL_AUTHENTICATION_FAILED")
	if strings.Contains(skiffOK(t, nil, append([]string{"user", "list"}, admin...)...), "alice") {
		t.Error("alice is still listed")
	}
}
