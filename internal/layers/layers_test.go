package layers

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "skiff/"

// listedPackages reads the package list of docs/ARCHITECTURE.md, top first.
func listedPackages(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	section, block := false, false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = strings.HasPrefix(line, "## Packages")
		case section && strings.HasPrefix(line, "```"):
			if block {
				return out
			}
			block = true
		case section && block && line != "" && line[0] != ' ':
			out = append(out, strings.Fields(line)[0])
		}
	}
	t.Fatal("docs/ARCHITECTURE.md: no package list under ## Packages")
	return nil
}

// imports lists every package of the module with the module's packages its
// non-test files import.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		var own []string
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				own = append(own, strings.TrimPrefix(imp, module))
			}
		}
		out[strings.TrimPrefix(f[0], module)] = own
	}
	return out
}

func TestImportsGoDown(t *testing.T) {
	order := listedPackages(t)
	if len(order) < 20 || order[0] != "cmd/skiff" {
		t.Fatalf("package list of docs/ARCHITECTURE.md: %v", order)
	}
	rank := func(pkg string) int { return slices.Index(order, pkg) }
	all := imports(t)
	checked := 0
	for pkg, imps := range all {
		internal := strings.HasPrefix(pkg, "internal/")
		if rank(pkg) < 0 && !internal {
			continue // e2e tests and scripts: not part of the layering
		}
		for _, imp := range imps {
			switch {
			case internal && rank(imp) >= 0:
				t.Errorf("%s imports %s: internal helpers import none of the listed packages", pkg, imp)
			case !internal && rank(imp) >= 0 && rank(imp) <= rank(pkg):
				t.Errorf("%s imports %s, which is not below it in docs/ARCHITECTURE.md", pkg, imp)
			case rank(imp) < 0 && !strings.HasPrefix(imp, "internal/"):
				t.Errorf("%s imports %s, which docs/ARCHITECTURE.md does not list", pkg, imp)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d imports; go list found %d packages", checked, len(all))
	}
	for _, pkg := range order {
		if _, ok := all[pkg]; !ok {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which is not a package", pkg)
		}
	}

	// The rules docs/ARCHITECTURE.md states for single packages.
	if slices.Contains(all["cluster"], "embedetcd") {
		t.Error("cluster imports embedetcd: it takes an etcd client")
	}
	for _, imp := range all["client"] {
		if !slices.Contains([]string{"acl", "auth", "cluster", "internal/recordfmt", "internal/offsetsnap"}, imp) {
			t.Errorf("client imports %s", imp)
		}
	}
	if len(all["systemd"]) != 0 {
		t.Errorf("systemd imports %v: it has no internal imports", all["systemd"])
	}
	if slices.Contains(all["kafkaapi"], "bench") {
		t.Error("kafkaapi imports bench: it knows nothing of benchmarks")
	}
	if slices.Contains(all["logstore"], "offsets") {
		t.Error("logstore imports offsets: it defines the index interface it needs")
	}
}
