package appliance

import (
	goflag "flag"
	"os"
	"strings"
	"testing"

	"skiff/cluster"
)

var update = goflag.Bool("update", false, "rewrite docs/configs.md from the config tables")

const configsDocPath = "../docs/configs.md"

// docs/configs.md is what ConfigsDoc generates from the tables (go generate
// ./appliance rewrites it), and names every topic config and every setting.
func TestConfigsDoc(t *testing.T) {
	want := ConfigsDoc()
	if *update {
		if err := os.WriteFile(configsDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(configsDocPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is not current: run go generate ./appliance", configsDocPath)
	}
	for _, s := range cluster.TopicConfigSpecs() {
		if !strings.Contains(want, "| `"+s.Name+"` |") {
			t.Errorf("topic config %s is missing", s.Name)
		}
		if s.NoEffect != "" && !strings.Contains(want, "- `"+s.Name+"`: ") {
			t.Errorf("%s has no effect but is not listed so", s.Name)
		}
	}
	var c Config
	for _, s := range c.Settings() {
		if !strings.Contains(want, "| `"+s.Name+"` |") {
			t.Errorf("setting %s is missing", s.Name)
		}
	}
	if strings.Contains(want, cluster.ConfigInternalSegmentBytes) {
		t.Error("the internal config is listed")
	}
}

// docs/limits.md repeats the defaults of the settings that bound what a client
// can make a node hold: they must be the table's.
func TestLimitsDocDefaults(t *testing.T) {
	doc, err := os.ReadFile("../docs/limits.md")
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	defaults := make(map[string]string)
	for _, s := range c.Settings() {
		defaults[s.Name] = s.Default()
	}
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		def, ok := defaults[name]
		if !ok {
			t.Errorf("docs/limits.md names %q, which is no setting", name)
			continue
		}
		rows++
		// "0 (none)": the value, then what it means.
		if got, _, _ := strings.Cut(strings.TrimSpace(cells[2]), " "); got != def {
			t.Errorf("docs/limits.md: %s defaults to %s, the settings table says %s", name, got, def)
		}
	}
	if rows == 0 {
		t.Fatal("no setting rows read from docs/limits.md")
	}
}
