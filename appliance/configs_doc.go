package appliance

//go:generate go test . -run ^TestConfigsDoc$ -update

import (
	"fmt"
	"strings"

	"skiff/cluster"
)

// ConfigsDoc is docs/configs.md: every topic config (cluster's table) and every
// broker setting (this package's) with its default and meaning, and which of
// them change nothing in Skiff and why. A test keeps the file equal to it.
func ConfigsDoc() string {
	var b strings.Builder
	b.WriteString(`# Configs

<!-- Generated from cluster/configs_table.go and appliance/settings.go by
     go generate ./appliance; do not edit by hand. -->

Skiff takes every topic config of Kafka 4.x, with Kafka's types, bounds and error messages
(a bad value or an unknown name is INVALID_CONFIG, "Invalid value ... for configuration ...:
reason" or "Unknown topic config name: ..."), plus its own ` + "`flush.policy`" + `. Set them when a
topic is created (` + "`skiff topic create --config K=V`" + `, CreateTopics) and change them while it
serves (` + "`skiff topic alter-config`" + `, IncrementalAlterConfigs, AlterConfigs): a change is kept in
etcd and every broker applies it without a restart.

A topic config's value is, in this order: the topic's own (source ` + "`topic`" + `), the value set at
runtime for the broker (` + "`skiff config alter --broker ID`" + `) or for every broker
(` + "`--all`" + `) under the broker name of the config, the broker's setting, the default below.
` + "`skiff topic describe`" + ` and DescribeConfigs show the value in effect and where it comes from.

## Topic configs

| config | type | default | valid values | broker config | meaning |
|---|---|---|---|---|---|
`)
	var none []cluster.ConfigSpec
	for _, s := range cluster.TopicConfigSpecs() {
		def := s.Default
		if s.Name == cluster.ConfigFlushPolicy {
			def = "always (1 replica), replicated (more)"
		}
		broker := s.BrokerName
		if broker == "" {
			broker = "-"
		}
		doc := s.Doc
		if s.NoEffect != "" {
			doc = "No effect in Skiff (below). " + doc
			none = append(none, s)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", s.Name, s.Type, code(def), cell(s.Valid()), code(broker), cell(doc))
	}
	b.WriteString(`
## Accepted, without effect

These are taken and shown, so that tools which set them work, but change nothing in Skiff:

`)
	for _, s := range none {
		fmt.Fprintf(&b, "- `%s`: %s.\n", s.Name, s.NoEffect)
	}
	b.WriteString(`
## Broker settings

The settings of ` + "`skiff serve`" + ` (flag, YAML key, ` + "`SKIFF_*`" + ` variable; ` + "`skiff serve --help`" + `). Those
with a Kafka name are listed by DescribeConfigs under it (` + "`skiff config describe`" + `); the dynamic
ones can also be changed at runtime under that name, for one broker or for all, kept in etcd and
applied without a restart (` + "`skiff config alter`" + `; the value set for a broker wins over the one
set for all, which wins over the setting). The broker configs of the topic configs above
(` + "`log.retention.ms`" + `, ...) are dynamic too.

| setting | Kafka name | default | dynamic | meaning |
|---|---|---|---|---|
`)
	var c Config
	for _, s := range c.Settings() {
		kafka := "-"
		if s.Kafka != "" {
			kafka = "`" + s.Kafka + "`"
		}
		dynamic := "no"
		if s.Dynamic {
			dynamic = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", s.Name, kafka, code(s.Default()), dynamic, cell(s.Doc))
	}
	return b.String()
}

// code writes a value as code, "-" when empty.
func code(v string) string {
	if v == "" {
		return "-"
	}
	return "`" + cell(v) + "`"
}

// cell escapes text for a Markdown table cell.
func cell(v string) string { return strings.ReplaceAll(v, "|", `\|`) }
