package main

// skiff offsets snapshot|restore: back up consumer groups' committed offsets to a
// checksummed file, and load such a file into a cluster (the same or another),
// through the Kafka API only (ListGroups, OffsetFetch, DescribeGroups,
// OffsetCommit). File format: docs/format/offsets-snapshot.md.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/urfave/cli/v2"

	"skiff/client"
	"skiff/internal/fileutil"
	"skiff/internal/offsetsnap"
)

func offsetsCommand() *cli.Command {
	return &cli.Command{
		Name:  "offsets",
		Usage: "snapshot and restore consumer groups' committed offsets",
		Subcommands: []*cli.Command{
			offsetsSnapshotCommand(),
			offsetsRestoreCommand(),
		},
	}
}

func offsetsSnapshotCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:  "snapshot",
		Usage: "write every group's committed offsets to a file",
		Description: "Lists the cluster's consumer groups (those matching --group REGEX), fetches\n" +
			"each one's committed offsets (group, topic, partition, offset, leader epoch,\n" +
			"metadata) and writes them to --out FILE in Skiff's checksummed snapshot format,\n" +
			"atomically (a temporary file renamed into place). Each group's offsets are read\n" +
			"in one request, so they are consistent per group. Commit times are not part of\n" +
			"the Kafka API and are recorded as unknown.",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "write the snapshot to `FILE` (required)"},
			&cli.StringFlag{Name: "group", Aliases: []string{"g"}, Usage: "only groups whose name matches `REGEX` (anchored: the whole name)"},
		),
		Action: runOffsetsSnapshot,
	})
}

func offsetsRestoreCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "restore",
		Usage:     "commit the offsets of a snapshot file",
		ArgsUsage: "FILE",
		Description: "Reads FILE and checks it whole (checksums, record count, end): a damaged or\n" +
			"truncated file is refused and nothing is written. Then, for the groups matching\n" +
			"--group REGEX, it refuses the whole restore if a group has active members (a\n" +
			"broker accepts offsets from outside only for a group without members) or a\n" +
			"partition no longer exists, and otherwise commits every offset, printing each\n" +
			"partition's old and new offset. --dry-run prints the same and commits nothing.",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "group", Aliases: []string{"g"}, Usage: "only groups whose name matches `REGEX` (anchored: the whole name)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would change and commit nothing"},
		),
		Action: runOffsetsRestore,
	})
}

// groupFilter compiles --group into a whole-name match; nil matches every group.
func groupFilter(c *cli.Context) (*regexp.Regexp, error) {
	if !c.IsSet("group") {
		return nil, nil
	}
	re, err := regexp.Compile("^(?:" + c.String("group") + ")$")
	if err != nil {
		return nil, fmt.Errorf("invalid --group %q: %v", c.String("group"), err)
	}
	return re, nil
}

func runOffsetsSnapshot(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": offsets snapshot takes no arguments (name the file with --out)"); err != nil {
		return err
	}
	out := c.String("out")
	if out == "" {
		return errors.New("missing --out FILE: name the snapshot file to write")
	}
	filter, err := groupFilter(c)
	if err != nil {
		return err
	}
	k, err := clientFromFlags(c)
	if err != nil {
		return err
	}
	defer k.Close()
	snap, groups, err := snapshot(c.Context, k, filter)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := offsetsnap.Write(&buf, snap); err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	if err := fileutil.WriteFileAtomic(out, buf.Bytes(), 0o640); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Fprintf(c.App.Writer, "wrote %s of %s to %s\n", countOf(len(snap.Offsets), "offset"), countOf(groups, "group"), out)
	return nil
}

// snapshot fetches the committed offsets of every group matching filter.
func snapshot(ctx context.Context, k *client.Client, filter *regexp.Regexp) (*offsetsnap.Snapshot, int, error) {
	rctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	listed, err := k.Admin().ListGroups(rctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list groups: %w", k.Explain(err))
	}
	snap := &offsetsnap.Snapshot{TakenAt: time.Now().UnixMilli()}
	groups := 0
	for _, g := range listed.Sorted() {
		if filter != nil && !filter.MatchString(g.Group) {
			continue
		}
		rctx, cancel := k.RequestCtx(ctx)
		rs, err := k.Admin().FetchOffsets(rctx, g.Group)
		cancel()
		if err != nil {
			return nil, 0, fmt.Errorf("fetch the committed offsets of group %q: %w", g.Group, k.Explain(err))
		}
		if err := rs.Error(); err != nil {
			return nil, 0, fmt.Errorf("fetch the committed offsets of group %q: %w", g.Group, err)
		}
		n := 0
		for _, r := range rs.Sorted() {
			if r.At < 0 {
				continue
			}
			snap.Offsets = append(snap.Offsets, offsetsnap.Offset{
				Group: g.Group, Topic: r.Topic, Partition: r.Partition,
				Offset: r.At, LeaderEpoch: r.LeaderEpoch, CommitTime: -1, Metadata: r.Metadata,
			})
			n++
		}
		if n > 0 {
			groups++
		}
	}
	return snap, groups, nil
}

func runOffsetsRestore(c *cli.Context) error {
	if c.Args().Len() != 1 {
		return errors.New("usage: skiff offsets restore FILE [--group REGEX] [--dry-run]")
	}
	file := c.Args().First()
	filter, err := groupFilter(c)
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("open snapshot: %w", err)
	}
	snap, err := offsetsnap.Read(f)
	f.Close()
	var ce *offsetsnap.CorruptError
	if errors.As(err, &ce) {
		return fmt.Errorf("snapshot %s is damaged at byte %d (%s); nothing was restored", filepath.Base(file), ce.Pos, ce.Reason)
	}
	if err != nil {
		return fmt.Errorf("read snapshot %s: %w", file, err)
	}

	// Group the offsets, keeping the selected groups only.
	byGroup := make(map[string]kadm.Offsets)
	for _, o := range snap.Offsets {
		if filter != nil && !filter.MatchString(o.Group) {
			continue
		}
		offs := byGroup[o.Group]
		offs.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata})
		byGroup[o.Group] = offs
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	if len(groups) == 0 {
		fmt.Fprintf(c.App.Writer, "the snapshot (taken %s) holds no offsets of the selected groups; nothing to do\n",
			time.UnixMilli(snap.TakenAt).UTC().Format(time.RFC3339))
		return nil
	}

	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	if err := checkInactive(ctx, k, groups...); err != nil {
		return err
	}
	if err := checkPartitions(ctx, k, byGroup); err != nil {
		return err
	}

	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tOLD\tNEW")
	changed := 0
	for _, g := range groups {
		old, err := k.Admin().FetchOffsets(ctx, g)
		if err != nil {
			return fmt.Errorf("fetch the committed offsets of group %q: %w", g, k.Explain(err))
		}
		for _, o := range byGroup[g].Sorted() {
			was := "-"
			if r, ok := old.Lookup(o.Topic, o.Partition); ok && r.Err == nil && r.At >= 0 {
				was = strconv.FormatInt(r.At, 10)
			}
			if was != strconv.FormatInt(o.At, 10) {
				changed++
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", g, o.Topic, o.Partition, was, o.At)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	total := 0
	for _, g := range groups {
		total += len(byGroup[g].Sorted())
	}
	if c.Bool("dry-run") {
		fmt.Fprintf(c.App.Writer, "dry run: would commit %s of %s (%d changed); nothing committed\n", countOf(total, "offset"), countOf(len(groups), "group"), changed)
		return nil
	}
	for _, g := range groups {
		rs, err := k.Admin().CommitOffsets(ctx, g, byGroup[g])
		if err == nil {
			err = rs.Error()
		}
		if err != nil {
			return fmt.Errorf("commit offsets of group %q: %w", g, commitError(k.Explain(err)))
		}
	}
	fmt.Fprintf(c.App.Writer, "restored %s of %s (%d changed) from %s\n", countOf(total, "offset"), countOf(len(groups), "group"), changed, file)
	return nil
}

// checkPartitions refuses a restore naming partitions that do not exist.
func checkPartitions(ctx context.Context, k *client.Client, byGroup map[string]kadm.Offsets) error {
	topics := make(map[string]bool)
	for _, offs := range byGroup {
		for t := range offs {
			topics[t] = true
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	tds, err := k.Admin().ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("look up topics: %w", k.Explain(err))
	}
	var missing []string
	for g, offs := range byGroup {
		for _, o := range offs.Sorted() {
			td, ok := tds[o.Topic]
			if !ok || td.Err != nil {
				missing = append(missing, fmt.Sprintf("%s/%s (topic missing)", g, o.Topic))
				continue
			}
			if _, ok := td.Partitions[o.Partition]; !ok {
				missing = append(missing, fmt.Sprintf("%s/%s/%d (partition missing)", g, o.Topic, o.Partition))
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		missing = compactStrings(missing)
		return fmt.Errorf("refusing to restore: the cluster lacks %s; create the topics first or narrow the restore with --group", strings.Join(missing, ", "))
	}
	return nil
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// countOf is "1 group", "2 groups".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
