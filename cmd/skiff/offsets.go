package main

// skiff offsets snapshot|restore: back up consumer groups' committed offsets to a
// checksummed file, and load such a file into a cluster (the same or another),
// through the Kafka API only (ListGroups, OffsetFetch, DescribeGroups,
// OffsetCommit). File format: docs/format/offsets-snapshot.md.

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"time"

	"github.com/urfave/cli/v2"

	"skiff/client"
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
	snap, groups, err := k.SnapshotOffsets(c.Context, filter)
	if err != nil {
		return err
	}
	if err := offsetsnap.WriteFile(out, snap); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "wrote %s of %s to %s\n", countOf(len(snap.Offsets), "offset"), countOf(groups, "group"), out)
	return nil
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
	snap, err := offsetsnap.ReadFile(file)
	var ce *offsetsnap.CorruptError
	if errors.As(err, &ce) {
		return fmt.Errorf("snapshot %s is damaged at byte %d (%s); nothing was restored", filepath.Base(file), ce.Pos, ce.Reason)
	}
	if err != nil {
		return err
	}

	byGroup := client.OffsetsByGroup(snap, filter)
	if len(byGroup) == 0 {
		fmt.Fprintf(c.App.Writer, "the snapshot (taken %s) holds no offsets of the selected groups; nothing to do\n",
			time.UnixMilli(snap.TakenAt).UTC().Format(time.RFC3339))
		return nil
	}

	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	st, err := k.RestoreOffsets(ctx, byGroup, c.Bool("dry-run"), c.App.Writer)
	if err != nil {
		return err
	}
	if c.Bool("dry-run") {
		fmt.Fprintf(c.App.Writer, "dry run: would commit %s of %s (%d changed); nothing committed\n", countOf(st.Offsets, "offset"), countOf(len(byGroup), "group"), st.Changed)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "restored %s of %s (%d changed) from %s\n", countOf(st.Offsets, "offset"), countOf(len(byGroup), "group"), st.Changed, file)
	return nil
}

// countOf is client.CountOf: "1 group", "2 groups".
func countOf(n int, noun string) string { return client.CountOf(n, noun) }
