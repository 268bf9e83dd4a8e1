package appliance

// Where the settings of `skiff serve` come from besides the defaults of the table:
// a YAML file, flags and SKIFF_* environment variables. Each setting is a flag,
// a YAML key of the same name, and a SKIFF_<NAME> variable (EnvName).
// Precedence: environment, then flag, then file, then the default (the
// environment wins so that a systemd drop-in or a container can override what a
// unit's command line or /etc/skiff/skiff.yaml says). The packaged skiff.yaml is
// generated from the same table (cmd/skiff, go generate).

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EnvName is the environment variable of the setting called name:
// SKIFF_<NAME> with dashes as underscores.
func EnvName(name string) string {
	return "SKIFF_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ReadSettingsFile reads a YAML file of settings, by name. Unknown keys and bad
// values are refused with the file, line and key named.
func ReadSettingsFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	out := map[string]string{}
	if len(doc.Content) == 0 { // empty file
		return out, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config file %s:%d: expected key: value lines", path, root.Line)
	}
	known := map[string]Setting{}
	for _, s := range new(Config).Settings() {
		known[s.Name] = s
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		s, ok := known[k.Value]
		if !ok {
			return nil, fmt.Errorf("config file %s:%d: unknown key %q (see `skiff serve --help` for the settings)", path, k.Line, k.Value)
		}
		if v.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("config file %s:%d: key %q needs a single value", path, v.Line, k.Value)
		}
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("config file %s:%d: key %q is set twice", path, k.Line, k.Value)
		}
		if err := s.Check(v.Value); err != nil {
			return nil, fmt.Errorf("config file %s:%d: key %q: %v", path, v.Line, k.Value, err)
		}
		out[k.Value] = v.Value
	}
	return out, nil
}

// ResolveSettings sets c's settings from their defaults, the file's values
// (ReadSettingsFile), the flags that were set (flagSet reports a flag's text and
// whether it was given), and the environment, each overriding the one before.
// Every bad value is reported.
func (c *Config) ResolveSettings(file map[string]string, flagSet func(Setting) (string, bool)) error {
	var errs []error
	for _, s := range c.Settings() {
		if err := s.Set(s.Default()); err != nil {
			errs = append(errs, fmt.Errorf("default of %s: %v", s.Name, err))
		}
		if v, ok := file[s.Name]; ok {
			if err := s.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("config file key %q: %v", s.Name, err))
			}
		}
		if v, ok := flagSet(s); ok {
			if err := s.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("flag --%s: %v", s.Name, err))
			}
		}
		if v, ok := os.LookupEnv(EnvName(s.Name)); ok {
			if err := s.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("environment %s: %v", EnvName(s.Name), err))
			}
		}
	}
	return errors.Join(errs...)
}
