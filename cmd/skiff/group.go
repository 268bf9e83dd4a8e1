package main

// skiff group list|describe|delete|reset-offsets: consumer group administration
// through the Kafka admin API (kadm), as kafka-consumer-groups.sh does it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
			"committed offset, the log end offset, the lag and the member consuming it.",
		HideHelpCommand: true,
		Flags:           clientFlags(),
		Action:          runGroupDescribe,
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
		Usage:     "set a group's committed offsets of a topic",
		ArgsUsage: "GROUP",
		Description: "Commits new offsets for every partition of --topic in GROUP, which must have\n" +
			"no active members (stop its consumers first). Give exactly one of --to-earliest,\n" +
			"--to-latest, --to-offset N (clamped to each partition's log) or --to-datetime\n" +
			"RFC3339 (the first record at or after that time; the log end if there is none).\n" +
			"Prints each partition's old and new offset; --dry-run commits nothing.",
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
	groups, err := k.Admin().ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list groups: %w", k.Explain(err))
	}
	var described kadm.DescribedGroups
	if c.Bool("state") && len(groups) > 0 {
		// ListGroups reports states only from v4; DescribeGroups always does.
		if described, err = k.Admin().DescribeGroups(ctx, groups.Groups()...); err != nil {
			return fmt.Errorf("describe groups: %w", k.Explain(err))
		}
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if c.Bool("state") {
		fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE\tMEMBERS")
	}
	for _, g := range groups.Sorted() {
		if !c.Bool("state") {
			fmt.Fprintln(tw, g.Group)
			continue
		}
		d := described[g.Group]
		state, pt := d.State, d.ProtocolType
		if d.Err != nil {
			state = "error: " + d.Err.Error()
		}
		if pt == "" {
			pt = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", g.Group, state, pt, len(d.Members))
	}
	tw.Flush()
	_, err = io.WriteString(c.App.Writer, b.String())
	return err
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
	lags, err := k.Admin().Lag(ctx, group)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", group, k.Explain(err))
	}
	l, ok := lags[group]
	if !ok {
		return fmt.Errorf("describe group %q: the broker's answer did not mention the group", group)
	}
	if l.DescribeErr != nil {
		return fmt.Errorf("describe group %q: %w", group, k.Explain(l.DescribeErr))
	}
	if l.FetchErr != nil {
		return fmt.Errorf("fetch the committed offsets of group %q: %w", group, k.Explain(l.FetchErr))
	}
	if l.State == "Dead" && len(l.Lag) == 0 {
		return fmt.Errorf("group %q does not exist (list groups with `skiff group list`)", group)
	}
	return writeGroupDescription(c.App.Writer, l)
}

// writeGroupDescription prints a group for people:
//
//	group:        orders
//	state:        Stable
//	protocol:     consumer (cooperative-sticky)
//	coordinator:  1 (localhost:9092)
//
//	MEMBER          CLIENT-ID  HOST        PARTITIONS
//	kgo-4e1f...     kgo        /10.0.0.7   orders:0,1,2
//
//	TOPIC   PARTITION  COMMITTED  LOG-END  LAG  MEMBER
//	orders  0          120        130      10   kgo-4e1f...
func writeGroupDescription(w io.Writer, l kadm.DescribedGroupLag) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "group:\t%s\n", l.Group)
	fmt.Fprintf(tw, "state:\t%s\n", l.State)
	pt := l.ProtocolType
	if pt == "" {
		pt = "none (offsets only)"
	}
	if l.Protocol != "" {
		pt += " (" + l.Protocol + ")"
	}
	fmt.Fprintf(tw, "protocol:\t%s\n", pt)
	fmt.Fprintf(tw, "coordinator:\t%d (%s)\n", l.Coordinator.NodeID, addrOf(l.Coordinator))
	fmt.Fprintf(tw, "members:\t%d\n", len(l.Members))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(l.Members) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\nMEMBER\tCLIENT-ID\tHOST\tPARTITIONS")
		for _, m := range l.Members {
			id := m.MemberID
			if m.InstanceID != nil {
				id += " (instance " + *m.InstanceID + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", id, m.ClientID, m.ClientHost, memberPartitions(m))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	rows := l.Lag.Sorted()
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "\nno committed offsets and no assigned partitions")
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTOPIC\tPARTITION\tCOMMITTED\tLOG-END\tLAG\tMEMBER")
	for _, r := range rows {
		committed, end, lag, member := "-", "-", "-", "-"
		if r.Commit.At >= 0 {
			committed = strconv.FormatInt(r.Commit.At, 10)
		}
		if r.End.Err == nil {
			end = strconv.FormatInt(r.End.Offset, 10)
		}
		if r.Lag >= 0 {
			lag = strconv.FormatInt(r.Lag, 10)
		}
		if r.Member != nil {
			member = r.Member.MemberID
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Topic, r.Partition, committed, end, lag, member)
	}
	return tw.Flush()
}

func addrOf(b kadm.BrokerDetail) string {
	return b.Host + ":" + strconv.Itoa(int(b.Port))
}

// memberPartitions lists a consumer's assigned partitions as "t:0,1 u:3".
func memberPartitions(m kadm.DescribedGroupMember) string {
	a, ok := m.Assigned.AsConsumer()
	if !ok || len(a.Topics) == 0 {
		return "-"
	}
	var parts []string
	for _, t := range a.Topics {
		ps := append([]int32(nil), t.Partitions...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		ids := make([]string, len(ps))
		for i, p := range ps {
			ids[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, t.Topic+":"+strings.Join(ids, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
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
	rs, err := k.Admin().DeleteGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("delete group %q: %w", group, k.Explain(err))
	}
	r, ok := rs[group]
	if !ok {
		return fmt.Errorf("delete group %q: the broker's answer did not mention the group", group)
	}
	switch {
	case errors.Is(r.Err, kerr.GroupIDNotFound):
		if c.Bool("if-exists") {
			return nil
		}
		return fmt.Errorf("group %q does not exist (use --if-exists to accept that)", group)
	case errors.Is(r.Err, kerr.NonEmptyGroup):
		return fmt.Errorf("group %q has active members: stop its consumers first (`skiff group describe %s` lists them)", group, group)
	case r.Err != nil:
		return fmt.Errorf("delete group %q: %w", group, r.Err)
	}
	fmt.Fprintf(c.App.Writer, "deleted group %s\n", group)
	return nil
}

// checkInactive refuses a group that has members: offsets cannot be committed for
// it from outside (the coordinator answers UNKNOWN_MEMBER_ID), and its consumers
// would overwrite them anyway.
func checkInactive(ctx context.Context, k *client.Client, groups ...string) error {
	ds, err := k.Admin().DescribeGroups(ctx, groups...)
	if err != nil {
		return fmt.Errorf("describe groups: %w", k.Explain(err))
	}
	var active []string
	for _, g := range groups {
		d, ok := ds[g]
		switch {
		case !ok:
			return fmt.Errorf("describe group %q: the broker's answer did not mention the group", g)
		case d.Err != nil:
			return fmt.Errorf("describe group %q: %w", g, k.Explain(d.Err))
		case d.State != "Empty" && d.State != "Dead":
			active = append(active, fmt.Sprintf("%s (%s, %d members)", g, d.State, len(d.Members)))
		}
	}
	if len(active) > 0 {
		return fmt.Errorf("refusing to change the offsets of groups with active members: %s; stop their consumers first, "+
			"since a broker accepts offsets for a group from outside only while it has no members", strings.Join(active, ", "))
	}
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
	var at time.Time
	if c.IsSet("to-datetime") {
		if at, err = time.Parse(time.RFC3339, c.String("to-datetime")); err != nil {
			return fmt.Errorf("invalid --to-datetime %q: want RFC 3339, e.g. 2024-05-01T12:00:00Z", c.String("to-datetime"))
		}
	}
	if c.IsSet("to-offset") && c.Int64("to-offset") < 0 {
		return fmt.Errorf("--to-offset must be at least 0, not %d", c.Int64("to-offset"))
	}
	k, err := clientFromFlags(c)
	if err != nil {
		return err
	}
	defer k.Close()
	partitions, err := k.TopicPartitions(c.Context, topic)
	if err != nil {
		return err
	}
	ctx, cancel := k.RequestCtx(c.Context)
	defer cancel()
	if err := checkInactive(ctx, k, group); err != nil {
		return err
	}
	starts, err := k.Admin().ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("list offsets of topic %q: %w", topic, k.Explain(err))
	}
	ends, err := k.Admin().ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("list offsets of topic %q: %w", topic, k.Explain(err))
	}
	var after kadm.ListedOffsets
	if !at.IsZero() {
		if after, err = k.Admin().ListOffsetsAfterMilli(ctx, at.UnixMilli(), topic); err == nil {
			err = after.Error()
		}
		if err != nil {
			return fmt.Errorf("find offsets of topic %q at %s: %w", topic, at.Format(time.RFC3339), k.Explain(err))
		}
	}
	old, err := k.Admin().FetchOffsetsForTopics(ctx, group, topic)
	if err != nil {
		return fmt.Errorf("fetch the committed offsets of group %q: %w", group, k.Explain(err))
	}
	next := make(kadm.Offsets)
	for _, p := range partitions {
		s, _ := starts.Lookup(topic, p)
		e, _ := ends.Lookup(topic, p)
		var o int64
		switch {
		case c.Bool("to-earliest"):
			o = s.Offset
		case c.Bool("to-latest"):
			o = e.Offset
		case c.IsSet("to-offset"):
			o = max(s.Offset, min(c.Int64("to-offset"), e.Offset))
		default:
			o = e.Offset
			if a, ok := after.Lookup(topic, p); ok && a.Offset >= 0 {
				o = a.Offset
			}
		}
		next.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tOLD\tNEW")
	for _, p := range partitions {
		was := "-"
		if r, ok := old.Lookup(topic, p); ok && r.Err == nil && r.At >= 0 {
			was = strconv.FormatInt(r.At, 10)
		}
		n, _ := next.Lookup(topic, p)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", topic, p, was, n.At)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.Bool("dry-run") {
		fmt.Fprintln(c.App.Writer, "dry run: nothing committed")
		return nil
	}
	rs, err := k.Admin().CommitOffsets(ctx, group, next)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", group, commitError(k.Explain(err)))
	}
	fmt.Fprintf(c.App.Writer, "reset %s of %s for group %s\n", countOf(len(partitions), "partition"), topic, group)
	return nil
}

// commitError words the refusal of an outside commit to a group that gained members.
func commitError(err error) error {
	if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.RebalanceInProgress) {
		return fmt.Errorf("the group has active members now (stop its consumers first): %w", err)
	}
	return err
}
