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
