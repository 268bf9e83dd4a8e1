package main

// skiff group list|describe|delete|reset-offsets|alter-config|describe-config:
// consumer group administration through the Kafka admin API (kadm), as
// kafka-consumer-groups.sh and kafka-configs.sh --entity-type groups do it.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"skiff/client"
)

func groupCommand() *cli.Command {
	return &cli.Command{
		Name:  "group",
		Usage: "list, describe and delete consumer groups; reset their offsets",
		Subcommands: []*cli.Command{
			groupListCommand(),
			groupDescribeCommand(),
			groupDeleteCommand(),
			groupResetOffsetsCommand(),
			groupAlterConfigCommand(),
			groupDescribeConfigCommand(),
		},
	}
}

func groupListCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:            "list",
		Aliases:         []string{"ls"},
		Usage:           "list consumer groups, one per line, sorted",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "state", Usage: "print a table: each group's state, protocol type and member count"},
		),
		Action: runGroupList,
	})
}

func groupDescribeCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "describe",
		Usage:     "show a group's members, assignments, committed offsets and lag",
		ArgsUsage: "GROUP",
		Description: "Prints the group's state, protocol and coordinator, a table of members\n" +
			"(client id, host, assigned partitions), and a table of partitions with the\n" +
			"committed offset, the log end offset, the lag and the member consuming it.\n" +
			"A KIP-848 consumer group also shows its group and assignment epochs, its\n" +
			"assignor, and each member's epoch, assigned and target partitions.\n" +
			"A share group (KIP-932) shows its state, epoch, members with their assigned\n" +
			"partitions (shared by every member), and each share-partition's start\n" +
			"offset (SPSO: every record below it is done) and lag. With --http (a node's\n" +
			"HTTP address, as skiff cluster takes it) it also shows each share-partition's\n" +
			"end offset (SPEO), in-flight and acquired records and leader: figures only\n" +
			"the leaders hold, which no Kafka API carries, gathered by that node from\n" +
			"every node's admin API (GET /v1/share-partitions).",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "http", EnvVars: []string{"SKIFF_HTTP"},
				Usage: "for a share group, ask the node at `HOST:PORT` (its HTTP port; https://HOST:PORT with http-tls) for in-flight and acquired records"},
			&cli.StringFlag{Name: "http-token-file", EnvVars: []string{"SKIFF_HTTP_TOKEN_FILE"},
				Usage: "with --http: send the bearer token on the first line of `FILE` (default: SKIFF_HTTP_TOKEN)"},
		),
		Action: runGroupDescribe,
	})
}

func groupDeleteCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:            "delete",
		Usage:           "delete a group without members, with its committed offsets",
		ArgsUsage:       "GROUP",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "if-exists", Usage: "succeed without change if the group does not exist"},
		),
		Action: runGroupDelete,
	})
}

func groupResetOffsetsCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "reset-offsets",
		Usage:     "set a group's committed offsets of a topic (a share group's start offsets)",
		ArgsUsage: "GROUP",
		Description: "Commits new offsets for every partition of --topic in GROUP, which must have\n" +
			"no active members (stop its consumers first). Give exactly one of --to-earliest,\n" +
			"--to-latest, --to-offset N (clamped to each partition's log) or --to-datetime\n" +
			"RFC3339 (the first record at or after that time; the log end if there is none).\n" +
			"Prints each partition's old and new offset; --dry-run commits nothing.\n" +
			"For a share group, the offsets are its share-partitions' start offsets\n" +
			"(AlterShareGroupOffsets): the next member gets the records from there.",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "`TOPIC` whose offsets to reset (required)"},
			&cli.BoolFlag{Name: "to-earliest", Usage: "reset to the log start of each partition"},
			&cli.BoolFlag{Name: "to-latest", Usage: "reset to the log end of each partition"},
			&cli.Int64Flag{Name: "to-offset", Usage: "reset to offset `N` of each partition"},
			&cli.StringFlag{Name: "to-datetime", Usage: "reset to the first record at or after `TIME` (RFC 3339, e.g. 2024-05-01T12:00:00Z)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would change and commit nothing"},
		),
		Action: runGroupResetOffsets,
	})
}

// groupName returns the one GROUP argument of a group subcommand.
func groupName(c *cli.Context) (string, error) {
	switch c.Args().Len() {
	case 0:
		return "", fmt.Errorf("missing group name: usage: skiff group %s GROUP", c.Command.Name)
	case 1:
		name := c.Args().First()
		if name == "" {
			return "", errors.New("group name must not be empty")
		}
		return name, nil
	default:
		return "", fmt.Errorf("unexpected argument %q: give one group name", c.Args().Get(1))
	}
}

func runGroupList(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": group list takes no arguments"); err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	return k.ListGroups(ctx, c.App.Writer, c.Bool("state"))
}

func runGroupDescribe(c *cli.Context) error {
	group, err := groupName(c)
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	if d, ok, err := k.DescribeShareGroup(ctx, group); err != nil {
		return err
	} else if ok {
		if c.String("http") != "" {
			if err := addInFlight(c, &d); err != nil {
				return err
			}
		}
		return client.WriteShareGroupDescription(c.App.Writer, d)
	}
	l, err := k.DescribeGroup(ctx, group)
	if errors.Is(err, client.ErrConsumerGroup) {
		d, err := k.DescribeConsumerGroup(ctx, group)
		if err != nil {
			return err
		}
		return client.WriteConsumerGroupDescription(c.App.Writer, d)
	}
	if err != nil {
		return err
	}
	return client.WriteGroupDescription(c.App.Writer, l)
}

func runGroupDelete(c *cli.Context) error {
	group, err := groupName(c)
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	deleted, err := k.DeleteGroup(ctx, group, c.Bool("if-exists"))
	if err != nil || !deleted {
		return err
	}
	fmt.Fprintf(c.App.Writer, "deleted group %s\n", group)
	return nil
}

func runGroupResetOffsets(c *cli.Context) error {
	group, err := groupName(c)
	if err != nil {
		return err
	}
	topic := c.String("topic")
	if topic == "" {
		return errors.New("missing --topic (-t): name the topic whose offsets to reset")
	}
	var modes []string
	for _, f := range []string{"to-earliest", "to-latest", "to-offset", "to-datetime"} {
		if c.IsSet(f) {
			modes = append(modes, "--"+f)
		}
	}
	if len(modes) != 1 {
		return fmt.Errorf("give exactly one of --to-earliest, --to-latest, --to-offset N, --to-datetime TIME (got %d: %s)", len(modes), strings.Join(modes, " "))
	}
	o := client.ResetOptions{Group: group, Topic: topic, DryRun: c.Bool("dry-run"), Out: c.App.Writer}
	switch {
	case c.Bool("to-earliest"):
		o.To = client.ResetToEarliest
	case c.Bool("to-latest"):
		o.To = client.ResetToLatest
	case c.IsSet("to-offset"):
		o.To, o.Offset = client.ResetToOffset, c.Int64("to-offset")
		if o.Offset < 0 {
			return fmt.Errorf("--to-offset must be at least 0, not %d", o.Offset)
		}
	case c.IsSet("to-datetime"):
		o.To = client.ResetToTime
		if o.Time, err = time.Parse(time.RFC3339, c.String("to-datetime")); err != nil {
			return fmt.Errorf("invalid --to-datetime %q: want RFC 3339, e.g. 2024-05-01T12:00:00Z", c.String("to-datetime"))
		}
	default: // --to-earliest=false or --to-latest=false
		o.To = client.ResetToLatest
	}
	k, err := clientFromFlags(c)
	if err != nil {
		return err
	}
	defer k.Close()
	n, err := k.ResetOffsets(c.Context, o)
	if err != nil {
		return err
	}
	if o.DryRun {
		fmt.Fprintln(c.App.Writer, "dry run: nothing committed")
		return nil
	}
	fmt.Fprintf(c.App.Writer, "reset %s of %s for group %s\n", countOf(n, "partition"), topic, group)
	return nil
}

func groupAlterConfigCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "alter-config",
		Usage:     "change a group's configs (share.*, consumer.*)",
		ArgsUsage: "GROUP",
		Description: "Sets (--set KEY=VALUE) and deletes (--delete KEY: back to the broker's\n" +
			"default) configs of GROUP, all at once or none (IncrementalAlterConfigs on the\n" +
			"GROUP resource, as kafka-configs.sh --entity-type groups). A share group takes\n" +
			"share.auto.offset.reset, share.record.lock.duration.ms, share.delivery.count.limit,\n" +
			"share.session.timeout.ms, share.heartbeat.interval.ms and\n" +
			"errors.deadletterqueue.topic.name; a KIP-848 consumer group\n" +
			"consumer.session.timeout.ms and consumer.heartbeat.interval.ms\n" +
			"(docs/share-groups.md). A value the broker refuses exits 1 with its message.",
		HideHelpCommand: true,
		Flags:           append(clientFlags(), alterFlags()...),
		Action:          runGroupAlterConfig,
	})
}

func groupDescribeConfigCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "describe-config",
		Usage:     "show a group's configs: value and source (group or default)",
		ArgsUsage: "GROUP",
		Description: "Prints every config of GROUP (DescribeConfigs on the GROUP resource): the\n" +
			"group's own value (source group) or the broker's default (source default).",
		HideHelpCommand: true,
		Flags:           clientFlags(),
		Action:          runGroupDescribeConfig,
	})
}

func runGroupAlterConfig(c *cli.Context) error {
	group, err := groupName(c)
	if err != nil {
		return err
	}
	return alterConfigsOf(c, "group", group, (*client.Client).AlterGroupConfigs)
}

func runGroupDescribeConfig(c *cli.Context) error {
	group, err := groupName(c)
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	configs, err := k.DescribeGroupConfigs(ctx, group)
	if err != nil {
		return err
	}
	return client.WriteGroupConfigs(c.App.Writer, configs)
}

// addInFlight asks the node of --http for the share-partitions' in-flight
// figures of d's group.
func addInFlight(c *cli.Context, d *client.ShareGroupDescription) error {
	a, err := adminClientFrom(c)
	if err != nil {
		return err
	}
	ans, err := a.SharePartitions(c.Context, d.Group.GroupID)
	if err != nil {
		return err
	}
	stats := make([]client.SharePartitionStats, len(ans.Partitions))
	for i, p := range ans.Partitions {
		stats[i] = client.SharePartitionStats{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader,
			StartOffset: p.StartOffset, EndOffset: p.EndOffset, Lag: p.Lag, InFlight: p.InFlight, Acquired: p.Acquired}
	}
	d.AddInFlight(stats, ans.Errors)
	return nil
}
