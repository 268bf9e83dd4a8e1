package main

// skiff topic create|list|describe|delete: the flags; the operations are
// client's (client/topicadmin.go).

import (
	"fmt"
	"math"
	"strings"

	"github.com/urfave/cli/v2"

	"skiff/client"
)

func topicCommand() *cli.Command {
	return &cli.Command{
		Name:  "topic",
		Usage: "create, list, describe, alter and delete topics, and delete records",
		Subcommands: []*cli.Command{
			topicCreateCommand(),
			topicListCommand(),
			topicDescribeCommand(),
			topicDeleteCommand(),
			topicAlterConfigCommand(),
			topicDeleteRecordsCommand(),
			topicElectLeadersCommand(),
			topicReassignCommand(),
		},
	}
}

func topicCreateCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "create",
		Usage:     "create a topic",
		ArgsUsage: "NAME",
		Description: "Creates topic NAME. Partitions and replication factor default to the broker's\n" +
			"(num.partitions, default.replication.factor). Prints \"created topic NAME\".\n" +
			"Fails if the topic exists, unless --if-not-exists is given.",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.IntFlag{Name: "partitions", Aliases: []string{"p"}, Value: -1, Usage: "`N` partitions (-1: the broker's default)"},
			&cli.IntFlag{Name: "replication-factor", Aliases: []string{"r"}, Value: -1, Usage: "`N` replicas of each partition (-1: the broker's default)"},
			&cli.GenericFlag{Name: "config", Value: &configList{}, Usage: "topic config `KEY=VALUE` (repeat for several)"},
			&cli.BoolFlag{Name: "if-not-exists", Usage: "succeed without change if the topic already exists"},
		),
		Action: runTopicCreate,
	})
}

func topicListCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:            "list",
		Aliases:         []string{"ls"},
		Usage:           "list topic names, one per line, sorted",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "internal", Usage: "include internal topics such as __consumer_offsets"},
		),
		Action: runTopicList,
	})
}

func topicDescribeCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "describe",
		Usage:     "show a topic's partitions (leader, replicas, ISR) and configs",
		ArgsUsage: "NAME",
		Description: "Prints the topic's id, partition count and replication factor, a table of\n" +
			"partitions (leader, leader epoch, replicas, in-sync replicas, offline replicas),\n" +
			"and every config with its value and source (topic, broker, default, ...).\n" +
			"--sizes adds each replica's bytes on disk, offset lag and directory, as its\n" +
			"node reports them (DescribeLogDirs).",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "sizes", Usage: "also show each replica's size on disk"},
		),
		Action: runTopicDescribe,
	})
}

func topicDeleteCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:            "delete",
		Usage:           "delete a topic and all its records",
		ArgsUsage:       "NAME",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "if-exists", Usage: "succeed without change if the topic does not exist"},
		),
		Action: runTopicDelete,
	})
}

func runTopicCreate(c *cli.Context) error {
	name, err := nameArg(c, "topic")
	if err != nil {
		return err
	}
	partitions, rf := c.Int("partitions"), c.Int("replication-factor")
	if partitions == 0 || partitions < -1 || partitions > math.MaxInt32 {
		return fmt.Errorf("--partitions must be at least 1 (or -1 for the broker's default), not %d", partitions)
	}
	if rf == 0 || rf < -1 || rf > math.MaxInt16 {
		return fmt.Errorf("--replication-factor must be at least 1 (or -1 for the broker's default), not %d", rf)
	}
	configs, err := c.Generic("config").(*configList).configs()
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	created, err := k.CreateTopic(ctx, client.TopicSpec{Name: name, Partitions: int32(partitions), Replicas: int16(rf),
		Configs: configs, IfNotExists: c.Bool("if-not-exists")})
	if created {
		fmt.Fprintf(c.App.Writer, "created topic %s\n", name)
	}
	return err
}

func runTopicList(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": topic list takes no arguments"); err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	return k.ListTopics(ctx, c.App.Writer, c.Bool("internal"))
}

func runTopicDescribe(c *cli.Context) error {
	name, err := nameArg(c, "topic")
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	return k.DescribeTopic(ctx, c.App.Writer, name, c.Bool("sizes"))
}

func runTopicDelete(c *cli.Context) error {
	name, err := nameArg(c, "topic")
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	deleted, err := k.DeleteTopic(ctx, name, c.Bool("if-exists"))
	if deleted {
		fmt.Fprintf(c.App.Writer, "deleted topic %s\n", name)
	}
	return err
}

// listFlag collects the values of a flag given several times (a GenericFlag's
// value); check, when set, refuses a bad value at once. The flag has no alias:
// urfave/cli would copy the list to the alias through String and Set, adding its
// entries a second time.
type listFlag struct {
	values []string
	check  func(string) error
}

func (l *listFlag) Set(s string) error {
	if l.check != nil {
		if err := l.check(s); err != nil {
			return err
		}
	}
	l.values = append(l.values, s)
	return nil
}

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.values, " ")
}

func (l *listFlag) reset() { l.values = nil }

// configList collects repeated --config (or, named by flag, --set) KEY=VALUE
// flags. Values may contain commas and '=' (cleanup.policy=compact,delete): only
// the first '=' splits.
type configList struct {
	listFlag
	flag string // the flag's name for messages; "" is --config
}

func (l *configList) flagName() string {
	if l.flag == "" {
		return "--config"
	}
	return l.flag
}

func (l *configList) Set(s string) error {
	if _, _, err := splitConfig(l.flagName(), s); err != nil {
		return err
	}
	return l.listFlag.Set(s)
}

// configs returns the collected configs; a key given twice is an error.
func (l *configList) configs() (map[string]*string, error) {
	if len(l.values) == 0 {
		return nil, nil
	}
	m := make(map[string]*string, len(l.values))
	for _, kv := range l.values {
		k, v, err := splitConfig(l.flagName(), kv)
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("%s %s given twice", l.flagName(), k)
		}
		m[k] = &v
	}
	return m, nil
}

func splitConfig(flag, s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", fmt.Errorf("invalid %s %q: want KEY=VALUE, e.g. %s retention.ms=86400000", flag, s, flag)
	}
	return k, v, nil
}
