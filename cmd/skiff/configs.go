package main

// Changing configs at runtime, through the Kafka admin API as any Kafka client
// would: skiff topic alter-config and delete-records (IncrementalAlterConfigs and
// DeleteRecords), skiff config alter and describe (dynamic broker configs).

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
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
func alterations(c *cli.Context) ([]kadm.AlterConfig, error) {
	set, err := c.Generic("set").(*configList).configs()
	if err != nil {
		return nil, err
	}
	var out []kadm.AlterConfig
	for k, v := range set {
		out = append(out, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: v})
	}
	for _, k := range c.Generic("delete").(*listFlag).values {
		k = strings.TrimSpace(k)
		if _, both := set[k]; both {
			return nil, fmt.Errorf("%s is given to both --set and --delete", k)
		}
		out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(out) == 0 {
		return nil, errors.New("nothing to change: give --set KEY=VALUE or --delete KEY")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
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
	name, err := topicName(c)
	if err != nil {
		return err
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
	rs, err := k.Admin().AlterTopicConfigs(ctx, changes, name)
	if err != nil {
		return fmt.Errorf("alter configs of topic %q: %w", name, k.Explain(err))
	}
	r, err := rs.On(name, nil)
	if err != nil {
		return fmt.Errorf("alter configs of topic %q: the broker's answer did not mention the topic", name)
	}
	if r.Err != nil {
		return fmt.Errorf("alter configs of topic %q: %w%s", name, r.Err, brokerSays(r.ErrMessage))
	}
	fmt.Fprintf(c.App.Writer, "altered configs of topic %s\n", name)
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
	name, err := topicName(c)
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
	var offs kadm.Offsets
	offs.AddOffset(name, int32(p), before, -1)
	rs, err := k.Admin().DeleteRecords(ctx, offs)
	if err != nil {
		return fmt.Errorf("delete records of %s/%d: %w", name, p, k.Explain(err))
	}
	r, ok := rs.Lookup(name, int32(p))
	switch {
	case !ok:
		return fmt.Errorf("delete records of %s/%d: the broker's answer did not mention the partition", name, p)
	case r.Err != nil:
		return fmt.Errorf("delete records of %s/%d before %d: %w", name, p, before, r.Err)
	}
	fmt.Fprintf(c.App.Writer, "deleted records of %s/%d; low watermark %d\n", name, p, r.LowWatermark)
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
	var brokers []int32
	switch id := c.Int("broker"); {
	case c.Bool("all") && c.IsSet("broker"):
		return errors.New("give either --broker ID or --all, not both")
	case c.Bool("all"):
	case id >= 0 && id <= 1<<31-1:
		brokers = []int32{int32(id)}
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
	what := "every broker"
	if len(brokers) > 0 {
		what = "broker " + strconv.Itoa(int(brokers[0]))
	}
	rs, err := k.Admin().AlterBrokerConfigs(ctx, changes, brokers...)
	if err != nil {
		return fmt.Errorf("alter configs of %s: %w", what, k.Explain(err))
	}
	if len(rs) != 1 {
		return fmt.Errorf("alter configs of %s: the broker answered for %d resources", what, len(rs))
	}
	if r := rs[0]; r.Err != nil {
		return fmt.Errorf("alter configs of %s: %w%s", what, r.Err, brokerSays(r.ErrMessage))
	}
	fmt.Fprintf(c.App.Writer, "altered configs of %s\n", what)
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
	name := ""
	if id := c.Int("broker"); c.IsSet("broker") {
		if id < 0 || id > 1<<31-1 {
			return fmt.Errorf("--broker %d: want a broker id, 0 or more", id)
		}
		name = strconv.Itoa(id)
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: name}}
	resp, err := req.RequestWith(ctx, k.Kafka())
	if err != nil {
		return fmt.Errorf("describe broker configs: %w", k.Explain(err))
	}
	if len(resp.Resources) != 1 {
		return fmt.Errorf("describe broker configs: the broker answered for %d resources", len(resp.Resources))
	}
	r := resp.Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return fmt.Errorf("describe broker configs: %w%s", err, brokerSays(msg))
	}
	return writeBrokerConfigs(c.App.Writer, r.Configs)
}

// writeBrokerConfigs prints a broker's configs for people:
//
//	CONFIG                     VALUE  SOURCE   DYNAMIC
//	auto.create.topics.enable  false  cluster  yes
func writeBrokerConfigs(w io.Writer, configs []kmsg.DescribeConfigsResponseResourceConfig) error {
	sort.Slice(configs, func(i, j int) bool { return configs[i].Name < configs[j].Name })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONFIG\tVALUE\tSOURCE\tDYNAMIC")
	for _, cf := range configs {
		v := "-"
		switch {
		case cf.IsSensitive:
			v = "(sensitive)"
		case cf.Value != nil && *cf.Value != "":
			v = *cf.Value
		}
		dynamic := "yes"
		if cf.ReadOnly {
			dynamic = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cf.Name, v, configSource(cf.Source), dynamic)
	}
	return tw.Flush()
}
