package client

// How a client proves who it is and whom it talks to: TLS (with a CA to trust
// and optionally a client certificate) and SASL (SCRAM-SHA-512, SCRAM-SHA-256,
// PLAIN), from the CLI's flags or a client properties file in Kafka's format.

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Security is how to connect: with TLS or not, and with which SASL login. The
// zero value is Kafka's PLAINTEXT.
type Security struct {
	TLS bool
	// CAFile is a PEM file of the CAs that sign the brokers' certificates
	// (empty: the system's roots); CertFile and KeyFile a client certificate
	// and its key, for brokers that ask for one (mutual TLS).
	CAFile, CertFile, KeyFile string
	// Mechanism is the SASL mechanism (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN);
	// empty: no SASL. User and Password are the login.
	Mechanism, User, Password string
}

// Protocol is Kafka's name of the security protocol s stands for.
func (s Security) Protocol() string {
	switch {
	case s.TLS && s.Mechanism != "":
		return "SASL_SSL"
	case s.TLS:
		return "SSL"
	case s.Mechanism != "":
		return "SASL_PLAINTEXT"
	}
	return "PLAINTEXT"
}

// TLSConfig is the TLS configuration of s (nil without TLS): the CAs of
// CAFile (or the system's roots) and the client certificate, if any.
func (s Security) TLSConfig() (*tls.Config, error) {
	if !s.TLS {
		if s.CAFile != "" || s.CertFile != "" {
			return nil, errors.New("--tls-ca, --tls-cert and --tls-key need --tls (or security.protocol SSL or SASL_SSL)")
		}
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", s.CAFile)
		}
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key go together: a client certificate and its key")
	}
	if s.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// apply sets the TLS configuration and SASL mechanism of cfg.
func (s Security) apply(cfg *Config) error {
	tc, err := s.TLSConfig()
	if err != nil {
		return err
	}
	if tc != nil {
		cfg.TLS = tc
	}
	if s.Mechanism == "" {
		if s.User != "" {
			return errors.New("--user needs --sasl-mechanism (SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN)")
		}
		return nil
	}
	if s.User == "" {
		return fmt.Errorf("--sasl-mechanism %s needs --user", s.Mechanism)
	}
	if s.Password == "" {
		return fmt.Errorf("no password for %s: give it with --password-file or SKIFF_PASSWORD", s.User)
	}
	m, err := Mechanism(s.Mechanism, s.User, s.Password)
	if err != nil {
		return err
	}
	cfg.SASL = m
	return nil
}

// Mechanism is franz-go's client side of a SASL mechanism.
func Mechanism(name, user, password string) (sasl.Mechanism, error) {
	switch strings.ToUpper(name) {
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case "PLAIN":
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q: want SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", name)
}

// ReadPasswordFile reads a password from the first line of a file.
func ReadPasswordFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("password file %s: the first line is empty", path)
	}
	return line, nil
}

// jaasOption finds username="..." and password="..." in sasl.jaas.config.
var jaasOption = regexp.MustCompile(`\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"`)

// ReadProperties reads the security settings of a Kafka client properties
// file (kafka-console-producer's --command-config, librdkafka's -F):
// security.protocol, sasl.mechanism (or librdkafka's sasl.mechanisms),
// sasl.username and sasl.password (or the username and password of a Java
// sasl.jaas.config), ssl.ca.location, ssl.certificate.location and
// ssl.key.location. Other keys are ignored, as a client ignores what it does
// not use.
func ReadProperties(path string) (Security, error) {
	props, err := readProperties(path)
	if err != nil {
		return Security{}, err
	}
	var s Security
	switch p := strings.ToUpper(props["security.protocol"]); p {
	case "", "PLAINTEXT":
	case "SSL":
		s.TLS = true
	case "SASL_PLAINTEXT", "SASL_SSL":
		s.TLS = p == "SASL_SSL"
		s.Mechanism = "GSSAPI" // Kafka's default, refused below unless set
	default:
		return Security{}, fmt.Errorf("%s: security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", path, props["security.protocol"])
	}
	for _, k := range []string{"sasl.mechanism", "sasl.mechanisms"} {
		if v := props[k]; v != "" && s.Mechanism != "" {
			s.Mechanism = strings.ToUpper(v)
		}
	}
	if s.Mechanism != "" {
		if _, err := Mechanism(s.Mechanism, "", ""); err != nil {
			return Security{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	s.User, s.Password = props["sasl.username"], props["sasl.password"]
	for _, m := range jaasOption.FindAllStringSubmatch(props["sasl.jaas.config"], -1) {
		v := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
		if m[1] == "username" && s.User == "" {
			s.User = v
		} else if m[1] == "password" && s.Password == "" {
			s.Password = v
		}
	}
	s.CAFile, s.CertFile, s.KeyFile = props["ssl.ca.location"], props["ssl.certificate.location"], props["ssl.key.location"]
	return s, nil
}

// readProperties reads a Java properties file: KEY=VALUE or KEY: VALUE lines,
// # and ! comments, a backslash at the end of a line continuing it.
func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("client properties: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	var pending string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if pending == "" && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			pending += strings.TrimSuffix(line, `\`)
			continue
		}
		line, pending = pending+line, ""
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			return nil, fmt.Errorf("%s:%d: want KEY=VALUE", path, n)
		}
		out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("client properties %s: %w", path, err)
	}
	return out, nil
}
