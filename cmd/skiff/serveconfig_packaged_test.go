package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// packagedConfig is the /etc/skiff/skiff.yaml the .deb and .rpm install.
const packagedConfig = "../../packaging/files/skiff.yaml"

var configKeyLine = regexp.MustCompile(`^(#?)([a-z][a-z0-9-]*):(.*)$`)

// The packaged skiff.yaml documents every serve setting exactly once: set, or as
// a commented line holding the default. It is a valid config file as shipped and
// with every commented setting uncommented. A failure here after adding a setting
// to serveSettings means: document it in packaging/files/skiff.yaml.
func TestPackagedConfigDocumentsEverySetting(t *testing.T) {
	b, err := os.ReadFile(packagedConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readConfigFile(packagedConfig); err != nil {
		t.Fatalf("the packaged config file is refused: %v", err)
	}
	type entry struct {
		commented bool
		value     string
		line      int
	}
	found := map[string][]entry{}
	var uncommented []string
	for i, line := range strings.Split(string(b), "\n") {
		m := configKeyLine.FindStringSubmatch(line)
		if m == nil {
			uncommented = append(uncommented, line)
			continue
		}
		var v string
		if err := yaml.Unmarshal([]byte(strings.TrimSpace(m[3])), &v); err != nil && strings.TrimSpace(m[3]) != "" {
			t.Errorf("line %d: value of %s does not parse: %v", i+1, m[2], err)
		}
		found[m[2]] = append(found[m[2]], entry{commented: m[1] == "#", value: v, line: i + 1})
		uncommented = append(uncommented, strings.TrimPrefix(line, "#"))
	}
	known := map[string]bool{}
	for _, s := range serveSettings {
		known[s.name] = true
		es := found[s.name]
		switch {
		case len(es) == 0:
			t.Errorf("setting %q (default %q) is not documented in %s", s.name, s.def, packagedConfig)
		case len(es) > 1:
			t.Errorf("setting %q appears %d times in %s", s.name, len(es), packagedConfig)
		case es[0].commented && es[0].value != s.def:
			t.Errorf("line %d: commented %s shows %q, but the default is %q", es[0].line, s.name, es[0].value, s.def)
		}
	}
	for name, es := range found {
		if !known[name] {
			t.Errorf("line %d: %q is not a serve setting", es[0].line, name)
		}
	}
	all := filepath.Join(t.TempDir(), "all.yaml")
	if err := os.WriteFile(all, []byte(strings.Join(uncommented, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readConfigFile(all); err != nil {
		t.Errorf("with every setting uncommented the file is refused: %v", err)
	}
}
