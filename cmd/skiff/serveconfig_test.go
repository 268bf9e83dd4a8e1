package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"skiff/appliance"
)

// Precedence: environment, then flag, then file, then the default.
func TestServeSettingsPrecedence(t *testing.T) {
	file := configFileWith(t, "listen: file:1\nnum-partitions: 3\nmax-connections: 5\nauto-create-topics: false\njoin: a:1,b:2\n")
	vals, err := appliance.ReadSettingsFile(file)
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{"listen": "flag:2", "num-partitions": "4", "pprof": "true"}
	t.Setenv("SKIFF_LISTEN", "env:3")
	t.Setenv("SKIFF_GROUP_MAX_SIZE", "9")
	var cfg appliance.Config
	err = cfg.ResolveSettings(vals, func(s appliance.Setting) (string, bool) {
		v, ok := flags[s.Name]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "env:3" || cfg.DefaultPartitions != 4 || cfg.MaxConnections != 5 || !cfg.Pprof ||
		!cfg.DisableAutoCreateTopics || strings.Join(cfg.Join, " ") != "a:1 b:2" || cfg.Groups.MaxSize != 9 {
		t.Errorf("resolved %+v", cfg)
	}
	// Settings nobody gave take their defaults.
	if cfg.DataDir != "./skiff-data" || cfg.IdleTimeout != 10*time.Minute || cfg.LogLevel != "info" || cfg.DisableAutoLeaderRebalance {
		t.Errorf("defaults: data-dir %q, connections-max-idle %v, log-level %q, auto-leader-rebalance off %v",
			cfg.DataDir, cfg.IdleTimeout, cfg.LogLevel, cfg.DisableAutoLeaderRebalance)
	}
}

// Bad files, flags and variables stop `skiff serve` before it starts, naming the
// file and line, the flag or the variable.
func TestServeSettingErrors(t *testing.T) {
	for _, tc := range []struct {
		file string
		args []string
		env  map[string]string
		want string
	}{
		{file: "listen: :1\nbogus: 1\n", want: `:2: unknown key "bogus" (see ` + "`skiff serve --help`"},
		{file: "listen: :1\nlisten: :2\n", want: `:2: key "listen" is set twice`},
		{file: "max-connections: ten\n", want: `:1: key "max-connections": "ten" is not a whole number`},
		{file: "join:\n  - a:1\n", want: `:2: key "join" needs a single value`},
		{file: "- a\n", want: `:1: expected key: value lines`},
		{file: "a: [\n", want: `config file `},
		{args: []string{"--max-connections", "x", "--join-timeout", "-1s"},
			want: "flag --join-timeout: \"-1s\" is not a duration such as 30s or 10m\nflag --max-connections: \"x\" is not a whole number"},
		{env: map[string]string{"SKIFF_AUTO_CREATE_TOPICS": "maybe"}, want: `environment SKIFF_AUTO_CREATE_TOPICS: "maybe" is not true or false`},
		{args: []string{"--max-connections", "-1"}, want: "max-connections -1: must be positive"},
		{args: []string{"--log-level", "loud"}, want: `log-level "loud": use debug, info, warn or error`},
	} {
		args := append([]string{"serve"}, tc.args...)
		if tc.file != "" {
			args = append(args, "--config", configFileWith(t, tc.file))
		}
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		_, _, err := runApp(nil, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %v: %v\nwant it to contain %q", tc.file, tc.args, err, tc.want)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
	if _, _, err := runApp(nil, "serve", "--config", filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "read config file: ") {
		t.Errorf("a missing file: %v", err)
	}
}

// `skiff serve --help` shows every setting with its Kafka name, variable and
// default, each once.
func TestServeHelp(t *testing.T) {
	out, _, err := runApp(nil, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "serve --help", out, "a single-node cluster in ./skiff-data on :9092")
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "--") {
			lines[strings.TrimPrefix(f[0], "--")] = l
		}
	}
	for _, s := range new(appliance.Config).Settings() {
		l := lines[s.Name]
		want := []string{s.Doc, "(env " + appliance.EnvName(s.Name) + ")"}
		if s.Kafka != "" {
			want = append(want, s.Doc+" ("+s.Kafka+")")
		}
		if s.Default() != "" {
			want = append(want, "(default: "+s.Default()+")")
		}
		mustContain(t, "--"+s.Name, l, want...)
		if strings.Count(l, "(default: ") > 1+strings.Count(s.Doc, "(default: ") {
			t.Errorf("--%s shows more than one default: %s", s.Name, l)
		}
	}
	if l := lines["auto-create-topics"]; !strings.HasSuffix(l, "(default: true)") {
		t.Errorf("auto-create-topics: %s", l)
	}
}

func configFileWith(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "skiff.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
