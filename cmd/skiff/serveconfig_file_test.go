package main

// The packaged /etc/skiff/skiff.yaml is generated from the settings table
// (appliance/settings.go): `go generate ./cmd/skiff` rewrites it, and
// TestPackagedConfigFile fails while the committed file differs.

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"skiff/appliance"
)

var update = flag.Bool("update", false, "rewrite packaging/files/skiff.yaml from the settings table")

// packagedConfig is the /etc/skiff/skiff.yaml the .deb and .rpm install.
const packagedConfig = "../../packaging/files/skiff.yaml"

const configFileHeader = `# /etc/skiff/skiff.yaml: the settings of ` + "`skiff serve`" + `, read by skiff.service
# (ExecStart=/usr/bin/skiff serve --config /etc/skiff/skiff.yaml).
#
# Every key is a flag of ` + "`skiff serve`" + ` with the same name (` + "`skiff serve --help`" + `,
# ` + "`man skiff`" + `). A commented line shows the setting's default: remove the ` + "`#`" + ` to
# change it. SKIFF_<NAME> environment variables (SKIFF_LISTEN, ...) override this
# file, e.g. from a drop-in made with ` + "`systemctl edit skiff`" + `.
# Unknown keys and bad values stop the service at start with the file, line and
# key named in ` + "`journalctl -u skiff`" + `. After an edit: systemctl restart skiff
#
# Upgrades of the package keep your edits to this file.
`

// packagedValues are the settings the packaged file sets rather than leaving at
// their defaults.
var packagedValues = map[string]string{"data-dir": "/var/lib/skiff"}

// configFileNotes add what an operator of the packaged service needs to a
// setting's doc line. A setting without a note gets its doc line alone.
var configFileNotes = map[string]string{
	"data-dir": "In it: etcd/ (the embedded etcd member), meta/ (Pebble), topics/ (the segments) and node.json. " +
		"skiff.service keeps /var/lib/skiff (owned by the skiff user, 0750) writable; a folder elsewhere also needs " +
		"ReadWritePaths= in a drop-in (systemctl edit skiff).",
	"listen":      "An empty host listens on every interface.",
	"advertise":   "Clients must be able to resolve that host name.",
	"etcd-client": "Let only the cluster's own nodes reach it (firewall).",
	"etcd-peer":   "Let only the cluster's own nodes reach it (firewall).",
	"http":        "/metrics is for Prometheus.",
	"pprof": "For example go tool pprof http://HOST:PORT/debug/pprof/profile?seconds=10. " +
		"Off by default: profiling costs CPU while it runs, and the port then shows the node's internals to whoever reaches it.",
	"bootstrap": "Cluster formation (bootstrap, join) is read only while the data directory is empty; afterwards the node " +
		"restarts as the member it is. With neither setting the node starts a new cluster of its own.",
	"join": "For example node1.example.com:9093 (with join-token: node1.example.com:9644).",
	"secure": "Set it on the first node only, with bootstrap. It prints the join token on standard output (the journal " +
		"under systemd). Once formed, a node stays secure at every start; the other nodes join with join-token. " +
		"Excludes tls-cert, tls-key and tls-client-ca; to bring your own certificates, use those with etcd-tls and http-tls.",
	"join-token": "A secret until it is used or expires: prefer SKIFF_JOIN_TOKEN in a drop-in to this file, and remove it " +
		"after the join (a restart ignores it).",
	"etcd-tls": "Turn it on on every node before the cluster's first start.",
	"force-new-cluster": "New nodes then join this one. Left set, every start drops the nodes that joined since. " +
		`See docs/operations.md ("Losing the etcd quorum").`,
	"session-timeout": "Its partitions then move to other replicas.",
	"log-level":       "Logs go to the journal (journalctl -u skiff).",
	"log-format":      "JSON under systemd/journald (JOURNAL_STREAM set).",
	"socket-read-timeout": "One of the limits against broken or hostile clients (docs/limits.md): a refusal is logged " +
		"once per client address and reason per minute.",
	"max-connections": "Followers' replication connections count too. Each open connection takes a file descriptor " +
		"(skiff.service allows 1048576) and about 10 KiB while idle.",
	"max-connections-per-ip": "Clients behind one NAT share an address.",
	"queued-max-request-bytes": "In bytes: a Produce request counts its size, others up to 64 times it while decoded " +
		"(so requests other than Produce are limited to 1/64 of this).",
	"flush-policy":     "A topic's own flush.policy config overrides it.",
	"shutdown-timeout": "skiff.service allows 60s for the whole stop.",
}

// configFile renders the packaged skiff.yaml: a header, then every setting in the
// table's order, commented out at its default unless packagedValues sets it.
func configFile() string {
	var b strings.Builder
	b.WriteString(configFileHeader)
	for _, s := range new(appliance.Config).Settings() {
		doc := s.Doc
		if !strings.HasPrefix(doc, "etcd") { // a name keeps its case
			doc = strings.ToUpper(doc[:1]) + doc[1:]
		}
		if s.Kafka != "" {
			doc += " (" + s.Kafka + ")"
		}
		doc += "."
		if note := configFileNotes[s.Name]; note != "" {
			doc += " " + note
		}
		line := "#" + s.Name + ": " + yamlScalar(s.Default())
		if v, ok := packagedValues[s.Name]; ok {
			doc += " Without this file `skiff serve` uses " + s.Default() + "."
			line = s.Name + ": " + yamlScalar(v)
		}
		b.WriteString("\n")
		for _, l := range wrapWords(doc, 78) {
			b.WriteString("# " + l + "\n")
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// yamlScalar writes v as a YAML value that reads back as v.
func yamlScalar(v string) string {
	if v == "" || strings.ContainsAny(v, ":#{}[],&*!|>'\"%@`") || strings.TrimSpace(v) != v {
		return strconv.Quote(v)
	}
	return v
}

// wrapWords breaks text into lines of at most width characters, at spaces.
func wrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

func TestPackagedConfigFile(t *testing.T) {
	want := configFile()
	if *update {
		if err := os.WriteFile(packagedConfig, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(packagedConfig)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from what the settings table gives: run `go generate ./cmd/skiff`", packagedConfig)
	}
}

// The packaged file is a valid config file; with every setting uncommented it
// still is, and gives every setting its default (a commented line shows it right).
func TestPackagedConfigDefaults(t *testing.T) {
	file, err := appliance.ReadSettingsFile(packagedConfig)
	if err != nil {
		t.Fatalf("the packaged config file is refused: %v", err)
	}
	if len(file) != len(packagedValues) {
		t.Errorf("the packaged file sets %v, want %v", file, packagedValues)
	}
	b, err := os.ReadFile(packagedConfig)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "# ") && strings.HasPrefix(l, "#") && strings.Contains(l, ": ") {
			l = l[1:]
		}
		lines = append(lines, l)
	}
	all := filepath.Join(t.TempDir(), "all.yaml")
	if err := os.WriteFile(all, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	allFile, err := appliance.ReadSettingsFile(all)
	if err != nil {
		t.Fatalf("with every setting uncommented the file is refused: %v", err)
	}
	settings := new(appliance.Config).Settings()
	if len(allFile) != len(settings) {
		t.Errorf("the file names %d settings, the table has %d", len(allFile), len(settings))
	}
	var got, want appliance.Config
	noFlags := func(appliance.Setting) (string, bool) { return "", false }
	if err := got.ResolveSettings(allFile, noFlags); err != nil {
		t.Fatal(err)
	}
	if err := want.ResolveSettings(packagedValuesFile(), noFlags); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("uncommented, the file gives\n%+v\nwant the defaults\n%+v", got, want)
	}
}

func packagedValuesFile() map[string]string {
	out := map[string]string{}
	for k, v := range packagedValues {
		out[k] = v
	}
	return out
}
