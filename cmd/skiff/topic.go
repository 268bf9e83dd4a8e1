package main

// skiff topic create|list|describe|delete: topic administration through the
// Kafka admin API (kadm), as any Kafka client would do it.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
			"and every config with its value and source (topic, broker, default, ...).",
		HideHelpCommand: true,
		Flags:           clientFlags(),
		Action:          runTopicDescribe,
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

// topicName returns the one NAME argument of a topic subcommand.
func topicName(c *cli.Context) (string, error) {
	switch c.Args().Len() {
	case 0:
		return "", fmt.Errorf("missing topic name: usage: skiff topic %s NAME", c.Command.Name)
	case 1:
		name := c.Args().First()
		if name == "" {
			return "", errors.New("topic name must not be empty")
		}
		return name, nil
	default:
		return "", fmt.Errorf("unexpected argument %q: give one topic name", c.Args().Get(1))
	}
}

func runTopicCreate(c *cli.Context) error {
	name, err := topicName(c)
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
	rs, err := k.Admin().CreateTopics(ctx, int32(partitions), int16(rf), configs, name)
	if err != nil {
		return fmt.Errorf("create topic %q: %w", name, k.Explain(err))
	}
	r, ok := rs[name]
	if !ok {
		return fmt.Errorf("create topic %q: the broker's answer did not mention the topic", name)
	}
	switch {
	case errors.Is(r.Err, kerr.TopicAlreadyExists):
		if c.Bool("if-not-exists") {
			return nil
		}
		return fmt.Errorf("topic %q already exists (use --if-not-exists to accept that)", name)
	case r.Err != nil:
		return fmt.Errorf("create topic %q: %w%s", name, r.Err, client.BrokerSays(r.ErrMessage))
	}
	fmt.Fprintf(c.App.Writer, "created topic %s\n", name)
	return nil
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
	tds, err := k.Admin().ListTopicsWithInternal(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", k.Explain(err))
	}
	var b strings.Builder
	for _, name := range tds.Names() {
		if tds[name].IsInternal && !c.Bool("internal") {
			continue
		}
		b.WriteString(name)
		b.WriteByte('\n')
	}
	_, err = io.WriteString(c.App.Writer, b.String())
	return err
}

func runTopicDescribe(c *cli.Context) error {
	name, err := topicName(c)
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	tds, err := k.Admin().ListTopics(ctx, name)
	if err != nil {
		return fmt.Errorf("describe topic %q: %w", name, k.Explain(err))
	}
	td, ok := tds[name]
	if !ok {
		return fmt.Errorf("describe topic %q: the broker's answer did not mention the topic", name)
	}
	if td.Err != nil {
		return client.TopicError(name, td.Err)
	}
	rcs, err := k.Admin().DescribeTopicConfigs(ctx, name)
	if err != nil {
		return fmt.Errorf("describe configs of topic %q: %w", name, k.Explain(err))
	}
	rc, err := rcs.On(name, nil)
	if err != nil {
		return fmt.Errorf("describe configs of topic %q: the broker's answer did not mention the topic", name)
	}
	if rc.Err != nil {
		return fmt.Errorf("describe configs of topic %q: %w%s", name, rc.Err, client.BrokerSays(rc.ErrMessage))
	}
	return writeTopicDescription(c.App.Writer, td, rc.Configs, partitionOffsets(ctx, k.Admin(), td))
}

// offsetsOf is a partition's high watermark (from ListOffsets) and its leader's log
// end offset (from OffsetForLeaderEpoch at the current leader epoch, whose end is the
// log end); -1 where the broker did not say.
type offsetsOf struct{ hw, leo int64 }

// partitionOffsets asks the leaders for every partition's high watermark and log end.
// Failures leave -1: the description is still useful without them.
func partitionOffsets(ctx context.Context, adm *kadm.Client, td kadm.TopicDetail) map[int32]offsetsOf {
	out := make(map[int32]offsetsOf, len(td.Partitions))
	var req kadm.OffsetForLeaderEpochRequest
	for _, p := range td.Partitions {
		out[p.Partition] = offsetsOf{-1, -1}
		if p.Leader >= 0 {
			req.Add(td.Topic, p.Partition, p.LeaderEpoch)
		}
	}
	if ends, err := adm.ListEndOffsets(ctx, td.Topic); err == nil {
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				v := out[o.Partition]
				v.hw = o.Offset
				out[o.Partition] = v
			}
		})
	}
	if eps, err := adm.OffsetForLeaderEpoch(ctx, req); err == nil {
		for _, e := range eps[td.Topic] {
			if e.Err == nil && e.EndOffset >= 0 {
				v := out[e.Partition]
				v.leo = e.EndOffset
				out[e.Partition] = v
			}
		}
	}
	return out
}

// writeTopicDescription prints a topic for people:
//
//	topic:              orders
//	id:                 3q2+7w...
//	partitions:         3
//	replication factor: 3
//
//	PARTITION  LEADER  EPOCH  REPLICAS  ISR    OFFLINE  HIGH WATERMARK  LOG END
//	0          1       4      1,2,3     1,2,3  -        1200            1203
//
//	CONFIG          VALUE   SOURCE
//	cleanup.policy  delete  default
func writeTopicDescription(w io.Writer, td kadm.TopicDetail, configs []kadm.Config, offs map[int32]offsetsOf) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "topic:\t%s\n", td.Topic)
	if td.ID != (kadm.TopicID{}) {
		// Kafka's form of a topic id: URL-safe base64 without padding.
		fmt.Fprintf(tw, "id:\t%s\n", base64.RawURLEncoding.EncodeToString(td.ID[:]))
	}
	fmt.Fprintf(tw, "partitions:\t%d\n", len(td.Partitions))
	fmt.Fprintf(tw, "replication factor:\t%d\n", replicationFactor(td.Partitions))
	if td.IsInternal {
		fmt.Fprintf(tw, "internal:\ttrue\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	parts := td.Partitions.Sorted()
	anyErr := false
	for _, p := range parts {
		anyErr = anyErr || p.Err != nil
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\nPARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tOFFLINE\tHIGH WATERMARK\tLOG END")
	if anyErr {
		fmt.Fprint(tw, "\tERROR")
	}
	fmt.Fprintln(tw)
	for _, p := range parts {
		leader := "none"
		if p.Leader >= 0 {
			leader = strconv.Itoa(int(p.Leader))
		}
		hw, leo := "-", "-"
		if o, ok := offs[p.Partition]; ok {
			if o.hw >= 0 {
				hw = strconv.FormatInt(o.hw, 10)
			}
			if o.leo >= 0 {
				leo = strconv.FormatInt(o.leo, 10)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s", p.Partition, leader, p.LeaderEpoch,
			joinIDs(p.Replicas), joinIDs(p.ISR), joinIDs(p.OfflineReplicas), hw, leo)
		if anyErr {
			e := "-"
			if p.Err != nil {
				e = p.Err.Error()
			}
			fmt.Fprintf(tw, "\t%s", e)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	sort.Slice(configs, func(i, j int) bool { return configs[i].Key < configs[j].Key })
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCONFIG\tVALUE\tSOURCE")
	for _, cf := range configs {
		v := "-"
		switch {
		case cf.Sensitive:
			v = "(sensitive)"
		case cf.Value != nil:
			v = *cf.Value
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cf.Key, v, client.ConfigSource(cf.Source))
	}
	return tw.Flush()
}

func replicationFactor(ps kadm.PartitionDetails) int {
	rf := 0
	for _, p := range ps {
		rf = max(rf, len(p.Replicas))
	}
	return rf
}

func joinIDs(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func runTopicDelete(c *cli.Context) error {
	name, err := topicName(c)
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	rs, err := k.Admin().DeleteTopics(ctx, name)
	if err != nil {
		return fmt.Errorf("delete topic %q: %w", name, k.Explain(err))
	}
	r, ok := rs[name]
	if !ok {
		return fmt.Errorf("delete topic %q: the broker's answer did not mention the topic", name)
	}
	switch {
	case errors.Is(r.Err, kerr.UnknownTopicOrPartition):
		if c.Bool("if-exists") {
			return nil
		}
		return fmt.Errorf("topic %q does not exist (use --if-exists to accept that)", name)
	case r.Err != nil:
		return fmt.Errorf("delete topic %q: %w%s", name, r.Err, client.BrokerSays(r.ErrMessage))
	}
	fmt.Fprintf(c.App.Writer, "deleted topic %s\n", name)
	return nil
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
