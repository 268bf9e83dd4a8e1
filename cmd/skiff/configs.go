package main

// The wiring of skiff topic alter-config and delete-records and skiff config
// alter and describe; their operations are client's (client/configs.go).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"skiff/client"
)

// alterFlags are --set KEY=VALUE and --delete KEY, each repeatable.
func alterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.GenericFlag{Name: "set", Value: &configList{flag: "--set"}, Usage: "set config `KEY=VALUE` (repeat for several)"},
		&cli.GenericFlag{Name: "delete", Value: &listFlag{check: configName}, Usage: "delete config `KEY`, back to its default (repeat for several)"},
	}
}

// configName refuses an empty config name.
func configName(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("want a config name")
	}
	return nil
}

// alterations reads --set and --delete; a key in both, or in neither flag, is an
// error.
func alterations(c *cli.Context) (client.ConfigChanges, error) {
	set, err := c.Generic("set").(*configList).configs()
	if err != nil {
		return client.ConfigChanges{}, err
	}
	return client.NewConfigChanges(set, c.Generic("delete").(*listFlag).values)
}

func topicAlterConfigCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "alter-config",
		Usage:     "change a topic's configs while it serves",
		ArgsUsage: "NAME",
		Description: "Sets (--set KEY=VALUE) and deletes (--delete KEY: back to the broker's or the\n" +
			"built-in default) configs of topic NAME, all at once or none (IncrementalAlterConfigs).\n" +
			"The brokers apply them without a restart. docs/configs.md lists every topic config.",
		HideHelpCommand: true,
		Flags:           append(clientFlags(), alterFlags()...),
		Action:          runTopicAlterConfig,
	})
}

func runTopicAlterConfig(c *cli.Context) error {
	name, err := nameArg(c, "topic")
	if err != nil {
		return err
	}
	return alterConfigsOf(c, "topic", name, (*client.Client).AlterTopicConfigs)
}

// alterConfigsOf applies the --set and --delete changes to the configs of kind
// name with alter.
func alterConfigsOf(c *cli.Context, kind, name string, alter func(*client.Client, context.Context, string, client.ConfigChanges) error) error {
	changes, err := alterations(c)
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	if err := alter(k, ctx, name, changes); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "altered configs of %s %s\n", kind, name)
	return nil
}

func topicDeleteRecordsCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "delete-records",
		Usage:     "delete a partition's records before an offset",
		ArgsUsage: "NAME",
		Description: "Moves the log start offset of partition --partition of topic NAME to --before\n" +
			"(DeleteRecords): the records before it can no longer be read, and their segments\n" +
			"are deleted at the next retention check. --before -1 deletes everything up to the\n" +
			"high watermark. Prints the partition's new low watermark (its earliest offset on\n" +
			"every in-sync replica).",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.IntFlag{Name: "partition", Value: -2, Usage: "the `P`artition (required)"},
			&cli.Int64Flag{Name: "before", Value: -2, Usage: "delete the records before `OFFSET` (-1: the high watermark; required)"},
		),
		Action: runTopicDeleteRecords,
	})
}

func runTopicDeleteRecords(c *cli.Context) error {
	name, err := nameArg(c, "topic")
	if err != nil {
		return err
	}
	p, before := c.Int("partition"), c.Int64("before")
	if p < 0 || p > 1<<31-1 {
		return errors.New("give the partition: --partition P (0 or more)")
	}
	if before < -1 {
		return errors.New("give the offset: --before OFFSET (0 or more, or -1 for the high watermark)")
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	low, err := k.DeleteRecords(ctx, name, int32(p), before)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "deleted records of %s/%d; low watermark %d\n", name, p, low)
	return nil
}

func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "describe and change broker configs while the cluster runs",
		Subcommands: []*cli.Command{
			configAlterCommand(),
			configDescribeCommand(),
		},
	}
}

func configAlterCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:  "alter",
		Usage: "change dynamic broker configs of one broker or of all",
		Description: "Sets (--set KEY=VALUE, Kafka's names and units: milliseconds for .ms) and\n" +
			"deletes (--delete KEY) dynamic broker configs of broker --broker ID, or of every\n" +
			"broker with --all (a broker's own value wins). They are kept in the cluster\n" +
			"metadata and applied without a restart. skiff config describe lists which\n" +
			"configs are dynamic; the broker defaults of topic configs (log.retention.ms, ...)\n" +
			"all are.",
		HideHelpCommand: true,
		Flags: append(append(clientFlags(), alterFlags()...),
			&cli.IntFlag{Name: "broker", Value: -1, Usage: "change the configs of broker `ID`"},
			&cli.BoolFlag{Name: "all", Usage: "change the configs of every broker (the cluster-wide default)"},
		),
		Action: runConfigAlter,
	})
}

func runConfigAlter(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": config alter takes no arguments"); err != nil {
		return err
	}
	id := client.AllBrokers
	switch b := c.Int("broker"); {
	case c.Bool("all") && c.IsSet("broker"):
		return errors.New("give either --broker ID or --all, not both")
	case c.Bool("all"):
	case b >= 0 && b <= 1<<31-1:
		id = int32(b)
	default:
		return errors.New("give the broker: --broker ID, or --all for every broker")
	}
	changes, err := alterations(c)
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	if err := k.AlterBrokerConfigs(ctx, id, changes); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "altered configs of %s\n", client.BrokerName(id))
	return nil
}

func configDescribeCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:  "describe",
		Usage: "show a broker's configs: value, source and whether it is dynamic",
		Description: "Prints every config of broker --broker ID (default: the broker the client\n" +
			"reaches first) with its value, where the value comes from (broker: set for this\n" +
			"broker at runtime; cluster: set for every broker at runtime; broker config file;\n" +
			"default) and whether skiff config alter can change it.",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.IntFlag{Name: "broker", Value: -1, Usage: "describe broker `ID`"},
		),
		Action: runConfigDescribe,
	})
}

func runConfigDescribe(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": config describe takes no arguments"); err != nil {
		return err
	}
	id := client.AllBrokers
	if b := c.Int("broker"); c.IsSet("broker") {
		if b < 0 || b > 1<<31-1 {
			return fmt.Errorf("--broker %d: want a broker id, 0 or more", b)
		}
		id = int32(b)
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	configs, err := k.DescribeBrokerConfigs(ctx, id)
	if err != nil {
		return err
	}
	return client.WriteBrokerConfigs(c.App.Writer, configs)
}
